"""Repositories, references and pull requests as GitHub shows them."""
from urllib.parse import urlsplit

from .accounts import segment, user, web


# The repository's hypermedia templates, as GitHub spells them (relative to the repository URL).
_REPO_TEMPLATES = {
    "archive_url": "/{archive_format}{/ref}",
    "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}",
    "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}",
    "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}",
    "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}",
    "contributors_url": "/contributors",
    "deployments_url": "/deployments",
    "downloads_url": "/downloads",
    "events_url": "/events",
    "forks_url": "/forks",
    "git_commits_url": "/git/commits{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "hooks_url": "/hooks",
    "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}",
    "issues_url": "/issues{/number}",
    "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}",
    "languages_url": "/languages",
    "merges_url": "/merges",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}",
    "releases_url": "/releases{/id}",
    "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "tags_url": "/tags",
    "teams_url": "/teams",
    "trees_url": "/git/trees{/sha}",
}


def repository(base_url, repo, owner, *, open_issues, created_at, pushed_at):
    """Shape a repository (`full-repository`); `open_issues` counts its open issues and pull
    requests, as GitHub does."""
    owner_json = user(base_url, owner)
    full_name = f"{owner['login']}/{repo['name']}"
    url = f"{base_url}/repos/{owner['login']}/{repo['name']}"
    html_url = f"{web(base_url)}/{owner['login']}/{repo['name']}"
    host = urlsplit(base_url).netloc
    shape = {
        # the reference emulator's keys first, in its order
        "id": repo["id"],
        "node_id": repo["node_id"],
        "name": repo["name"],
        "full_name": full_name,
        "owner": owner_json,
        "private": repo["private"],
        "fork": False,
        "default_branch": repo["default_branch"],
        "url": url,
        "html_url": html_url,
        "created_at": created_at,
        "updated_at": pushed_at,
        "description": None,
        **{name: url + tail for name, tail in _REPO_TEMPLATES.items()},
        "git_url": f"git://{host}/{full_name}.git",
        "ssh_url": f"git@{host}:{full_name}.git",
        "clone_url": f"{html_url}.git",
        "svn_url": html_url,
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "size": 0,
        "open_issues_count": open_issues,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": True,
        "has_wiki": True,
        "has_pages": False,
        "has_downloads": True,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if repo["private"] else "public",
        "pushed_at": pushed_at,
        # the caller is treated as the repository's administrator (no authorization modelled)
        "permissions": {"admin": True, "maintain": True, "push": True, "triage": True,
                        "pull": True},
        "allow_rebase_merge": True,
        "allow_squash_merge": True,
        "allow_merge_commit": True,
        "allow_auto_merge": False,
        "delete_branch_on_merge": False,
        "allow_update_branch": False,
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "subscribers_count": 0,
        "network_count": 0,
        "license": None,
        "forks": 0,
        "open_issues": open_issues,
        "watchers": 0,
    }
    if owner_json["type"] == "Organization":
        shape["organization"] = owner_json
    return shape


def reference(repo_url, record):
    """Shape a Git reference (`git-ref`)."""
    tail = "/".join(segment(part) for part in record["ref"][len("refs/"):].split("/"))
    return {
        "ref": record["ref"],
        "node_id": record["node_id"],
        "url": f"{repo_url}/git/refs/{tail}",
        "object": {"type": record.get("object_type", "commit"), "sha": record["sha"],
                   "url": f"{repo_url}/git/{record.get('object_type', 'commit')}s/"
                          f"{record['sha']}"},
    }


def branch(repo_json, name, sha):
    """Shape a PR's `head` or `base` (same-repository branches only)."""
    return {"label": f"{repo_json['owner']['login']}:{name}", "ref": name, "sha": sha,
            "user": repo_json["owner"], "repo": repo_json}


def pull(repo_json, record, author, *, head_sha, base_sha):
    """Shape a pull request as `pulls/list` shows it (`pull-request-simple`)."""
    repo_url = repo_json["url"]
    number = record["number"]
    url = f"{repo_url}/pulls/{number}"
    html_url = f"{repo_json['html_url']}/pull/{number}"
    issue_url = f"{repo_url}/issues/{number}"
    links = {
        "self": url, "html": html_url, "issue": issue_url, "comments": f"{issue_url}/comments",
        "review_comments": f"{url}/comments",
        "review_comment": f"{repo_url}/pulls/comments{{/number}}",
        "commits": f"{url}/commits", "statuses": f"{repo_url}/statuses/{head_sha}"}
    return {
        # the reference emulator's keys first, in its order
        "id": record["id"],
        "node_id": record["node_id"],
        "number": number,
        "url": url,
        "html_url": html_url,
        "state": record["state"],
        "title": record["title"],
        "body": record["body"],
        "draft": record["draft"],
        "created_at": record["created_at"],
        "updated_at": record["updated_at"],
        "closed_at": record["closed_at"],
        "merged": False,
        "merged_at": None,
        "mergeable": None,
        "merge_commit_sha": None,
        "maintainer_can_modify": record["maintainer_can_modify"],
        "head": branch(repo_json, record["head_ref"], head_sha),
        "base": branch(repo_json, record["base_ref"], base_sha),
        "diff_url": f"{html_url}.diff",
        "patch_url": f"{html_url}.patch",
        "issue_url": issue_url,
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": links["comments"],
        "statuses_url": links["statuses"],
        "locked": False,
        "user": author,
        "labels": [],
        "milestone": None,
        "active_lock_reason": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "_links": {name: {"href": href} for name, href in links.items()},
        # the author is the acting user, a member of the owning organization
        "author_association": "MEMBER",
        "auto_merge": None,
    }


def pull_counts(record, *, commits, computed, files):
    """Return what `pulls/get` and the writes add to a pull request (`pull-request`); `files`
    are the changed files (`commits.changed_files`) its line counts come from.

    GitHub computes mergeability in the background: a PR just created answers `null`/`unknown`;
    otherwise an open PR is `clean` here, and the backend refines it from trees and protection.
    """
    mergeable = True if computed and record["state"] == "open" else None
    return {
        "mergeable": mergeable,
        "rebaseable": mergeable,
        "mergeable_state": "clean" if mergeable else "unknown",
        "merged_by": None,
        "comments": 0,
        "review_comments": 0,
        "commits": commits,
        "additions": sum(f["additions"] for f in files),
        "deletions": sum(f["deletions"] for f in files),
        "changed_files": len(files),
    }
