"""Fixtures for the GitHub emulator: the runtime around the service, driven in-process (webtest)."""
import pytest
import webtest

from emulators.github.app import create_service
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20.000Z, the reference suite's frozen clock
A, B, C, D, E = ("a" * 40, "b" * 40, "c" * 40, "d" * 40, "e" * 40)
HOST = "127.0.0.1:8828"
BASE = f"http://{HOST}"


def graph_body(owner="synthetic-org", name="example", **extra):
    """A repository whose history is a -> b -> c (main at a) with side branch d off a, e off c."""
    body = {"owner": owner, "name": name, "default_branch": "main",
            "commits": [{"sha": A, "parents": []}, {"sha": B, "parents": [A]},
                        {"sha": C, "parents": [B]}, {"sha": D, "parents": [A]},
                        {"sha": E, "parents": [C]}],
            "branches": {"main": A}}
    body.update(extra)
    return body


class GitHubClient:
    """Drive the emulator like a GitHub client, plus its admin controls."""

    def __init__(self, app, namespace=None):
        self.app = app
        self.headers = {"x-mockingbird-namespace": namespace} if namespace else {}

    def _h(self, headers):
        return {**self.headers, **(headers or {})}

    def get(self, path, status="*", headers=None, **kw):
        return self.app.get(path, headers=self._h(headers), status=status, **kw)

    def post(self, path, body=None, status="*", headers=None):
        return self.app.post_json(path, body, headers=self._h(headers), status=status)

    def patch(self, path, body=None, status="*", headers=None):
        return self.app.patch_json(path, body, headers=self._h(headers), status=status)

    def raw(self, method, path, body, content_type, status="*", headers=None):
        body = body.encode() if isinstance(body, str) else body
        return self.app.request(path, method=method, body=body, status=status,
                                headers={**self._h(headers), "Content-Type": content_type}
                                if content_type else self._h(headers), expect_errors=True)

    def seed(self, body=None, status=201, **extra):
        return self.post("/__admin/github/repositories", body or graph_body(**extra), status)

    def create_ref(self, ref, sha, repo="synthetic-org/example", status="*"):
        return self.post(f"/repos/{repo}/git/refs", {"ref": ref, "sha": sha}, status)

    def open_pull(self, head="topic", base="main", title="Add topic", status="*", **extra):
        body = {"title": title, "head": head, "base": base, **extra}
        return self.post("/repos/synthetic-org/example/pulls", body, status)

    def preset(self, name):
        return self.post("/__admin/faults", {"preset": name}, 201)

    def advance(self, ms=1000):
        return self.post("/__admin/clock", {"advance": ms}, 200)


@pytest.fixture
def runtime(tmp_path):
    return Runtime(create_service(), Settings(db=str(tmp_path / "emulators.sqlite3")))


@pytest.fixture
def app(runtime):
    return webtest.TestApp(runtime, extra_environ={"HTTP_HOST": HOST})


@pytest.fixture
def gh(app):
    client = GitHubClient(app)
    client.post("/__admin/clock", {"set": T0, "freeze": True}, 200)
    return client


@pytest.fixture
def seeded(gh):
    gh.seed()
    return gh
