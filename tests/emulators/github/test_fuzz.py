"""Schema fuzz of the provider routes: no 5xx but the modelled 501s, no traceback, always JSON."""
import json
import string
from urllib.parse import quote

import pytest
import webtest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulators.github.app import create_service
from emulators.github.openapi import DOCUMENT
from emulators.runtime import Runtime, Settings

from .conftest import B, graph_body

SEGMENT_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-._~:@!$&'()*+,;= %\u00e9",
                       min_size=0, max_size=12)
KNOWN = st.sampled_from(["synthetic-org", "example", "SYNTHETIC-ORG", "1", "0", "pulls", "heads",
                         "main", "topic", "refs", "git", "..", ".", "-1", "1.5", "01"])
SEGMENT = st.one_of(KNOWN, SEGMENT_TEXT)
TEMPLATES = [t for t in DOCUMENT["paths"] if "x-tail-of" not in str(DOCUMENT["paths"][t])]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 63) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)
FIELDS = st.fixed_dictionaries({}, optional={
    "title": JSON_VALUES, "head": st.one_of(st.sampled_from(["topic", "synthetic-org:topic",
                                                             "a:b:c", "main"]), JSON_VALUES),
    "base": st.one_of(st.just("main"), JSON_VALUES), "body": JSON_VALUES, "state": JSON_VALUES,
    "draft": JSON_VALUES, "maintainer_can_modify": JSON_VALUES, "issue": JSON_VALUES,
    "ref": st.one_of(st.sampled_from(["refs/heads/x", "refs/pull/1/head", "heads/x"]),
                     JSON_VALUES),
    "sha": st.one_of(st.sampled_from([B, B.upper(), "a" * 40]), JSON_VALUES),
    "force": JSON_VALUES})
QUERY_KEYS = st.sampled_from(["state", "sort", "direction", "page", "per_page", "head", "base",
                              "x"])
QUERY = st.lists(st.tuples(QUERY_KEYS, st.one_of(SEGMENT_TEXT, st.sampled_from(
    ["open", "closed", "all", "created", "updated", "popularity", "asc", "desc", "1", "100",
     "1000", "9007199254740993", "synthetic-org:topic"]))), max_size=4)
BODY = st.one_of(
    st.tuples(st.just("application/json"), FIELDS.map(lambda d: json.dumps(d).encode())),
    st.tuples(st.sampled_from(["application/json", "text/json", "application/vnd+json"]),
              JSON_VALUES.map(lambda v: json.dumps(v).encode())),
    st.tuples(st.sampled_from(["application/json", "text/plain",
                               "application/x-www-form-urlencoded", "application/octet-stream",
                               ""]), st.binary(max_size=40)))


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory):
    db = tmp_path_factory.mktemp("fuzz") / "e.sqlite3"
    runtime = Runtime(create_service(), Settings(db=str(db)))
    app = webtest.TestApp(runtime, lint=False)
    app.post_json("/__admin/github/repositories", graph_body())
    app.post_json("/repos/synthetic-org/example/git/refs", {"ref": "refs/heads/topic", "sha": B})
    app.post_json("/repos/synthetic-org/example/pulls",
                  {"title": "seeded", "head": "topic", "base": "main"})
    return app


@st.composite
def requests_(draw):
    template = draw(st.sampled_from(TEMPLATES))
    path = template
    for name in ("owner", "repo", "pull_number"):
        path = path.replace("{" + name + "}", quote(draw(SEGMENT), safe="") or "x")
    tail = "/".join(quote(s, safe="") for s in draw(st.lists(SEGMENT, min_size=1, max_size=4)))
    path = path.replace("{ref}", tail)
    if draw(st.booleans()):
        path += draw(st.sampled_from(["/", "//", "/extra"]))
    method = draw(st.sampled_from(["GET", "POST", "PATCH", "PUT", "DELETE"]))
    query = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in draw(QUERY))
    content_type, body = draw(BODY)
    headers = {"X-GitHub-Api-Version": draw(st.sampled_from(["", "2026-03-10", "2026-03-10",
                                                             "2022-11-28"]))}
    if content_type:
        headers["Content-Type"] = content_type
    return method, path + ("?" + query if query else ""), body, headers


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(request=requests_())
def test_no_request_makes_the_provider_fail(fuzz_app, request):
    method, path, body, headers = request
    res = fuzz_app.request(path, method=method, body=body if method != "GET" else b"",
                           headers=headers, expect_errors=True)
    assert res.status_int < 500 or (res.status_int == 501
                                    and res.json.get("code") == "mockingbird_unsupported"), \
        (res.status, res.text)
    assert "Traceback" not in res.text
    if res.content_type.startswith(("text/plain", "application/x-git")):  # git and raw files
        route = path.split("?")[0].rstrip("/")
        assert route.endswith(("/info/refs", "-pack")) or "/raw/" in route
    else:
        assert isinstance(json.loads(res.text), (dict, list))
