"""GitHub Apps over the wire: registering one, its JWT sign-in with each of GitHub's refusals,
installation tokens (narrowing, expiry on the emulator's clock, revocation), where the App is
installed, and what a token may do (403 without the permission, 404 outside its repositories)."""
import json
import re

import jwt
import pytest

from .conftest import BASE, T0

T0_S = T0 // 1000
REPO = "/repos/octo/demo"


def sign(app_id, key, *, iat=None, exp=None, alg="RS256"):
    """An App's JWT as its clients make one (iat a minute back, exp nine minutes on, at the
    frozen T0); `...` leaves a claim out. Signed over the raw claims, so `iss` may be a number
    (octokit sends one) and a claim may have any type."""
    payload = {"iat": T0_S - 60 if iat is None else iat,
               "exp": T0_S + 540 if exp is None else exp, "iss": app_id}
    claims = json.dumps({k: v for k, v in payload.items() if v is not ...}).encode()
    return jwt.api_jws.encode(claims, key, algorithm=alg, headers={"typ": "JWT"})


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def seed(gh, owner="octo", names=("demo", "other")):
    for name in names:
        gh.post("/__admin/github/repositories", {"owner": owner, "name": name,
                                                 "files": {"main": {"README.md": "# x\n"}}}, 201)


@pytest.fixture
def bot(gh):
    """octo/demo and octo/other seeded; the App `my-bot` installed on octo (all repositories),
    with issues and contents write, pull requests read."""
    seed(gh)
    made = gh.post("/__admin/github/apps", {
        "slug": "my-bot", "permissions": {"issues": "write", "contents": "write",
                                          "pull_requests": "read"},
        "installations": [{"account": "octo"}]}, 201).json
    return made


def token_of(gh, bot, body=None, status=201):
    app_jwt = sign(bot["app"]["id"], bot["private_key"])
    installation = bot["installations"][0]["id"]
    return gh.post(f"/app/installations/{installation}/access_tokens", body or {}, status,
                   headers=bearer(app_jwt))


def test_registering_an_app_answers_githubs_app_and_a_pkcs1_key(bot, gh):
    app = bot["app"]
    assert app["slug"] == "my-bot" and app["name"] == "my-bot"
    assert app["permissions"] == {"metadata": "read", "issues": "write", "contents": "write",
                                  "pull_requests": "read"}
    assert re.fullmatch(r"Iv23li[0-9A-Za-z]{14}", app["client_id"])
    assert bot["private_key"].startswith("-----BEGIN RSA PRIVATE KEY-----\n")
    (installation,) = bot["installations"]
    assert installation["account"]["login"] == "octo"
    assert installation["repository_selection"] == "all"
    assert installation["permissions"] == app["permissions"]
    assert installation["access_tokens_url"] == \
        f"{BASE}/app/installations/{installation['id']}/access_tokens"
    # the App's bot account exists, a Bot
    assert gh.get("/__admin/state/owners/my-bot[bot]", 200).json["value"]["type"] == "Bot"


@pytest.mark.parametrize("body, status, words", [
    ({"permissions": {}}, 400, "slug"),
    ({"slug": "Bad Slug", "permissions": {}}, 400, "slug"),
    ({"slug": "b", "permissions": {"issues": "own"}}, 422, "Unknown permission issues"),
    ({"slug": "b", "permissions": {}, "private_key": "not a key"}, 400, "private_key"),
    ({"slug": "b", "permissions": {}, "installations": [{"account": "nobody"}]}, 422,
     "No account nobody"),
    ({"slug": "b", "permissions": {"issues": "read"},
      "installations": [{"account": "octo", "permissions": {"issues": "write"}}]}, 422,
     "may not exceed"),
    ({"slug": "b", "permissions": {}, "installations": [{"account": "octo",
                                                         "repositories": ["nope"]}]}, 422,
     "no repository nope"),
    ({"slug": "b", "permissions": {}, "hook": 1}, 400, "Unknown field"),
])
def test_a_bad_registration_is_refused_whole(gh, body, status, words):
    seed(gh)
    res = gh.post("/__admin/github/apps", body, status)
    assert words in res.json["message"]
    assert gh.get("/__admin/state/apps", 200).json.get("records", []) == []


def test_a_slug_is_registered_once_and_an_app_is_installed_once_per_account(bot, gh):
    assert gh.post("/__admin/github/apps", {"slug": "my-bot", "permissions": {}}, 409)
    assert gh.post("/__admin/github/apps/my-bot/installations", {"account": "octo"}, 409)
    assert gh.post("/__admin/github/apps/nope/installations", {"account": "octo"}, 404)


@pytest.mark.parametrize("issuer", ["id", "id-as-string", "client_id"])
def test_the_app_signs_in_with_its_id_or_client_id(bot, gh, issuer):
    app = bot["app"]
    iss = {"id": app["id"], "id-as-string": str(app["id"]), "client_id": app["client_id"]}
    res = gh.get("/app", 200, headers=bearer(sign(iss[issuer], bot["private_key"])))
    assert res.json["slug"] == "my-bot" and res.json["installations_count"] == 1
    assert res.json["owner"]["login"] == "mockingbird-user"


def test_octokit_writes_bearer_in_lower_case(bot, gh):
    token = sign(bot["app"]["id"], bot["private_key"])
    assert gh.get("/app", 200, headers={"Authorization": f"bearer {token}"})


def _other_key():
    from emulators.github.keys import new_private_key
    return new_private_key()


UNDECODABLE = "A JSON web token could not be decoded"
EXPIRED = ("'Expiration time' claim ('exp') must be a numeric value representing the future"
           " time at which the assertion expires")
TOO_FAR = "'Expiration time' claim ('exp') is too far in the future"
IAT = ("'Issued at' claim ('iat') must be an Integer representing the time that the assertion"
       " was issued")


@pytest.mark.parametrize("case, message", [
    ("wrong key", UNDECODABLE),
    ("unknown app", UNDECODABLE),
    ("HS256", UNDECODABLE),
    ("garbage", UNDECODABLE),
    ("a user's token", UNDECODABLE),
    ("no issuer", "Missing 'issuer' claim ('iss') in assertion"),
    ("issuer not a number", "'Issuer' claim ('iss') must be an Integer"),
    ("expired", EXPIRED),
    ("no exp", EXPIRED),
    ("exp as text", EXPIRED),
    ("more than ten minutes", TOO_FAR),
    ("iat in the future", IAT),
    ("iat not an integer", IAT),
    ("no iat", IAT),
])
def test_each_jwt_refusal_is_githubs_401(bot, gh, case, message):
    app_id, key = bot["app"]["id"], bot["private_key"]
    token = {
        "wrong key": lambda: sign(app_id, _other_key()),
        "unknown app": lambda: sign(999, key),
        "HS256": lambda: sign(app_id, "a shared secret, not the App's key", alg="HS256"),
        "garbage": lambda: "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24.c2ln",  # claims: `not json`
        "a user's token": lambda: "tok-ada",
        "no issuer": lambda: sign(..., key),
        "issuer not a number": lambda: sign("12x", key),
        "expired": lambda: sign(app_id, key, iat=T0_S - 700, exp=T0_S - 100),
        "no exp": lambda: sign(app_id, key, exp=...),
        "exp as text": lambda: sign(app_id, key, exp="soon"),
        "more than ten minutes": lambda: sign(app_id, key, iat=T0_S, exp=T0_S + 601),
        "iat in the future": lambda: sign(app_id, key, iat=T0_S + 120, exp=T0_S + 300),
        "iat not an integer": lambda: sign(app_id, key, iat=T0_S - 0.5),
        "no iat": lambda: sign(app_id, key, iat=...),
    }[case]()
    res = gh.get("/app", 401, headers=bearer(token))
    assert res.json == {"message": message, "documentation_url": "https://docs.github.com/rest",
                        "status": "401"}


def test_the_jwt_is_judged_on_the_emulators_clock(bot, gh):
    token = sign(bot["app"]["id"], bot["private_key"])  # valid at T0 for nine minutes
    assert gh.get("/app", 200, headers=bearer(token))
    gh.post("/__admin/clock", {"advance": "9m"}, 200)
    assert gh.get("/app", 401, headers=bearer(token)).json["message"] == EXPIRED
    gh.post("/__admin/clock", {"set": T0 - 600_000}, 200)  # ten minutes back: iat is ahead
    assert gh.get("/app", 401, headers=bearer(token)).json["message"] == TOO_FAR


def test_the_date_header_is_the_emulators_clock(gh):
    res = gh.get("/nowhere", 404)
    assert res.headers["Date"] == "Tue, 14 Nov 2023 22:13:20 GMT"


def test_an_installation_token_lives_one_hour_on_the_emulators_clock(bot, gh):
    res = token_of(gh, bot, {"permissions": {}})  # PyGithub's body: all the permissions
    token = res.json["token"]
    assert re.fullmatch(r"ghs_[0-9A-Za-z]{36}", token)
    assert res.json["expires_at"] == "2023-11-14T23:13:20Z"
    assert res.json["permissions"] == bot["app"]["permissions"]
    assert res.json["repository_selection"] == "all" and "repositories" not in res.json
    assert gh.get(REPO, 200, headers={"Authorization": f"token {token}"})
    gh.post("/__admin/clock", {"advance": "59m59s" if False else 3_599_000}, 200)
    assert gh.get(REPO, 200, headers={"Authorization": f"token {token}"})
    gh.post("/__admin/clock", {"advance": 1000}, 200)
    res = gh.get(REPO, 401, headers={"Authorization": f"token {token}"})
    assert res.json == {"message": "Bad credentials",
                        "documentation_url": "https://docs.github.com/rest", "status": "401"}


def test_a_token_narrowed_to_repositories_and_permissions(bot, gh):
    demo_id = gh.get(REPO, 200).json["id"]
    res = token_of(gh, bot, {"repositories": ["demo"], "permissions": {"issues": "read"}})
    assert res.json["repository_selection"] == "selected"
    assert [r["full_name"] for r in res.json["repositories"]] == ["octo/demo"]
    assert res.json["permissions"] == {"issues": "read"}
    by_id = token_of(gh, bot, {"repository_ids": [demo_id]}).json
    assert [r["id"] for r in by_id["repositories"]] == [demo_id]
    token = {"Authorization": f"token {res.json['token']}"}
    # its one repository: reads with issues read; a write is the App's 403
    assert gh.get(f"{REPO}/issues", 200, headers=token)
    refused = gh.post(f"{REPO}/issues", {"title": "x"}, 403, headers=token).json
    assert refused == {"message": "Resource not accessible by integration", "status": "403",
                       "documentation_url":
                           "https://docs.github.com/rest/issues/issues#create-an-issue"}
    # a repository outside its selection is not there
    assert gh.get("/repos/octo/other", 404, headers=token).json["message"] == "Not Found"
    listed = gh.get("/installation/repositories", 200, headers=token).json
    assert listed["total_count"] == 1 and listed["repository_selection"] == "selected"


@pytest.mark.parametrize("body, message", [
    ({"repositories": ["nope"]}, "There is at least one repository that does not exist or is"
                                 " not accessible to the parent installation."),
    ({"repository_ids": [99999]}, "There is at least one repository that does not exist or is"
                                  " not accessible to the parent installation."),
    ({"permissions": {"administration": "write"}},
     "The permissions requested are not granted to this installation."),
    ({"permissions": {"issues": "admin"}},
     "The permissions requested are not granted to this installation."),
    ({"permissions": {"pull-requests": "read"}},
     "The permissions requested are not granted to this installation."),
])
def test_asking_more_than_the_installation_has_is_githubs_422(bot, gh, body, message):
    assert token_of(gh, bot, body, 422).json["message"] == message


def test_a_revoked_token_is_bad_credentials(bot, gh):
    token = {"Authorization": f"token {token_of(gh, bot).json['token']}"}
    gh.app.delete("/installation/token", headers=token, status=204)
    assert gh.get(REPO, 401, headers=token).json["message"] == "Bad credentials"


def test_a_token_of_that_form_never_issued_is_bad_credentials_and_others_stay_users(bot, gh):
    from emulators.github.models.apps import new_token
    assert gh.get(REPO, 401, headers={"Authorization": f"token {new_token()}"})
    # any other token is a user, as before (ghs_ alone does not make an installation token)
    created = gh.post(f"{REPO}/issues", {"title": "x"}, 201,
                      headers={"Authorization": "token ghs_synthetic"}).json
    assert created["user"]["login"].startswith("user-")


def test_where_the_app_is_installed(bot, gh):
    seed(gh, owner="elsewhere", names=("lib",))
    app_jwt = bearer(sign(bot["app"]["id"], bot["private_key"]))
    installation_id = bot["installations"][0]["id"]
    assert gh.get(f"{REPO}/installation", 200, headers=app_jwt).json["id"] == installation_id
    assert gh.get("/orgs/octo/installation", 200, headers=app_jwt).json["id"] == installation_id
    assert gh.get("/repos/elsewhere/lib/installation", 404, headers=app_jwt)
    assert gh.get("/users/octo/installation", 404, headers=app_jwt)  # octo is an organization
    assert [i["id"] for i in gh.get("/app/installations", 200, headers=app_jwt).json] == \
        [installation_id]
    assert gh.get(f"/app/installations/{installation_id}", 200, headers=app_jwt)
    assert gh.get("/app/installations/77", 404, headers=app_jwt)
    # an installation added later, on some repositories only
    later = gh.post("/__admin/github/apps/my-bot/installations",
                    {"account": "elsewhere", "repositories": ["lib"]}, 201).json["installation"]
    assert later["repository_selection"] == "selected"
    assert gh.get("/repos/elsewhere/lib/installation", 200, headers=app_jwt).json["id"] == \
        later["id"]


def test_an_apps_credentials_reach_only_their_own_routes(bot, gh):
    app_jwt = bearer(sign(bot["app"]["id"], bot["private_key"]))
    token = {"Authorization": f"token {token_of(gh, bot).json['token']}"}
    # the App as itself reaches no repository; a token is not the App
    assert gh.get(REPO, 403, headers=app_jwt).json["message"] == \
        "Resource not accessible by integration"
    assert gh.get("/app", 401, headers=token).json["message"] == UNDECODABLE
    assert gh.get("/installation/repositories", 403, headers=app_jwt)
    assert gh.get("/installation/repositories", 403, headers={"Authorization": "token tok"})


def test_the_token_needs_the_permission_of_each_operation(gh):
    seed(gh)
    made = gh.post("/__admin/github/apps", {
        "slug": "reader", "permissions": {"contents": "read"},
        "installations": [{"account": "octo"}]}, 201).json
    token = {"Authorization": f"token {token_of(gh, made).json['token']}"}
    assert gh.get(f"{REPO}/contents/README.md", 200, headers=token)
    assert gh.get(f"{REPO}/pulls", 403, headers=token)  # no pull_requests permission
    assert gh.get(REPO, 200, headers=token)  # metadata: every App has it
    assert gh.post(f"{REPO}/git/refs", {"ref": "refs/heads/x", "sha": "0" * 40}, 403,
                   headers=token)
    assert gh.get("/repos/octo/absent/pulls", 404, headers=token)  # absent before forbidden


def test_every_operation_has_its_permission():
    from emulators.github.resources.access import (APP_ROUTES, GIT_ROUTES, GRAPHQL,
                                                   INSTALLATION_ROUTES)
    from emulators.github.permissions import REQUIRED
    from emulators.github.openapi import DOCUMENT
    served = {op["operationId"] for item in DOCUMENT["paths"].values() for op in item.values()
              if isinstance(op, dict) and "operationId" in op}
    assert served - set(REQUIRED) == (APP_ROUTES | INSTALLATION_ROUTES | GIT_ROUTES) - {
        "git/upload-pack", "git/receive-pack"} | {GRAPHQL}  # (GraphQL's by field: graphql/)
    assert set(REQUIRED) <= served


def test_the_api_is_also_served_under_api_v3(bot, gh):
    repo = gh.get(f"/api/v3{REPO}", 200).json
    assert repo["url"] == f"{BASE}/api/v3{REPO}"
    assert repo["owner"]["url"] == f"{BASE}/api/v3/users/octo"
    app_jwt = bearer(sign(bot["app"]["id"], bot["private_key"]))
    installation = gh.get(f"/api/v3{REPO}/installation", 200, headers=app_jwt).json
    assert installation["access_tokens_url"].startswith(f"{BASE}/api/v3/app/installations/")
    journal = gh.get("/__admin/requests", 200).json["requests"]
    assert [e["operationId"] for e in journal[-2:]] == ["repos/get",
                                                        "apps/get-repo-installation"]
    assert gh.get("/api/v3/nowhere", 404).json["documentation_url"] == \
        "https://docs.github.com/rest"


def test_apps_are_checkpointed_and_reset_with_the_namespace(gh):
    seed(gh)
    checkpoint = gh.post("/__admin/checkpoints", None, 201).json["id"]
    gh.post("/__admin/github/apps", {"slug": "later", "permissions": {}}, 201)
    gh.post("/__admin/branches/main/checkout", {"checkpoint": checkpoint}, 200)
    assert gh.post("/__admin/github/apps/later/installations", {"account": "octo"}, 404)
    gh.post("/__admin/github/apps", {"slug": "later", "permissions": {}}, 201)
    gh.post("/__admin/reset", None, 200)
    assert gh.get("/__admin/state/apps", 200).json.get("records", []) == []


def test_an_app_brings_its_own_key(gh):
    seed(gh)
    key = _other_key()
    made = gh.post("/__admin/github/apps", {"slug": "own", "permissions": {},
                                            "private_key": key}, 201).json
    assert "private_key" not in made
    assert gh.get("/app", 200, headers=bearer(sign(made["app"]["id"], key)))


def test_api_v3_urls_keep_the_namespace_and_the_mount(gh, runtime):
    import webtest

    from emulators.runtime import PathDispatcher
    gh.post("/__admin/github/repositories", {"owner": "octo", "name": "demo"}, 201,
            headers={"x-mockingbird-namespace": "w1"})
    carried = gh.get(f"/api/v3{REPO}", 200, headers={"x-mockingbird-namespace": "w1"}).json
    assert carried["url"] == f"{BASE}/__admin/ns/w1/api/v3{REPO}"
    assert carried["clone_url"] == f"{BASE}/__admin/ns/w1/octo/demo.git"  # git: at the root
    assert gh.get(f"/__admin/ns/w1/api/v3{REPO}", 200).json["url"] == carried["url"]
    mounted = webtest.TestApp(PathDispatcher(None, {"/emulators/github": runtime}),
                              extra_environ={"HTTP_HOST": "127.0.0.1:8828"})
    seen = mounted.get(f"/emulators/github/__admin/ns/w1/api/v3{REPO}").json
    assert seen["url"] == f"{BASE}/emulators/github/__admin/ns/w1/api/v3{REPO}"


def test_what_the_token_writes_is_by_the_bot(gh):
    gh.post("/__admin/github/repositories", {"owner": "octo", "name": "demo", "files": {
        "main": {"README.md": "# demo\n"},
        "topic": {"README.md": "# demo\n", "new.txt": "new\n"}}}, 201)
    made = gh.post("/__admin/github/apps", {
        "slug": "merger", "permissions": {"pull_requests": "write", "contents": "write",
                                          "statuses": "write"},
        "installations": [{"account": "octo"}]}, 201).json
    bot = {"Authorization": f"token {token_of(gh, made).json['token']}"}
    user = {"Authorization": "token tok-ada"}
    pull = gh.post(f"{REPO}/pulls", {"title": "T", "head": "topic", "base": "main"}, 201,
                   headers=user).json
    status = gh.post(f"{REPO}/statuses/{pull['head']['sha']}", {"state": "success",
                                                                 "context": "ci"}, 201,
                     headers=bot).json
    review = gh.post(f"{REPO}/pulls/{pull['number']}/reviews", {"event": "APPROVE"}, 200,
                     headers=bot).json
    gh.app.put_json(f"{REPO}/pulls/{pull['number']}/merge", {}, headers=bot, status=200)
    merged = gh.get(f"{REPO}/pulls/{pull['number']}", 200).json
    for account in (status["creator"], review["user"], merged["merged_by"]):
        assert (account["login"], account["type"]) == ("merger[bot]", "Bot")
    assert pull["user"]["login"] != "merger[bot]"


def test_a_check_run_an_apps_token_creates_is_that_apps(gh):
    seed(gh, names=("demo",))
    made = gh.post("/__admin/github/apps", {"slug": "ci-bot", "permissions": {"checks": "write"},
                                            "installations": [{"account": "octo"}]}, 201).json
    bot = {"Authorization": f"token {token_of(gh, made).json['token']}"}
    sha = gh.get(f"{REPO}/branches/main", 200).json["commit"]["sha"]
    run = gh.post(f"{REPO}/check-runs", {"name": "lint", "head_sha": sha}, 201, headers=bot).json
    assert (run["app"]["slug"], run["app"]["id"]) == ("ci-bot", made["app"]["id"])
    other = gh.post(f"{REPO}/check-runs", {"name": "test", "head_sha": sha}, 201,
                    headers={"Authorization": "token tok-ada"}).json
    assert other["app"]["slug"] == "mockingbird-ci"  # any other token: the emulator's own App
    suites = gh.get(f"{REPO}/commits/{sha}/check-suites", 200).json
    assert sorted(s["app"]["slug"] for s in suites["check_suites"]) == ["ci-bot",
                                                                          "mockingbird-ci"]
    assert run["check_suite"]["id"] != other["check_suite"]["id"]  # one suite per App
