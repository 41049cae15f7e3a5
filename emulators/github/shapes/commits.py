"""Git objects as the REST API shows them: commits, diffs, contents, blobs and trees."""
import base64
from urllib.parse import quote

from .accounts import segment


UNSIGNED = {"verified": False, "reason": "unsigned", "signature": None, "payload": None,
            "verified_at": None}


def _path_url(path):
    return "/".join(segment(part) for part in path.split("/"))


def git_commit(repo_url, html_url, sha, info):
    """Shape a git commit (`git-commit`); `info` is `commits.info(...)`."""
    return {
        "sha": sha, "node_id": info["node_id"], "url": f"{repo_url}/git/commits/{sha}",
        "html_url": f"{html_url}/commit/{sha}", "author": info["author"],
        "committer": info["committer"],
        "tree": {"sha": info["tree"], "url": f"{repo_url}/git/trees/{info['tree']}"},
        "message": info["message"],
        "parents": [{"sha": p, "url": f"{repo_url}/git/commits/{p}",
                     "html_url": f"{html_url}/commit/{p}"} for p in info["parents"]],
        "verification": dict(UNSIGNED),
    }


def commit(repo_url, html_url, sha, info, *, author, committer, files=None):
    """Shape a commit (`commit`); `author`/`committer` are accounts or None; `files` (diff
    entries) adds `files` and `stats`, as `repos/get-commit` does."""
    shape = {
        "url": f"{repo_url}/commits/{sha}", "sha": sha, "node_id": info["node_id"],
        "html_url": f"{html_url}/commit/{sha}",
        "comments_url": f"{repo_url}/commits/{sha}/comments",
        "commit": {"url": f"{repo_url}/git/commits/{sha}", "author": info["author"],
                   "committer": info["committer"], "message": info["message"],
                   "tree": {"sha": info["tree"], "url": f"{repo_url}/git/trees/{info['tree']}"},
                   "comment_count": 0, "verification": dict(UNSIGNED)},
        "author": author, "committer": committer,
        "parents": [{"sha": p, "url": f"{repo_url}/commits/{p}",
                     "html_url": f"{html_url}/commit/{p}"} for p in info["parents"]],
    }
    if files is not None:
        additions = sum(f["additions"] for f in files)
        deletions = sum(f["deletions"] for f in files)
        shape["stats"] = {"total": additions + deletions, "additions": additions,
                          "deletions": deletions}
        shape["files"] = files
    return shape


def diff_entry(repo_url, html_url, ref, change):
    """Shape a changed file (`diff-entry`); `change` from `commits.changed_files`."""
    path, sha = _path_url(change["filename"]), change["sha"]
    entry = {"sha": sha, "filename": change["filename"], "status": change["status"],
             "additions": change["additions"], "deletions": change["deletions"],
             "changes": change["additions"] + change["deletions"],
             "blob_url": f"{html_url}/blob/{ref}/{path}",
             "raw_url": f"{html_url}/raw/{ref}/{path}",
             "contents_url": f"{repo_url}/contents/{path}?ref={ref}"}
    if change.get("patch") is not None:
        entry["patch"] = change["patch"]
    return entry


def content_item(repo_url, html_url, ref, entry, size, *, with_content=None):
    """Shape a contents entry (`content-file`, or a `content-directory` item): `entry` is
    `{path, mode, type, sha}`; `with_content` (bytes) adds `content` and `encoding`."""
    path = entry["path"]
    kind = {"tree": "dir", "commit": "submodule"}.get(entry["type"], "file")
    if entry["mode"] == "120000":
        kind = "symlink"
    url = f"{repo_url}/contents/{_path_url(path)}?ref={quote(ref, safe='')}"
    git_url = (f"{repo_url}/git/trees/{entry['sha']}" if kind == "dir"
               else f"{repo_url}/git/blobs/{entry['sha']}")
    view = "tree" if kind == "dir" else "blob"
    html = f"{html_url}/{view}/{ref}/{_path_url(path)}"
    shape = {"type": kind, "size": size, "name": path.rsplit("/", 1)[-1], "path": path,
             "sha": entry["sha"], "url": url, "git_url": git_url, "html_url": html,
             "download_url": (f"{html_url}/raw/{ref}/{_path_url(path)}"
                              if kind in ("file", "symlink") else None),
             "_links": {"self": url, "git": git_url, "html": html}}
    if with_content is not None:
        shape["encoding"] = "base64"
        shape["content"] = base64_lines(with_content)
    return shape


def base64_lines(data):
    """Encode bytes as GitHub does in contents and blobs: base64, a newline every 60 chars."""
    text = base64.b64encode(data).decode()
    return "".join(text[i:i + 60] + "\n" for i in range(0, len(text), 60))


def blob(repo_url, sha, data, node_id):
    """Shape a blob (`blob`)."""
    return {"sha": sha, "node_id": node_id, "size": len(data),
            "url": f"{repo_url}/git/blobs/{sha}", "content": base64_lines(data),
            "encoding": "base64"}


def tree(repo_url, sha, entries, sizes):
    """Shape a tree (`git-tree`); `sizes` maps blob shas to their sizes."""
    items = []
    for e in entries:
        item = {"path": e["path"], "mode": e["mode"], "type": e["type"], "sha": e["sha"]}
        if e["type"] == "blob":
            item["size"] = sizes.get(e["sha"], 0)
            item["url"] = f"{repo_url}/git/blobs/{e['sha']}"
        elif e["type"] == "tree":
            item["url"] = f"{repo_url}/git/trees/{e['sha']}"
        items.append(item)
    return {"sha": sha, "url": f"{repo_url}/git/trees/{sha}", "tree": items, "truncated": False}


def synthetic_commit(repo_url, html_url, sha, parents, person):
    """A commit of a repository seeded with SHAs only (`commit`): a synthetic message, `person`
    (`{name, email, date}`) its author and committer."""
    return {"sha": sha, "node_id": f"C_{sha[:20]}", "url": f"{repo_url}/commits/{sha}",
            "html_url": f"{html_url}/commit/{sha}",
            "comments_url": f"{repo_url}/commits/{sha}/comments",
            "commit": {"author": person, "committer": person,
                       "message": f"Synthetic commit {sha[:7]}",
                       "tree": {"sha": sha, "url": f"{repo_url}/git/trees/{sha}"},
                       "url": f"{repo_url}/git/commits/{sha}", "comment_count": 0},
            "author": None, "committer": None,
            "parents": [{"sha": p, "url": f"{repo_url}/commits/{p}",
                         "html_url": f"{html_url}/commit/{p}"} for p in parents]}
