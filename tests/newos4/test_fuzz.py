"""Property test of post.php and poll.php: arbitrary headers, bodies and query strings never
give a 5xx, a traceback, a non-JSON answer, or a file for a rejected request."""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

import webtest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from spaces.newos4.app import POLL_PATH, POST_PATH, create_app
from spaces.newos4.clock import FixedClock
from spaces.newos4.settings import Settings

from .conftest import T0

header_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=80)
tokens = st.one_of(st.just("ab" * 32), st.text("0123456789abcdefABCDEF", max_size=70),
                   header_text)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=50),
    lambda inner: (st.lists(inner, max_size=4)
                   | st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=10)
bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"text": json_values},
                          optional={"kind": st.sampled_from(["operator", "agent", "hermes", ""])
                                    | json_values}).map(lambda v: json.dumps(v).encode()),
)
queries = st.one_of(st.just(""), st.text(max_size=40).map(
    lambda q: "?" + q.encode("utf-8", "surrogatepass").decode("latin-1")),
    st.text("0123456789-+.e", max_size=15).map(lambda v: f"?since={v}"))
extra_headers = st.dictionaries(
    st.sampled_from(["X-Forwarded-For", "Content-Type", "X-Chat-Token-2", "Accept", "Cookie"]),
    header_text, max_size=3)

DATA = Path(tempfile.mkdtemp(prefix="chat-fuzz-"))
atexit.register(shutil.rmtree, DATA, True)
APP = webtest.TestApp(create_app(Settings(data_dir=DATA, max_threads=5), clock=FixedClock(T0)),
                      lint=False)


def thread_files():
    return {p.name for p in (DATA / "chat").glob("*.json")} if (DATA / "chat").exists() else set()


def check(answer):
    assert answer.status_int < 500, answer.body
    assert answer.content_type == "application/json"
    body = answer.json
    assert isinstance(body, dict) and isinstance(body["success"], bool)
    assert b"Traceback" not in answer.body and b'File "' not in answer.body


@hsettings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(token=tokens, body=bodies, query=queries, headers=extra_headers,
       method=st.sampled_from(["POST", "POST", "POST", "GET", "PUT", "DELETE"]))
def test_post_php_never_fails_or_writes_for_a_rejected_request(token, body, query, headers,
                                                               method):
    before = thread_files()
    answer = APP.request(POST_PATH + query, method=method, body=body, expect_errors=True,
                         headers={"X-Chat-Token": token, **headers})
    check(answer)
    if answer.status_int != 201:
        assert thread_files() == before


@hsettings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(token=tokens, query=queries, headers=extra_headers)
def test_poll_php_never_fails_and_never_writes(token, query, headers):
    before = sorted(p for p in DATA.rglob("*"))
    answer = APP.get(POLL_PATH + query, headers={"X-Chat-Token": token, **headers},
                     expect_errors=True)
    check(answer)
    assert sorted(p for p in DATA.rglob("*")) == before
