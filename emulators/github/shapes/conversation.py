"""The conversation as GitHub shows it: issues (a PR's too), comments, labels and reviews."""
from urllib.parse import quote

from .. import ids


def reactions(url):
    """The empty reactions summary GitHub attaches to issues and comments."""
    return {"url": f"{url}/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
            "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0}


def label(repo_url, record):
    """A label (`label`)."""
    return {"id": record["id"], "node_id": record["node_id"],
            "url": f"{repo_url}/labels/{quote(record['name'], safe='')}",
            "name": record["name"], "color": record["color"], "default": False,
            "description": record["description"],
            # newer descriptions than the schemas' (githubkit's) require these two
            "archived_at": None, "archived_by": None}


def issue(repo_json, record, *, user, labels, assignees, closed_by, association):
    """An issue, or a PR as the issues API shows it (`issue`, with `pull_request`); the
    accounts and labels are shaped already."""
    repo_url, number = repo_json["url"], record["number"]
    url = f"{repo_url}/issues/{number}"
    is_pull = "pull" in record or "head_ref" in record
    html = f"{repo_json['html_url']}/{'pull' if is_pull else 'issues'}/{number}"
    shape = {
        "id": record.get("issue_id", record["id"]) if is_pull else record["id"],
        "node_id": record["node_id"] if not is_pull else ids.node_id(
            "github-issues", "I_", record.get("issue_id", record["id"])),
        "url": url, "repository_url": repo_url,
        "labels_url": f"{url}/labels{{/name}}", "comments_url": f"{url}/comments",
        "events_url": f"{url}/events", "html_url": html, "number": number,
        "state": record["state"], "state_reason": record.get("state_reason"),
        "title": record["title"], "body": record["body"], "user": user, "labels": labels,
        "assignee": assignees[0] if assignees else None, "assignees": assignees,
        "milestone": None, "locked": False, "active_lock_reason": None,
        "comments": record.get("comments", 0), "closed_at": record["closed_at"],
        "created_at": record["created_at"], "updated_at": record["updated_at"],
        "closed_by": closed_by, "author_association": association,
        "reactions": reactions(url), "timeline_url": f"{url}/timeline",
        "performed_via_github_app": None,
    }
    if is_pull:
        pull_url = f"{repo_url}/pulls/{number}"
        shape["draft"] = record.get("draft", False)
        shape["pull_request"] = {"url": pull_url, "html_url": html,
                                 "diff_url": f"{html}.diff", "patch_url": f"{html}.patch",
                                 "merged_at": record.get("merged_at")}
    return shape


def comment(repo_url, html_url, record, *, user, association, on_issue):
    """An issue comment (`issue-comment`); `on_issue` tells an issue's from a PR's."""
    url = f"{repo_url}/issues/comments/{record['id']}"
    kind = "issues" if on_issue else "pull"
    return {"id": record["id"], "node_id": record["node_id"], "url": url,
            "html_url": f"{html_url}/{kind}/{record['number']}#issuecomment-{record['id']}",
            "body": record["body"], "user": user,
            "created_at": record["created_at"], "updated_at": record["updated_at"],
            "issue_url": f"{repo_url}/issues/{record['number']}",
            "author_association": association,
            "performed_via_github_app": None, "reactions": reactions(url)}


def review(repo_url, html_url, record, *, user, association):
    """A pull request review (`pull-request-review`); `submitted_at` once submitted."""
    pull_url = f"{repo_url}/pulls/{record['number']}"
    html = f"{html_url}/pull/{record['number']}#pullrequestreview-{record['id']}"
    shape = {"id": record["id"], "node_id": record["node_id"], "user": user,
             "body": record["body"], "state": record["state"], "html_url": html,
             "pull_request_url": pull_url, "author_association": association,
             "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
             "commit_id": record["commit_id"]}
    if record["submitted_at"]:
        shape["submitted_at"] = record["submitted_at"]
    return shape
