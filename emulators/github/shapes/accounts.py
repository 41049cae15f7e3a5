"""Accounts as GitHub shows them (`simple-user`), and where GitHub's web URLs begin."""
from urllib.parse import quote

API_PREFIX = "/api/v3"  # GitHub Enterprise Server's REST API: the same routes below it


def web(base_url):
    """The base of the web's URLs (`html_url`, `clone_url`, avatars) for the API's base URL:
    GitHub Enterprise Server serves REST under `/api/v3`, its pages and git at the root."""
    return base_url.removesuffix(API_PREFIX)


def segment(value):
    """A value as one URL path segment."""
    return quote(value, safe="-_.!~*'()")


def user(base_url, record):
    """Shape a user or organization account (`simple-user`) from its record."""
    login = record["login"]
    url = f"{base_url}/users/{segment(login)}"
    site = web(base_url)
    return {
        "login": login,
        "id": record["id"],
        "node_id": record["node_id"],
        "avatar_url": f"{site}/avatars/u/{record['id']}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{site}/{segment(login)}",
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
