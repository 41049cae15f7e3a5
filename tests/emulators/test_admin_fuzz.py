"""Fuzz of the admin plane of both emulators: no 5xx, no traceback, JSON and the error envelope.

Arbitrary methods, admin paths (known routes with junk params, random segments, the
`/__admin/ns/<name>/` carrier), query strings, steering headers and bodies (JSON, near-valid
controls per route, raw bytes); then the same with an admin key, where only health is open.
"""
import json
import re
import string
from urllib.parse import quote, unquote

import pytest
import webtest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from emulators.github.app import create_service as create_github
from emulators.hermes.app import create_service as create_hermes
from emulators.hermes.schemas import STATUSES
from emulators.hermes.settings import HermesSettings
from emulators.runtime import Settings, build_wsgi

from .github.conftest import A, B, C, graph_body

KEY = "fuzz-admin-key"
# Hermes settings of its own: HERMES_* in the environment (a bearer key) must not change the run.
SERVICES = {"hermes": create_hermes(HermesSettings()), "github": create_github()}
# A Python exception or traceback leaking into a body (`ValueError(`, `KeyError:` …).
LEAK = re.compile(r'Traceback|File "|\b[A-Z]\w*(Error|Exception)(\(|: )')
CARRIER = re.compile(r"^/__admin/ns/([^/]*)(/.*)?$")

# -- building blocks ---------------------------------------------------------------------------
TEXT = st.text(alphabet=string.ascii_letters + string.digits + "-._~:@!$&'()*+,;= %/?#\u00e9\u00b2"
               "\u0661\x00", max_size=12)
NAMES = st.sampled_from(["default", "w1", "main", "feature", "a.b", "-", ".", "..", "x" * 64,
                         "x" * 65, "", " ", "*", "ns/slash", "caf\u00e9", "\u00b2", "~"])
NAME = st.one_of(NAMES, TEXT)
HUGE = st.sampled_from([2 ** 63, -2 ** 63 - 1, 10 ** 30, -(10 ** 30), 1e300, -1e300, 1e-300,
                        2 ** 53 + 1, -1, 0, 1, 1.5])
JUNK_STRINGS = st.sampled_from(["", " ", "15m", "-15m", "1.5h", "0ms", "99999999999999999999d",
                                "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.000+14:00",
                                "9999-12-31T23:59:59Z", "0001-01-01T00:00:00+01:00",
                                "0001-01-01", "99999999999999999999", "-1", "1e400", "nan",
                                "\u00b2", "\u0661\u0662\u0663", "true", "null", "cp_00000001",
                                "cp_zzzzzzzzzzzzzzzzzzzz", "cp_", "\x00"])
SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | HUGE
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12) | JUNK_STRINGS)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=10)
# Python's json module reads these; strict JSON parsers do not.
SPECIAL_JSON = st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e400", b"[1e400]",
                                b'{"set": Infinity}', b'{"advance": NaN}', b'{"set": 1e400}',
                                b'{"advance": -1e400}', b'{"set": 1e300}', b'{"advance": 1e300}',
                                b'{"status": 500, "delayMs": NaN}', b'{"status": 500, "rate": NaN}',
                                b'{"status": 500, "count": 1e400}', b'{"delayMs": Infinity}',
                                b'"\\ud800"', b'{"\\ud800": 1}', b'{"branch": "\\udfff"}'])


def opt(**fields):
    """An object with any subset of the fields, each near-valid or arbitrary."""
    return st.fixed_dictionaries({}, optional={
        name: st.one_of(values, JSON_VALUES) for name, values in fields.items()})


CLOCK = opt(set=st.one_of(HUGE, JUNK_STRINGS, st.integers(-2 ** 66, 2 ** 66)),
            advance=st.one_of(HUGE, JUNK_STRINGS, st.integers(-2 ** 66, 2 ** 66)),
            freeze=st.booleans(), resume=st.booleans(), reset=st.booleans(), junk=st.none())
FAULT = opt(id=NAME, operationId=st.sampled_from(["RunCreate", "RunGet", "ReposGet", ""]),
            method=st.sampled_from(["GET", "post", "FOO", ""]),
            path=st.sampled_from(["/v1/runs/{run_id}", "/x", "x", "/{", "/(", "/["]),
            pathPrefix=st.sampled_from(["/v1", "/", "x"]), namespace=NAME,
            status=st.one_of(st.integers(0, 700), HUGE), body=JSON_VALUES,
            headers=st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2),
            count=st.one_of(st.integers(-2, 3), HUGE), after=st.one_of(st.integers(-2, 3), HUGE),
            rate=st.one_of(st.floats(-1, 2), HUGE), delayMs=st.sampled_from([0, -1, 60_001, 1e300]),
            latencyMs=st.sampled_from([0, -1, 60_001]), drop=st.booleans(),
            effect=st.sampled_from(["", "x", "hermes_drop"]), params=JSON_VALUES,
            preset=st.sampled_from(["hermes_throttled", "github_conflict", "nope", ""]),
            description=st.text(max_size=6))
PRESET_NAMES = st.sampled_from(["hermes_submit_accepted_drop", "hermes_poll_timeout",
                                "hermes_throttled", "hermes_chat_throttled", "hermes_draining",
                                "hermes_run_keys_ignored",
                                "github_ref_conflict", "github_pull_race", "nope", "__proto__"])
OVERRIDES = opt(id=NAME, count=st.one_of(st.integers(-2, 3), HUGE), after=HUGE,
                status=st.integers(0, 700), namespace=NAME, rate=HUGE, delayMs=HUGE,
                preset=PRESET_NAMES)
OBSERVE = opt(status=st.sampled_from(STATUSES + ("done", "")), last_event=TEXT, output=TEXT,
              error=TEXT, pending_steer=TEXT, approval=JSON_VALUES,
              usage=opt(input_tokens=HUGE, output_tokens=HUGE, total_tokens=HUGE),
              events=st.lists(opt(event=st.sampled_from(["message.delta", "tool.started",
                                                         "tool.completed", "subagent.x", ""]),
                                  text=TEXT, tool=TEXT, preview=TEXT, duration=HUGE,
                                  error=st.booleans()), max_size=3))
REPLY = opt(text=TEXT, deltas=st.lists(st.one_of(TEXT, opt(tool=TEXT, id=TEXT, arguments=TEXT)),
                                       max_size=3),
            reasoning=TEXT, usage=opt(input_tokens=HUGE, output_tokens=HUGE, total_tokens=HUGE),
            failed=st.booleans(), partial=st.booleans(), completed=st.booleans(), error=TEXT,
            exception=TEXT, delay_ms=st.one_of(HUGE, st.integers(-1, 10_001)))
SEED = st.builds(lambda body, extra: {**body, **extra},
                 st.builds(graph_body, owner=st.one_of(st.just("synthetic-org"), NAME),
                           name=st.one_of(st.sampled_from(["example", "other"]), NAME)),
                 opt(default_branch=NAME, private=st.booleans(),
                     commits=st.lists(opt(sha=st.sampled_from([A, B, A.upper(), "a" * 39]),
                                          parents=st.lists(st.sampled_from([A, B, C]),
                                                           max_size=2)), max_size=3),
                     branches=st.dictionaries(NAME, st.sampled_from([A, B, C, "x"]),
                                              max_size=2)))
STATE = opt(id=st.one_of(NAME, st.sampled_from(["notes_1", "a", "x" * 257])), value=JSON_VALUES)
VALUE = opt(value=JSON_VALUES)
CREDENTIALS = st.one_of(
    opt(credentials=st.one_of(st.dictionaries(NAME, NAME, max_size=3),
                              st.lists(st.one_of(NAME, opt(credential=NAME, namespace=NAME)),
                                       max_size=3))),
    st.lists(st.one_of(NAME, opt(credential=NAME, namespace=NAME)), max_size=3),
    opt(credential=NAME, namespace=NAME))
MOVE = opt(owner=st.sampled_from(["synthetic-org", "nobody"]), repo=st.sampled_from(["example"]),
           ref=st.sampled_from(["refs/heads/main", "refs/heads/topic", "refs/heads/..",
                                "heads/main", "refs/heads/x~y"]),
           sha=st.sampled_from([A, B, C, C.upper(), "z" * 40]))

# (method, admin-relative path template, near-valid body); `{}` params are filled with junk.
ROUTES = {
    "shared": [
        ("GET", "/", None), ("GET", "/health", None), ("HEAD", "/health", None),
        ("GET", "/openapi.json", None), ("POST", "/reset", st.none()),
        ("GET", "/namespaces", None), ("GET", "/clock", None), ("POST", "/clock", CLOCK),
        ("GET", "/faults", None), ("POST", "/faults", FAULT),
        ("POST", "/faults", opt(preset=PRESET_NAMES, id=NAME, count=HUGE, namespace=NAME)),
        ("DELETE", "/faults", None), ("DELETE", "/faults/{id}", None),
        ("GET", "/faults/presets", None), ("POST", "/faults/presets/{preset}", OVERRIDES),
        ("GET", "/timeline", None), ("POST", "/checkpoints", opt(branch=NAME)),
        ("POST", "/branches/{name}", opt(at=JUNK_STRINGS)),
        ("POST", "/branches/{name}/checkout", opt(checkpoint=JUNK_STRINGS)),
        ("DELETE", "/branches/{name}", None), ("GET", "/requests", None),
        ("DELETE", "/requests", None), ("GET", "/metrics", None), ("DELETE", "/metrics", None),
        ("GET", "/state", None), ("GET", "/state/{collection}", None),
        ("POST", "/state/{collection}", STATE), ("GET", "/state/{collection}/{id}", None),
        ("PUT", "/state/{collection}/{id}", VALUE), ("PATCH", "/state/{collection}/{id}", VALUE),
        ("DELETE", "/state/{collection}/{id}", None), ("GET", "/credentials", None),
        ("PUT", "/credentials", CREDENTIALS), ("DELETE", "/credentials", None),
        ("POST", "/snapshots", st.none()), ("POST", "/snapshots/{snapshot}/restore", None),
        ("DELETE", "/snapshots/{snapshot}", None), ("GET", "/ui", None), ("GET", "/ui/", None),
        ("GET", "/ui/manifest", None),
    ],
    "hermes": [
        ("POST", "/hermes/runs/{run}/observe", OBSERVE),
        ("POST", "/hermes/scope", opt(profile=TEXT, identity=TEXT)),
        ("POST", "/hermes/restart", opt(owner=st.sampled_from(["stale", "alive", ""]))),
        ("POST", "/hermes/sweep", st.none()),
        ("POST", "/hermes/replies", st.one_of(REPLY, opt(replies=st.lists(REPLY, max_size=3)))),
        ("GET", "/hermes/replies", None), ("DELETE", "/hermes/replies", None),
    ],
    "github": [("POST", "/github/repositories", SEED), ("POST", "/github/refs/move", MOVE)],
}
PARAMS = {"id": st.one_of(NAME, st.sampled_from(["fault_1", "fault_2", "hermes_throttled"])),
          "preset": st.one_of(PRESET_NAMES, NAME), "name": NAME,
          "run": st.one_of(st.sampled_from(["SEEDED_RUN", "run_x", "run_"]), NAME),
          # Not the services' own collections: raw state writes skip a service's rules, and
          # what it later reads from a record it never wrote may fail (emulators/README.md).
          "collection": st.one_of(st.sampled_from(["notes", "a.b:c@d", "x" * 201]), NAME),
          "snapshot": st.one_of(st.sampled_from(["snap_1", "snap_2", "snap_01", "snap_"]), NAME)}
NUMBERS = st.one_of(st.integers(-10 ** 25, 10 ** 25).map(str), st.sampled_from(
    ["\u00b2", "\u0661\u0662\u0663", "1e3", "0x10", " 1", "+1", "1_000", "200", "0"]))
QUERY = st.lists(st.tuples(
    st.sampled_from(["namespace", "all", "id", "keep", "limit", "since", "after", "status",
                     "operationId", "order", "credential", "x"]),
    st.one_of(NAME, JUNK_STRINGS, NUMBERS, st.sampled_from(
        ["1", "true", "yes", "faults,clock", "journal,metrics,nope", "RunCreate"]))),
    max_size=4)
HEADER_TEXT = st.text(alphabet=string.printable.strip() + " \u00e9\u00ff", max_size=16)
HEADERS = st.fixed_dictionaries({}, optional={
    "x-mockingbird-namespace": st.one_of(NAMES, HEADER_TEXT),
    "x-mockingbird-branch": st.one_of(NAMES, HEADER_TEXT),
    "x-mockingbird-at": st.one_of(JUNK_STRINGS.filter(lambda s: "\x00" not in s), HEADER_TEXT),
    "x-mockingbird-admin-key": st.one_of(st.just(KEY), HEADER_TEXT),
    "Content-Type": st.sampled_from(["application/json", "text/plain", "", "application/x-www"
                                     "-form-urlencoded", "application/json; charset=latin-1"])})


def seg(text):
    """Percent-encode one path segment, slashes included."""
    return quote(text, safe="") if text else text


@st.composite
def admin_requests(draw, service):
    """Draw (method, url, body bytes, headers) aimed at the admin plane of `service`."""
    known = ROUTES["shared"] + ROUTES[service]
    kind = draw(st.sampled_from(["route", "route", "route", "route", "segments"]))
    body_strategy = None
    if kind == "route":
        method, template, body_strategy = draw(st.sampled_from(known))
        relative = template
        for param, values in PARAMS.items():
            if "{" + param + "}" in relative:
                value = draw(values)
                relative = relative.replace("{" + param + "}", seg(value) if draw(
                    st.booleans()) else quote(value, safe="/"))
        if draw(st.integers(0, 5)) == 0:  # a wrong method on a known route
            method = draw(st.sampled_from(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
                                           "OPTIONS", "PROPFIND"]))
    else:
        method = draw(st.sampled_from(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
                                       "OPTIONS", "PROPFIND"]))
        parts = draw(st.lists(st.one_of(st.sampled_from(
            ["hermes", "github", "runs", "faults", "presets", "branches", "ns", "__admin", "",
             "health", "clock", "state", "credentials", "snapshots", "ui", "%2F", "%00", "..",
             "."]), NAME), max_size=5))
        relative = "/" + "/".join(seg(part) if part not in ("%2F", "%00") else part
                                  for part in parts)
    if draw(st.integers(0, 6)) == 0:
        relative += draw(st.sampled_from(["/", "//", "/x"]))
    path = "/__admin" + (relative if relative != "/" or draw(st.booleans()) else "")
    if draw(st.integers(0, 4)) == 0:  # the namespace carrier in front of the admin prefix
        # (a name decoding to a slash would end the carrier early and reach a provider route)
        carried = draw(NAME.filter(lambda name: "/" not in name))
        path = f"/__admin/ns/{quote(carried, safe='')}" + path
    carried = CARRIER.match(unquote(path))
    # Random segments can spell a carrier (`/__admin/ns/x/...`) that leads to a provider route:
    # those belong to the provider fuzz tests.
    assume(not carried or (carried.group(2) or "/").startswith("/__admin"))
    query = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in draw(QUERY))
    url = path + ("?" + query if query else "")
    choice = draw(st.integers(0, 9))
    if body_strategy is not None and choice < 5:
        body = json.dumps(draw(body_strategy)).encode()
    elif choice < 7:
        body = json.dumps(draw(JSON_VALUES)).encode()
    elif choice == 7:
        body = draw(SPECIAL_JSON)
    elif choice == 8:
        body = draw(st.binary(max_size=24))
    else:
        body = b""
    return method, url, body, draw(HEADERS)


def _app(tmp_path_factory, name, admin_key=None):
    db = tmp_path_factory.mktemp(f"admin-fuzz-{name}") / "emulators.sqlite3"
    app = webtest.TestApp(build_wsgi(SERVICES[name], Settings(db=str(db), admin_key=admin_key)),
                          lint=False, extra_environ={"HTTP_HOST": "127.0.0.1:8000"})
    headers = {"x-mockingbird-admin-key": KEY} if admin_key else {}
    if name == "hermes":
        res = app.post_json("/v1/runs", {"input": "synthetic prompt"}, status=202)
        app.run_id = res.json["run_id"]
    else:
        app.post_json("/__admin/github/repositories", graph_body(), headers=headers, status=201)
        app.run_id = "run_x"
    app.post_json("/__admin/faults", {"status": 418, "path": "/nowhere", "id": "fault_1"},
                  headers=headers, status=201)
    app.post_json("/__admin/checkpoints", {}, headers=headers, status=201)
    return app


@pytest.fixture(scope="module")
def open_apps(tmp_path_factory):
    return {name: _app(tmp_path_factory, name) for name in SERVICES}


@pytest.fixture(scope="module")
def keyed_apps(tmp_path_factory):
    return {name: _app(tmp_path_factory, name, admin_key=KEY) for name in SERVICES}


def send(app, request):
    method, url, body, headers = request
    url = url.replace("SEEDED_RUN", app.run_id)
    return app.request(url, method=method, body=body, headers=headers, expect_errors=True)


def relative_path(res):
    """The admin-relative path the runtime routed, from the PATH_INFO the request carried."""
    path = res.request.environ["PATH_INFO"]
    carrier = CARRIER.match(path)
    if carrier:
        path = carrier.group(2) or "/"
    return path[len("/__admin"):] or "/"


def is_shell(res, method):
    """A GET of the admin UI shell, the one admin route that answers HTML."""
    return method == "GET" and relative_path(res).rstrip("/") == "/ui"


def check_answer(res, service, method):
    """No 5xx, no leaked exception, JSON with the documented envelope on errors."""
    assert res.status_int < 500, (res.status, res.text)
    assert not LEAK.search(res.text), (res.status, res.text)
    if is_shell(res, method) and res.status_int == 200:
        assert res.headers["content-type"] == "text/html; charset=utf-8", res.headers
        return
    assert res.headers["content-type"].startswith("application/json"), res.headers
    if method == "HEAD":
        assert res.body == b""
        return
    body = json.loads(res.text)
    assert isinstance(body, dict), res.text
    if res.status_int >= 400:
        error = body.get("error")
        admin_shape = (isinstance(error, dict) and isinstance(error.get("type"), str)
                       and isinstance(error.get("message"), str))
        # GitHub's own controls answer their mock-only `{message, code}` (emulators/README.md).
        github_shape = (service == "github" and relative_path(res).startswith("/github/")
                        and isinstance(body.get("message"), str))
        assert admin_shape or github_shape, (res.status, res.text)


FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])


@pytest.mark.parametrize("service", sorted(SERVICES))
@FUZZ
@given(data=st.data())
def test_no_admin_request_fails_or_leaks(open_apps, service, data):
    method, url, body, headers = data.draw(admin_requests(service))
    headers.pop("x-mockingbird-admin-key", None)  # no key is set: a stray one must not matter
    res = send(open_apps[service], (method, url, body, headers))
    check_answer(res, service, method)
    assert res.status_int != 401


@pytest.mark.parametrize("service", sorted(SERVICES))
@FUZZ
@given(data=st.data())
def test_with_an_admin_key_only_health_is_open(keyed_apps, service, data):
    method, url, body, headers = data.draw(admin_requests(service))
    res = send(keyed_apps[service], (method, url, body, headers))
    check_answer(res, service, method)
    if headers.get("x-mockingbird-admin-key") == KEY:
        assert res.status_int != 401, (res.status, res.text)
        return
    health = method in ("GET", "HEAD") and relative_path(res).rstrip("/") == "/health"
    if health or is_shell(res, method):
        assert res.status_int in (200, 400), (res.status, res.text)  # 400: a bad namespace
    else:
        assert res.status_int == 401, (method, url, res.status, res.text)
        if method != "HEAD":
            assert res.json["error"]["type"] == "mockingbird_admin"


# Focused runs: hypothesis spreads one mixed generator thin, so every control with a body and
# every route that reads the query string also gets examples of its own.
BODY_ROUTES = [(service, method, template, body)
               for service in sorted(SERVICES)
               for method, template, body in ROUTES["shared"] + ROUTES[service]
               if body is not None]
# The query parameters each standard route reads, one test per pair.
QUERY_KEYS = {("GET", "/requests"): ("limit", "after", "since", "status", "operationId", "all"),
              ("POST", "/reset"): ("keep", "all"), ("DELETE", "/faults"): ("id", "all"),
              ("GET", "/faults"): ("all",), ("DELETE", "/requests"): ("all",),
              ("GET", "/metrics"): ("namespace",), ("DELETE", "/metrics"): ("namespace",),
              ("GET", "/clock"): ("namespace",), ("GET", "/timeline"): ("namespace",),
              ("GET", "/health"): ("namespace",),
              ("GET", "/state/notes"): ("limit", "after", "order"),
              ("DELETE", "/credentials"): ("credential",)}
QUERY_ROUTES = [(service, method, template, key) for service in sorted(SERVICES)
                for (method, template), keys in QUERY_KEYS.items()
                for key in dict.fromkeys((*keys, "namespace"))]
EDGE_NUMBERS = st.sampled_from(["\u00b2", "\u0661\u0662\u0663", "99999999999999999999",
                                "9223372036854775807", "9223372036854775808", "-1", "1e3",
                                "0x10", " 1", "+1", "1_000", "", "000", "2023-11-14T22:13:20Z"])
FOCUSED = settings(FUZZ, max_examples=40)


def fill(draw, template):
    for param, values in PARAMS.items():
        if "{" + param + "}" in template:
            template = template.replace("{" + param + "}", seg(draw(values)) or "x")
    return template


@pytest.mark.parametrize("service,method,template,body_strategy", BODY_ROUTES,
                         ids=[f"{s}-{m}-{t}" for s, m, t, _ in BODY_ROUTES])
@FOCUSED
@given(data=st.data())
def test_control_bodies_never_fail(open_apps, service, method, template, body_strategy, data):
    path = "/__admin" + fill(data.draw, template)
    kind = data.draw(st.integers(0, 5))
    if kind <= 2:
        body = json.dumps(data.draw(body_strategy)).encode()
    elif kind == 3:
        body = json.dumps(data.draw(JSON_VALUES)).encode()
    elif kind == 4:
        body = data.draw(SPECIAL_JSON)
    else:
        body = data.draw(st.binary(max_size=24))
    headers = {"Content-Type": "application/json"}
    if data.draw(st.booleans()):
        headers["x-mockingbird-namespace"] = data.draw(st.sampled_from(["w1", "w2", "bad ns"]))
    res = send(open_apps[service], (method, path, body, headers))
    check_answer(res, service, method)


@pytest.mark.parametrize("service,method,template,key", QUERY_ROUTES,
                         ids=[f"{s}-{m}-{t}-{k}" for s, m, t, k in QUERY_ROUTES])
@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_query_strings_never_fail(open_apps, service, method, template, key, data):
    value = data.draw(st.one_of(EDGE_NUMBERS, NUMBERS, JUNK_STRINGS, NAME))
    pairs = [*data.draw(QUERY), (key, value)]  # the last value of a key wins
    query = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in pairs)
    res = send(open_apps[service], (method, f"/__admin{template}?{query}", b"", {}))
    check_answer(res, service, method)
