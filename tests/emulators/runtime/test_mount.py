"""Mounting under a prefix: routing, base_url, Location rebasing, carrier inside the mount."""
import pytest
import webtest

from emulators.runtime import PathDispatcher, Runtime, Settings
from testkit.counter_service import service


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


# -- response rewriting: Link, Set-Cookie, HTML -----------------------------------------------
HERE = "http://localhost:80"


def test_link_and_location_on_this_origin_are_rebased_others_left_alone(mounted):
    res = mounted.get("/emulators/counter/links")
    assert res.headers["link"] == (
        '</emulators/counter/items?page=2>; rel="next",'
        f' <{HERE}/emulators/counter/items?page=3>; rel="last",'
        ' <https://other.example/items>; rel="other", <//cdn.example/x>; rel="cdn",'
        f' <{HERE}/emulators/counter/>; rel="home"')
    assert res.headers["location"] == f"{HERE}/emulators/counter/items/7"
    carried = mounted.get("/emulators/counter/__admin/ns/w1/links")
    assert carried.headers["location"] == f"{HERE}/emulators/counter/__admin/ns/w1/items/7"


def test_each_set_cookie_path_is_rebased_and_kept_apart(mounted):
    res = mounted.get("/emulators/counter/links")
    assert res.headers.getall("set-cookie") == [
        "session=abc; HttpOnly; Path=/emulators/counter/",
        "pref=1; HttpOnly; Path=/emulators/counter/items; Secure",
        "free=1; Max-Age=60"]


def test_html_links_are_rebased_and_stale_headers_dropped(mounted):
    res = mounted.get("/emulators/counter/page")
    assert res.body == (
        b'<a href="/emulators/counter/items/1">item</a>'
        b' <a HREF=\'/emulators/counter/counter\'>counter</a>'
        b' <img src=/emulators/counter/logo.png> <form action="/emulators/counter/items"></form>'
        b' <a href="//cdn.example/x">cdn</a> <a href="https://other.example/y">other</a>'
        b' <a href="relative/z">rel</a> <div data-src="/lazy"></div>'
        b' <style>body{background:url( "/emulators/counter/bg.png" )}</style>'
        b' <a href="/emulators/counter/already">mounted</a>')
    assert "etag" not in res.headers and "content-encoding" not in res.headers
    assert res.headers["content-length"] == str(len(res.body))


def test_gzipped_html_is_decoded_then_rebased(mounted):
    plain = mounted.get("/emulators/counter/page").body
    res = mounted.get("/emulators/counter/page?gzip=1")
    assert res.body == plain and "content-encoding" not in res.headers


def test_binary_streamed_head_and_link_free_html_pass_untouched(mounted):
    from testkit.counter_service import PAGE
    assert mounted.get("/emulators/counter/blob").body == PAGE
    streamed = mounted.get("/emulators/counter/page?stream=1")
    assert streamed.body == PAGE.replace(b"PREFIX", b"/emulators/counter")
    assert streamed.headers["etag"] == '"page-v1"'
    head = mounted.head("/emulators/counter/page")
    assert head.headers["etag"] == '"page-v1"' and head.headers["content-length"] != "0"
    plain = mounted.get("/emulators/counter/page?plain=1")
    assert plain.headers["etag"] == '"page-v1"' and plain.body.startswith(b'<a href="https:')


def test_nothing_is_rewritten_at_the_root(app):
    from testkit.counter_service import PAGE
    res = app.get("/page")
    assert res.body == PAGE.replace(b"PREFIX", b"") and res.headers["etag"] == '"page-v1"'
    links = app.get("/links")
    assert links.headers.getall("set-cookie")[0] == "session=abc; HttpOnly; Path=/"
    assert links.headers["link"].startswith('</items?page=2>; rel="next"')


def test_rebase_url_leaves_paths_under_the_prefix_and_other_origins():
    from emulators.runtime.mount import rebase_url
    here, prefix = "http://h:8000", "/mock/google"
    assert rebase_url("/", prefix) == "/mock/google/"
    assert rebase_url("/mock/google", prefix) == "/mock/google"
    assert rebase_url("/mock/google?x=1", prefix) == "/mock/google?x=1"
    assert rebase_url("/mock/google-other/x", prefix) == "/mock/google/mock/google-other/x"
    assert rebase_url("//h:8000/x", prefix, here) == "//h:8000/x"
    assert rebase_url("http://h:8000/x", prefix, here) == "http://h:8000/mock/google/x"
    assert rebase_url("HTTP://H:8000?q", prefix, here) == "http://h:8000/mock/google/?q"
    assert rebase_url("http://h:80001/x", prefix, here) == "http://h:80001/x"
    assert rebase_url("http://h:8000.evil/x", prefix, here) == "http://h:8000.evil/x"
    assert rebase_url("https://h:8000/x", prefix, here) == "https://h:8000/x"
    assert rebase_url("x/y", prefix, here) == "x/y"
