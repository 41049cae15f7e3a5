"""Branches and their protection as GitHub shows them."""
from urllib.parse import quote

# what protection stores and shows, beyond required checks and reviews and `enforce_admins`
FLAGS = ("required_linear_history", "allow_force_pushes", "allow_deletions", "block_creations",
         "required_conversation_resolution", "lock_branch")


def branch_view(repo_url, html_url, name, commit, record):
    """A branch (`branch-with-protection`): its tip `commit` shaped, `record` its protection
    or None."""
    url = f"{repo_url}/branches/{quote(name, safe='')}"
    checks = record.get("checks") if record else None
    protection = {"enabled": record is not None,
                  "required_status_checks": {
                      "enforcement_level": "everyone" if checks else "off",
                      "contexts": checks["contexts"] if checks else [], "checks": []}}
    return {"name": name, "commit": commit,
            "_links": {"self": url, "html": f"{html_url}/tree/{quote(name, safe='/')}"},
            "protected": record is not None, "protection": protection,
            "protection_url": f"{url}/protection"}


def protection(repo_url, name, record, *, written=False):
    """A branch's protection (`branch-protection`), as a read shows it; `written` as an update
    answers it (`protected-branch`)."""
    url = f"{repo_url}/branches/{quote(name, safe='')}/protection"
    shape = {"url": url}
    if "checks" in record:
        checks = record["checks"]
        shape["required_status_checks"] = {
            "url": f"{url}/required_status_checks", "strict": checks["strict"],
            "contexts": checks["contexts"],
            "checks": [{"context": c, "app_id": None} for c in checks["contexts"]],
            "contexts_url": f"{url}/required_status_checks/contexts"}
    if "reviews" in record:
        reviews = record["reviews"]
        shape["required_pull_request_reviews"] = {
            "url": f"{url}/required_pull_request_reviews",
            "dismiss_stale_reviews": reviews["dismiss_stale"],
            "require_code_owner_reviews": reviews["code_owners"],
            "required_approving_review_count": reviews["count"],
            "require_last_push_approval": reviews["last_push"]}
    shape["required_signatures"] = {"url": f"{url}/required_signatures", "enabled": False}
    shape["enforce_admins"] = {"url": f"{url}/enforce_admins",
                               "enabled": record["enforce_admins"]}
    for flag in FLAGS:
        shape[flag] = {"enabled": record[flag]}
    shape["allow_fork_syncing"] = {"enabled": False}
    if not written:
        shape = {"url": url, "enabled": True, "name": name, "protection_url": url,
                 **{k: v for k, v in shape.items() if k != "url"}}
    return shape
