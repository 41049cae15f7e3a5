"""Mounting under a prefix: routing, base_url, Location rebasing, carrier inside the mount."""
import pytest
import webtest

from emulators.runtime import PathDispatcher, Runtime, Settings
from tests.emulators.runtime.counter_service import service


def fallback(environ, start_response):
    start_response("200 OK", [("content-type", "text/plain")])
    return [b"chat:" + environ["PATH_INFO"].encode()]


@pytest.fixture
def mounted(db):
    runtime = Runtime(service, Settings(db=str(db)))
    return webtest.TestApp(PathDispatcher(fallback, {"/emulators/counter/": runtime}))


def test_prefixed_paths_reach_the_emulator_and_others_the_fallback(mounted):
    assert mounted.get("/emulators/counter/counter").json == {"value": 0}
    assert mounted.get("/emulators/counter/__admin/health").json["service"] == "counter"
    assert mounted.get("/emulators/counter-other/x").text == "chat:/emulators/counter-other/x"
    assert mounted.get("/chat.php").text == "chat:/chat.php"


def test_base_url_and_location_carry_the_prefix(mounted):
    info = mounted.get("/emulators/counter/info").json
    assert info["base_url"] == "http://localhost:80/emulators/counter"
    res = mounted.post_json("/emulators/counter/items", {"name": "a"})
    assert res.headers["location"] == "/emulators/counter/items/1"
    res = mounted.post_json("/emulators/counter/__admin/ns/w1/items", {"name": "b"})
    assert res.headers["location"] == "/emulators/counter/__admin/ns/w1/items/1"
    carried = mounted.get("/emulators/counter/__admin/ns/w1/info").json
    assert carried["base_url"] == "http://localhost:80/emulators/counter/__admin/ns/w1"
    assert carried["namespace"] == "w1"


def test_mount_prefix_is_validated():
    for bad in ("/", "relative", "/a/../b", "/a?x", "//host/p"):
        with pytest.raises(ValueError):
            PathDispatcher(fallback, {bad: fallback})
