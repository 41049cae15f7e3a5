"""Request bodies: one size limit and one nesting limit for the pipeline and the admin plane."""
import io
import json

import pytest

from emulators.runtime.bodies import (MAX_ADMIN_BODY, MAX_BODY, MAX_DEPTH, BodyTooLarge,
                                      InvalidJSON, LimitedInput, TooDeep, loads, read_body)
from emulators.runtime.settings import Settings
from emulators.pytest_plugin import test_app
from testkit.counter_service import service

DEEP = b"[" * 5000 + b"]" * 5000
DEEP_OBJECT = b'{"a":' * 3000 + b"1" + b"}" * 3000


def nested(depth):
    return "[" * depth + "]" * depth


def test_loads_takes_max_depth_and_refuses_one_more_level():
    assert loads(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    assert loads('{"a": ' * MAX_DEPTH + "1" + "}" * MAX_DEPTH)
    with pytest.raises(TooDeep):
        loads(nested(MAX_DEPTH + 1))
    with pytest.raises(TooDeep):
        loads('{"a": [' * 60 + "1" + "]}" * 60)


def test_loads_turns_recursion_and_decoding_errors_into_value_errors():
    with pytest.raises(TooDeep):
        loads(DEEP)  # json's own RecursionError, which is no ValueError
    with pytest.raises(InvalidJSON):
        loads(b"\xff{}")
    with pytest.raises(ValueError):
        loads("{nope")
    assert loads('"[[[[" ') == "[[[["  # brackets inside strings are not nesting


def test_declared_length_past_the_limit_is_refused_before_reading():
    class Unreadable:
        def read(self, size=-1):
            raise AssertionError("the body was read")
    stream = LimitedInput(Unreadable(), MAX_BODY + 1)
    with pytest.raises(BodyTooLarge):
        stream.read()


def test_chunked_body_past_the_limit_is_refused_after_limit_plus_one_bytes():
    source = io.BytesIO(b"x" * 50)
    with pytest.raises(BodyTooLarge):
        LimitedInput(source, None, limit=20).read()
    assert source.tell() == 21
    assert LimitedInput(io.BytesIO(b"x" * 20), None, limit=20).read() == b"x" * 20


def test_read_never_asks_for_more_than_the_declared_length():
    class Strict(io.BytesIO):
        def read(self, size=-1):
            assert 0 <= size <= 5
            return super().read(size)
    environ = {"CONTENT_LENGTH": "5", "wsgi.input": Strict(b"hello and more")}
    assert read_body(environ) == b"hello"


def test_deep_json_is_400_in_the_admin_envelope_on_every_admin_body(app):
    for method, path in (("POST", "/__admin/faults"), ("POST", "/__admin/clock"),
                         ("PUT", "/__admin/state/items/1"), ("POST", "/__admin/counter/seed")):
        for body in (DEEP, DEEP_OBJECT):
            res = app.request(path, method=method, body=body, status=400,
                              headers={"content-type": "application/json"})
            assert res.json == {"error": {"type": "mockingbird_admin", "message":
                                          f"request body nests deeper than {MAX_DEPTH} levels"}}


@pytest.fixture
def small(db, wall):
    """The counter service with limits of 1000 bytes (provider) and 3000 (admin plane)."""
    return test_app(service, db, wall=wall, max_body=1000, max_admin_body=3000)


def test_admin_body_past_its_limit_is_413_and_nothing_is_stored(small):
    value = json.dumps({"blob": "x" * 2990}).encode()
    res = small.put("/__admin/state/items/big", value, status=413,
                    headers={"content-type": "application/json"})
    assert res.json == {"error": {"type": "mockingbird_admin",
                                  "message": "request body is larger than 3000 bytes"}}
    assert small.get("/__admin/state/items").json["records"] == []
    small.post_json("/items", {"name": "a"})
    small.put("/__admin/state/items/1", json.dumps({"value": {"name": "x" * 2900}}).encode(),
              headers={"content-type": "application/json"})
    assert small.get("/items/1").json["name"] == "x" * 2900


def test_provider_body_past_its_limit_is_413_when_the_provider_reads_it(small):
    res = small.post("/items", b"{" + b" " * 1000 + b"}", status=413,
                     headers={"content-type": "application/json"})
    assert res.json["error"]["message"] == "request body is larger than 1000 bytes"
    assert small.get("/items").json["items"] == []
    small.post_json("/items", {"name": "a"})
    small.put("/__admin/state/items/1", json.dumps({"value": {"name": "x" * 1500}}).encode(),
              headers={"content-type": "application/json"})  # the admin plane's limit is apart


def test_the_defaults_fit_a_large_seed_on_the_admin_plane_and_no_more_on_providers(app):
    assert MAX_ADMIN_BODY >= 5 * 11_000_000  # a 100,000-commit history is about 11 MB of JSON
    assert app.runtime.emulator.settings.max_admin_body == MAX_ADMIN_BODY
    assert app.runtime.emulator.settings.max_body == MAX_BODY == 10_000_000
    res = app.post("/items", b"{" + b" " * MAX_BODY + b"}", status=413,
                   headers={"content-type": "application/json"})
    assert res.json["error"]["message"] == f"request body is larger than {MAX_BODY} bytes"


@pytest.mark.parametrize("name", ["EMULATORS_MAX_BODY", "EMULATORS_MAX_ADMIN_BODY"])
@pytest.mark.parametrize("value", ["0", "-5", "10MB", "1e6", " 100", "\u0661\u0662"])
def test_a_bad_limit_is_refused_in_one_line_naming_the_variable(name, value):
    with pytest.raises(ValueError) as refused:
        Settings.from_env({name: value})
    message = str(refused.value)
    assert message.startswith(f"{name} must be a number of bytes, 1 or more")
    assert repr(value) in message and "\n" not in message


def test_the_limits_come_from_the_environment():
    settings = Settings.from_env({"EMULATORS_MAX_BODY": "2048",
                                  "EMULATORS_MAX_ADMIN_BODY": "100000000"})
    assert (settings.max_body, settings.max_admin_body) == (2048, 100_000_000)
    assert Settings.from_env({"EMULATORS_MAX_BODY": ""}).max_body == MAX_BODY


def test_delete_faults_answers_exactly_status_ok(app):
    app.post_json("/__admin/faults", {"operationId": "getCounter", "status": 503})
    assert app.delete("/__admin/faults").json == {"status": "ok"}
    assert app.get("/__admin/faults").json["faults"] == []


def test_empty_clock_post_is_400_expected_a_json_object(app):
    for body in (b"", b"  ", b"[]"):
        res = app.post("/__admin/clock", body, status=400,
                       headers={"content-type": "application/json"})
        assert res.json["error"]["message"] == "expected a JSON object"
    assert app.post_json("/__admin/clock", {}).json["frozen"] is False
