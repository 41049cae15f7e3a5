"""GitHub webhook payloads: ping, create, push, pull_request (opened, edited, closed, reopened,
synchronize), a GitHub App's installation events, built from the emulator's shapes.

In a repository of git objects a push's commits are the real ones (message, author, files
added, removed and modified); in a synthetic one (commit ids and parents only) they are
synthetic but coherent: each names its sha, a synthetic message and the acting user, in
parent-to-child order.
"""
from . import shapes, times
from .shapes import apps as app_shapes

ZERO_SHA = "0" * 40
MAX_PUSH_COMMITS = 20  # GitHub lists at most 20 commits in a push payload


def ping(base_url, endpoint, *, now):
    """The `ping` sent to a newly registered endpoint (a namespace-wide hook)."""
    config = {"content_type": "json", "insecure_ssl": "0", "url": endpoint["url"]}
    if endpoint.get("secret") is not None:
        config["secret"] = "********"
    return {
        "zen": "Keep it logically awesome.",
        "hook_id": endpoint["id"],
        "hook": {"type": "Organization", "id": endpoint["id"], "name": "web", "active": True,
                 "events": endpoint["events"], "config": config, "created_at": now,
                 "updated_at": now, "ping_url": f"{base_url}/hooks/{endpoint['id']}/pings",
                 "deliveries_url": f"{base_url}/hooks/{endpoint['id']}/deliveries",
                 "last_response": {"code": None, "status": "unused", "message": None}},
    }


def delivery_headers(event, payload):
    """The headers naming a delivery's target, as GitHub sends for a repository webhook: the
    repository the event happened in. A `ping` names none: the emulator's endpoints are
    namespace-wide, not one repository's (`hook.type` says `Organization`), and the namespace
    has no organization id of its own to name."""
    repository = payload.get("repository") if isinstance(payload, dict) else None
    if not isinstance(repository, dict) or "id" not in repository:
        return {}
    return {"X-GitHub-Hook-Installation-Target-Type": "repository",
            "X-GitHub-Hook-Installation-Target-ID": str(repository["id"])}


def _commit(repo_json, sha, sender, timestamp):
    person = {"name": sender["login"], "email": f"{sender['login']}@users.noreply.example",
              "username": sender["login"]}
    return {"id": sha, "tree_id": sha, "distinct": True,
            "message": f"Synthetic commit {sha[:7]}", "timestamp": timestamp,
            "url": f"{repo_json['html_url']}/commit/{sha}", "author": person,
            "committer": person, "added": [], "removed": [], "modified": []}


def create(repo_json, ref_name, sender):
    """`create`: a branch or tag came into being."""
    kind, short = _kind(ref_name)
    return {"ref": short, "ref_type": kind, "master_branch": repo_json["default_branch"],
            "description": repo_json["description"], "pusher_type": "user",
            "repository": repo_json, "sender": sender}


def _kind(ref_name):
    if ref_name.startswith("refs/tags/"):
        return "tag", ref_name[len("refs/tags/"):]
    return "branch", ref_name[len("refs/heads/"):]


def delete(repo_json, ref_name, sender):
    """`delete`: a branch or tag was deleted."""
    kind, short = _kind(ref_name)
    return {"ref": short, "ref_type": kind, "pusher_type": "user", "repository": repo_json,
            "sender": sender}


def git_commit(repo_json, sha, info):
    """A push payload's commit from a real commit: `info` is `{message, timestamp, author,
    committer ({name, email}), tree_id, added, removed, modified}`."""
    def person(who):
        return {"name": who["name"], "email": who["email"], "username": who["name"]}
    return {"id": sha, "tree_id": info["tree_id"], "distinct": True,
            "message": info["message"], "timestamp": info["timestamp"],
            "url": f"{repo_json['html_url']}/commit/{sha}", "author": person(info["author"]),
            "committer": person(info["committer"]), "added": info["added"],
            "removed": info["removed"], "modified": info["modified"]}


def push(repo_json, ref_name, before, after, new_commits, sender, *, forced, timestamp,
         describe=None):
    """`push`: a ref was created (`before` is zeros), moved, or deleted (`after` is zeros);
    `new_commits` oldest first. `describe(sha)` gives a real commit's details (a repository
    of git objects), else the commits are synthetic."""
    def commit(sha):
        info = describe(sha) if describe else None
        if info is None:
            return _commit(repo_json, sha, sender, timestamp)
        return git_commit(repo_json, sha, info)
    # the push payload's repository differs: epoch-second times, the organization by login
    repository = {**repo_json, "created_at": times.epoch_s(repo_json["created_at"]),
                  "pushed_at": times.epoch_s(repo_json["pushed_at"]),
                  "stargazers": repo_json["stargazers_count"],
                  "master_branch": repo_json["default_branch"]}
    if "organization" in repo_json:
        repository["organization"] = repo_json["organization"]["login"]
    commits = [commit(sha) for sha in new_commits[-MAX_PUSH_COMMITS:]]
    return {
        "ref": ref_name, "before": before, "after": after,
        "created": before == ZERO_SHA, "deleted": after == ZERO_SHA, "forced": forced,
        "base_ref": None,
        "compare": (f"{repo_json['html_url']}/compare/{before[:12]}...{after[:12]}"
                    if before != ZERO_SHA else f"{repo_json['html_url']}/commit/{after[:12]}"),
        "commits": commits,
        "head_commit": None if after == ZERO_SHA else commit(after),
        "repository": repository,
        "pusher": {"name": sender["login"],
                   "email": f"{sender['login']}@users.noreply.example"},
        "sender": sender,
    }


def pull_request(action, pull_json, sender, **extra):
    """`pull_request` with `action`; `extra` carries `changes` (edited) or before/after."""
    repository = pull_json["base"]["repo"]
    # some of GitHub's webhook schemas type a branch repository's `organization` as a login
    # string: the optional field is left out of `head.repo` and `base.repo`
    pull = {**pull_json, **{side: {**pull_json[side],
                                   "repo": _without_org(pull_json[side]["repo"])}
                            for side in ("head", "base")}}
    return {"action": action, "number": pull_json["number"], **extra,
            "pull_request": pull, "repository": repository, "sender": sender}


def _without_org(repo_json):
    return {k: v for k, v in repo_json.items() if k != "organization"}


def sender(base_url, record):
    """The account the event is attributed to (the emulator's acting user)."""
    return shapes.user(base_url, record)


def installed(installation_json, repositories, by):
    """`installation` `created`: the App was installed (with the repositories it reaches)."""
    return {"action": "created", "installation": installation_json,
            "repositories": [app_shapes.repository_lite(repo) for repo in repositories],
            "requester": None, "sender": by}


def repositories_added(installation_json, repositories, by):
    """`installation_repositories` `added`: an installation reaches more repositories."""
    return {"action": "added", "installation": installation_json,
            "repository_selection": installation_json["repository_selection"],
            "repositories_added": [app_shapes.repository_lite(repo) for repo in repositories],
            "repositories_removed": [], "requester": None, "sender": by}
