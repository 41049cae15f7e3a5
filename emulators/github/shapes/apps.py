"""GitHub's JSON of an App (`integration`), an installation and an installation token, whole
(the tests hold them to GitHub's schemas). Pure functions over plain dicts."""
from .. import times
from .accounts import web


def app(base_url, record, owner_json, installations_count):
    """An App as `GET /app` shows it (its slug, ids, owner, permissions and events)."""
    html = f"{web(base_url)}/apps/{record['slug']}"
    return {"id": record["id"], "slug": record["slug"], "node_id": record["node_id"],
            "client_id": record["client_id"], "owner": owner_json, "name": record["name"],
            "description": record.get("description"),
            "external_url": record.get("url") or html, "html_url": html,
            "created_at": times.timestamp(record["created_ms"]),
            "updated_at": times.timestamp(record["created_ms"]),
            "permissions": dict(record["permissions"]), "events": list(record["events"]),
            "installations_count": installations_count}


def installation(base_url, record, app_record, account_json):
    """An installation as `GET /app/installations/{id}` shows it."""
    number = record["id"]
    if account_json["type"] == "Organization":
        html = f"{web(base_url)}/organizations/{account_json['login']}/settings/installations/" \
            f"{number}"
    else:
        html = f"{web(base_url)}/settings/installations/{number}"
    at = times.timestamp(record["created_ms"])
    return {"id": number, "client_id": app_record["client_id"], "account": account_json,
            "repository_selection": record["repository_selection"],
            "access_tokens_url": f"{base_url}/app/installations/{number}/access_tokens",
            "repositories_url": f"{base_url}/installation/repositories", "html_url": html,
            "app_id": app_record["id"], "app_slug": app_record["slug"],
            "target_id": account_json["id"], "target_type": account_json["type"],
            "permissions": dict(record["permissions"]), "events": list(app_record["events"]),
            "created_at": at, "updated_at": at, "single_file_name": None,
            "has_multiple_single_files": False, "single_file_paths": [],
            "suspended_by": None, "suspended_at": None}


def installation_lite(record):
    """The `installation` an App's webhook payload carries: `{id, node_id}`."""
    return {"id": record["id"], "node_id": record["node_id"]}


def token(text, record, repositories):
    """An installation token as `POST .../access_tokens` answers: `repositories` (whole
    repository objects) only when it is limited to some."""
    out = {"token": text, "expires_at": times.timestamp(record["expires_ms"]),
           "permissions": dict(record["permissions"]),
           "repository_selection": record["repository_selection"]}
    if repositories is not None:
        out["repositories"] = repositories
    return out


def repository_lite(repo_json):
    """A repository as installation events list them."""
    return {key: repo_json[key] for key in ("id", "node_id", "name", "full_name", "private")}
