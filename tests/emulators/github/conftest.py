"""Fixtures for the GitHub emulator: the runtime around the service, driven in-process (webtest).

Every provider answer any test here produces in this process (webtest and served threads alike)
is checked against GitHub's own response schema for its operation and status; a test whose
answers do not conform fails at teardown with the offending paths.
"""
import pytest
import webtest

from emulators.github.app import create_service
from emulators.runtime import Service
from emulators.runtime.app import Runtime
from emulators.runtime.settings import Settings

from . import graphql_check
from .schema_check import SCHEMAS

T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z, the reference suite's frozen clock
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

    def rate_limits(self, **limits):
        """Set the namespace's rate limits (`core=N`...), as the fixtures' handle does."""
        return self.app.put_json("/__admin/github/rate-limits", limits, headers=self.headers,
                                 status=200)


@pytest.fixture
def runtime(tmp_path):
    return Runtime(create_service(), Settings(db=str(tmp_path / "emulators.sqlite3")))


@pytest.fixture
def app(runtime):
    return webtest.TestApp(runtime, extra_environ={"HTTP_HOST": HOST, "REMOTE_ADDR": "127.0.0.1"})


@pytest.fixture
def gh(app):
    client = GitHubClient(app)
    client.post("/__admin/clock", {"set": T0, "freeze": True}, 200)
    return client


@pytest.fixture
def seeded(gh):
    gh.seed()
    return gh


class AnswerRecorder:
    """Falcon middleware: check each provider answer against GitHub's schema as it leaves (a
    GraphQL answer against GitHub's GraphQL schema and its query: graphql_check.py)."""

    def __init__(self):
        self.checked = 0
        self.problems = []

    def process_response(self, req, resp, resource, req_succeeded):
        status = int(str(resp.status).split()[0])
        asked = resp.context.get("graphql")
        if asked is not None:
            self.checked += 1
            self.problems += [f"{req.method} {req.path} {asked['query'][:60]!r}: {problem}"
                              for problem in graphql_check.problems(asked, resp.media)]
            return
        schema = SCHEMAS.schema_for(req.method, req.uri_template, status, resp.media,
                                    resp.context.get("media"))
        if schema is None or resp.media is None:
            return
        self.checked += 1
        for problem in SCHEMAS.problems(schema, resp.media):
            self.problems.append(f"{req.method} {req.path} -> {status}: {problem}")


@pytest.fixture(scope="session", autouse=True)
def answer_recorder():
    """Add the recorder to every provider app a GitHub service builds in this session.

    Patched on the `Service` class, so services built anywhere (fixtures, `serve()`) are seen.
    """
    recorder = AnswerRecorder()
    build = Service.provider_app

    def recording_provider_app(self):
        app = build(self)
        if self.name == "github":
            app.add_middleware(recorder)
        return app

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Service, "provider_app", recording_provider_app)
        yield recorder


@pytest.fixture(autouse=True)
def answers_follow_github_schemas(answer_recorder):
    """Fail the test if any answer it caused broke GitHub's response schema."""
    answer_recorder.problems.clear()
    yield
    problems, answer_recorder.problems[:] = list(answer_recorder.problems), []
    assert not problems, "answers outside GitHub's schema:\n" + "\n".join(problems[:40])
