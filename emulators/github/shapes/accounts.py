"""Accounts as GitHub shows them (`simple-user`)."""
from urllib.parse import quote


def segment(value):
    """A value as one URL path segment."""
    return quote(value, safe="-_.!~*'()")


def user(base_url, record):
    """Shape a user or organization account (`simple-user`) from its record."""
    login = record["login"]
    url = f"{base_url}/users/{segment(login)}"
    return {
        "login": login,
        "id": record["id"],
        "node_id": record["node_id"],
        "avatar_url": f"{base_url}/avatars/u/{record['id']}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{base_url}/{segment(login)}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": record.get("type", "Organization"),
        "user_view_type": "public",
        "site_admin": False,
    }
