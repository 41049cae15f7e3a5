"""GitHub Apps signed in by real clients, unmodified: PyGithub (`Auth.AppAuth`,
`GithubIntegration`, `AppInstallationAuth` fetching a new token when the old one expired on
the clock both share) and githubkit (`AppAuthStrategy`, `as_installation`, narrowed tokens),
each acting as the App's bot."""
import pytest
from github import Auth, Github, GithubException, GithubIntegration

import emulators
from testkit import freezing

# The emulator reads the frozen clock as PyGithub does; filelock keeps real time. freezegun's
# defaults skip modules named `gi*` (PyGObject), and so `github`: not here. Its start reads
# every attribute of every loaded module, which makes githubkit import its lazy schema modules
# (pydantic cannot build a model on freezegun's datetime): githubkit is left alone.
FROZEN_APART = ("filelock", "githubkit")
PERMISSIONS = {"issues": "write", "pull_requests": "write", "contents": "read"}


@pytest.fixture
def github():
    with emulators.mock_github() as handle:
        handle.seed_repository("octo", "demo")
        handle.seed_repository("octo", "other")
        yield handle


def test_pygithub_signs_in_as_the_app_and_writes_as_its_bot(github):
    made = github.create_app("my-bot", permissions=PERMISSIONS, installations=["octo"])
    integration = GithubIntegration(auth=Auth.AppAuth(made["app"]["id"], made["private_key"]))
    assert integration.get_app().slug == "my-bot"
    installation = integration.get_repo_installation("octo", "demo")
    assert installation.id == made["installations"][0]["id"]
    assert [i.id for i in integration.get_installations()] == [installation.id]
    repo = installation.get_github_for_installation().get_repo("octo/demo")
    issue = repo.create_issue("Found by the bot")
    comment = issue.create_comment("And commented on")
    for user in (issue.user, comment.user):
        assert (user.login, user.type) == ("my-bot[bot]", "Bot")
    with pytest.raises(GithubException) as refused:
        repo.create_git_ref("refs/heads/bot", repo.get_branch("main").commit.sha)
    assert (refused.value.status, refused.value.data["message"]) == (
        403, "Resource not accessible by integration")


def test_pygithub_fetches_a_new_token_when_the_clock_has_moved_an_hour(github):
    import githubkit  # noqa: F401  (loaded, as another test of this process may have it)
    made = github.create_app("my-bot", permissions=PERMISSIONS, installations=["octo"])
    app_auth = Auth.AppAuth(made["app"]["id"], made["private_key"])
    with freezing.frozen("2030-01-01T00:00:00Z", ignore=FROZEN_APART, unignore=("gi",)) as frozen:
        gh = Github(auth=app_auth.get_installation_auth(made["installations"][0]["id"]))
        repo = gh.get_repo("octo/demo")
        repo.create_issue("First")
        frozen.tick(3600)  # the emulator's clock (live: it reads the process's time) moves too
        assert repo.create_issue("An hour later").user.login == "my-bot[bot]"
    minted = github.journal(operationId="apps/create-installation-access-token")
    assert [entry["status"] for entry in minted] == [201, 201]


def test_githubkit_app_and_installation_strategies(github):
    from githubkit import AppAuthStrategy, GitHub
    made = github.create_app("my-bot", permissions=PERMISSIONS, installations=["octo"])
    app = GitHub(AppAuthStrategy(made["app"]["id"], made["private_key"]))
    installation = app.rest.apps.get_repo_installation("octo", "demo").parsed_data
    assert installation.app_slug == "my-bot"
    bot = app.with_auth(app.auth.as_installation(installation.id, repositories=["demo"]))
    issue = bot.rest.issues.create("octo", "demo", title="Typed").parsed_data
    assert (issue.user.login, issue.user.type) == ("my-bot[bot]", "Bot")
    # its token reaches only octo/demo: the other repository is not there for it
    with pytest.raises(Exception) as hidden:
        bot.rest.repos.get("octo", "other")
    assert hidden.value.response.status_code == 404
    listed = bot.rest.apps.list_repos_accessible_to_installation().parsed_data
    assert [r.full_name for r in listed.repositories] == ["octo/demo"]


def test_githubkit_signs_in_with_the_client_id(github):
    from githubkit import AppAuthStrategy, GitHub
    made = github.create_app("my-bot", permissions=PERMISSIONS)
    app = GitHub(AppAuthStrategy(None, made["private_key"], client_id=made["app"]["client_id"]))
    assert app.rest.apps.get_authenticated().parsed_data.slug == "my-bot"
