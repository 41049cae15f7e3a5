"""CI results as GitHub shows them: commit statuses, check runs and suites, and the one GitHub
App the emulator credits with every check run."""
from .. import ids
from .accounts import web

APP_ID, APP_SLUG = 1, "mockingbird-ci"


def status(repo_url, record, author, *, creator=True):
    """A commit status (`status`); `author` is its creator's account, shown as `creator`
    unless not `creator` (the combined status leaves it out)."""
    shape = {"url": f"{repo_url}/statuses/{record['sha']}", "avatar_url": author["avatar_url"],
             "id": record["id"], "node_id": record["node_id"], "state": record["state"],
             "description": record["description"], "target_url": record["target_url"],
             "context": record["context"], "created_at": record["created_at"],
             "updated_at": record["updated_at"]}
    if creator:
        shape["creator"] = author
    return shape


def app(base_url, owner):
    """The one GitHub App every check run belongs to (`integration`), owned by `owner`."""
    return {"id": APP_ID, "slug": APP_SLUG, "node_id": ids.node_id("github", "A_", APP_ID),
            "client_id": "Iv1.mockingbird", "owner": owner, "name": "Mockingbird CI",
            "description": "The GitHub App the emulator credits with every check run",
            "external_url": f"{web(base_url)}/apps/{APP_SLUG}",
            "html_url": f"{web(base_url)}/apps/{APP_SLUG}",
            "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-01T00:00:00Z",
            "permissions": {"checks": "write", "statuses": "write", "metadata": "read",
                            "contents": "read", "pull_requests": "write"},
            "events": ["check_run", "check_suite", "pull_request", "push"]}


def check_run(repo_url, html_url, run, *, app, pulls):
    """A check run (`check-run`); `pulls` are the open PRs at its head (`pull-request-minimal`)."""
    html = f"{html_url}/runs/{run['id']}"
    return {"id": run["id"], "head_sha": run["head_sha"], "node_id": run["node_id"],
            "external_id": run["external_id"], "url": f"{repo_url}/check-runs/{run['id']}",
            "html_url": html, "details_url": run["details_url"] or html,
            "status": run["status"], "conclusion": run["conclusion"],
            "started_at": run["started_at"], "completed_at": run["completed_at"],
            "output": {**run["output"], "annotations_count": 0,
                       "annotations_url": f"{repo_url}/check-runs/{run['id']}/annotations"},
            "name": run["name"], "check_suite": {"id": run["suite"]}, "app": app,
            "pull_requests": pulls}


def check_suite(repo_url, suite, *, app, pulls, runs, commit, repository=None):
    """A check suite (`check-suite`): `runs` its latest run of each name, `commit` its head
    commit's `commit` part; `repository` is left out of a webhook's suite (None)."""
    head_commit = {"id": suite["head_sha"], "tree_id": commit["tree"]["sha"],
                   "message": commit["message"], "timestamp": commit["committer"]["date"],
                   "author": {"name": commit["author"]["name"],
                              "email": commit["author"]["email"]},
                   "committer": {"name": commit["committer"]["name"],
                                 "email": commit["committer"]["email"]}}
    shape = {"id": suite["id"], "node_id": suite["node_id"],
             "head_branch": suite["head_branch"], "head_sha": suite["head_sha"],
             "status": suite["status"], "conclusion": suite["conclusion"],
             "url": f"{repo_url}/check-suites/{suite['id']}", "before": None,
             "after": suite["head_sha"], "pull_requests": pulls, "app": app,
             "created_at": suite["created_at"], "updated_at": suite["updated_at"],
             "rerequestable": True, "runs_rerequestable": True,
             "latest_check_runs_count": len(runs),
             "check_runs_url": f"{repo_url}/check-suites/{suite['id']}/check-runs",
             "head_commit": head_commit}
    if repository is not None:
        shape["repository"] = repository
    return shape
