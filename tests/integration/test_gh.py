"""The real `gh` (Debian's package) against the GitHub emulator served by gunicorn on a unix
socket, unmodified: `GH_HOST`, `GH_ENTERPRISE_TOKEN`, `GH_REPO` and a fresh config (whose
`http_unix_socket` names the socket) and cache per test (testkit/gh.py).

gunicorn binds the socket and a loopback port (for git and the admin plane), as the GraphQL
README shows. Every GraphQL request gh sent and its answer are recorded
(testkit.emulator_apps:github) and, after each test, checked against the vendored schema:
each query validates, and each answer has the shape the schema gives it (graphql_check.py).
"""
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import requests

from testkit.gh import Gh, gh_path
from testkit.servers import gunicorn
from tests.emulators.github.graphql_check import problems

pytestmark = pytest.mark.gunicorn
ADA, GRACE = "tok-ada", "tok-grace"


@pytest.fixture(scope="module")
def server():
    """(base URL, socket path, record file) of one gunicorn for the module."""
    if gh_path() is None:
        if os.environ.get("CI", "").lower() in ("true", "1"):  # `make test` installs it
            pytest.fail("CI must run the gh tests: gh is not installed", pytrace=False)
        pytest.skip("gh is not installed (as root, `make test` installs Debian's package)")
    folder = Path(tempfile.mkdtemp(prefix="gh-"))  # short: a socket path has 107 bytes
    record = folder / "graphql.jsonl"
    env = {"EMULATORS_DB": str(folder / "emulators.sqlite3"),
           "GITHUB_GRAPHQL_RECORD": str(record)}
    try:
        with gunicorn("testkit.emulator_apps:github()", env=env, workers=2, threads=4,
                      ready_path="/__admin/health", unix_socket=folder / "gh.sock") as url:
            yield url, folder / "gh.sock", record
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def world(server, tmp_path):
    """A reset emulator with ada and grace, and octo/demo seeded with files."""
    url, sock, record = server
    admin = f"{url}/__admin"
    requests.post(f"{admin}/reset?all=1", timeout=10).raise_for_status()
    requests.put(f"{admin}/credentials", timeout=10, json=[
        {"credential": ADA, "user": "ada"}, {"credential": GRACE, "user": "grace"}]
    ).raise_for_status()
    requests.post(f"{admin}/github/repositories", timeout=10, json={
        "owner": "octo", "name": "demo", "files": {
            "main": {"README.md": "# demo\n"},
            "topic": {"README.md": "# demo\n", "feature.txt": "new\n"}}}).raise_for_status()
    record.write_text("")
    yield World(url, sock, tmp_path)
    exchanges = [json.loads(line) for line in record.read_text().splitlines()]
    found = [f"{x['request'].get('query', '')[:80]!r}: {p}" for x in exchanges
             for p in problems(x["request"], x["answer"])]
    assert not found, "answers outside GitHub's GraphQL schema:\n" + "\n".join(found[:20])
    invalid = [x for x in exchanges if "data" not in x["answer"]]
    assert not invalid, f"gh sent queries the schema refuses: {invalid[:3]}"


class World:
    def __init__(self, url, sock, folder):
        self.url, self.sock, self.folder = url, sock, folder

    def gh(self, token=ADA):
        return Gh(self.sock, self.folder / token, token, "octo/demo")


def test_gh_api_graphql_and_rest_under_api_v3(world):
    ada = world.gh()
    assert json.loads(ada.run("api", "graphql", "-f", "query={viewer{login}}").stdout) == {
        "data": {"viewer": {"login": "ada"}}}
    repo = json.loads(ada.run("api", "repos/octo/demo").stdout)
    assert repo["full_name"] == "octo/demo"
    assert repo["url"] == "http://github.local/api/v3/repos/octo/demo"
    missing = ada.run("api", "graphql", "-f",
                      'query={repository(owner:"octo",name:"nope"){name}}', ok=False)
    assert missing.returncode == 1
    assert "Could not resolve to a Repository with the name 'octo/nope'." in missing.stderr


def test_gh_repo_view(world):
    shown = world.gh().run("repo", "view", "octo/demo").stdout
    assert shown.startswith("name:\tocto/demo\n") and "# demo" in shown
