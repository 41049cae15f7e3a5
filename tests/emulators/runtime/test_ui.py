"""The admin UI shell: an open HTML page and its locked manifest."""
import base64
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from emulators.runtime import PathDispatcher, Runtime, Server, Settings
from tests.emulators.runtime.conftest import ns
from testkit.counter_service import service

KEY = {"x-mockingbird-admin-key": "s3cret-key"}
HARNESS = Path(__file__).resolve().parent / "ui_shell.mjs"


def sha256(text):
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@pytest.mark.parametrize("path", ["/__admin/ui", "/__admin/ui/"])
def test_shell_is_open_html_even_with_an_admin_key(locked, path):
    res = locked.get(path)
    assert res.status_int == 200
    assert res.headers["content-type"] == "text/html; charset=utf-8"
    assert res.headers["x-mockingbird"] == "counter@1.2.3; ns=default"
    assert res.headers["x-content-type-options"] == "nosniff"
    assert res.text.startswith("<!doctype html>")
    assert "/ui/manifest" in res.text and "x-mockingbird-admin-key" in res.text


def test_shell_loads_nothing_from_elsewhere_and_its_policy_allows_its_own_script(app):
    res = app.get("/__admin/ui")
    assert not re.search(r"\b(src|href)=|https?://|//[a-z]", res.text)
    (script,) = re.findall(r"<script>(.*?)</script>", res.text, re.S)
    (style,) = re.findall(r"<style>(.*?)</style>", res.text, re.S)
    policy = res.headers["content-security-policy"]
    assert f"script-src {sha256(script)};" in policy
    assert f"style-src {sha256(style)};" in policy
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy


def test_only_get_of_the_shell_is_open(locked):
    locked.get("/__admin/ui/manifest", status=401)
    locked.post("/__admin/ui", status=401)
    locked.get("/__admin/ui/other", status=401)
    assert locked.post("/__admin/ui", headers=KEY, status=404).json["error"]["message"] == \
        "no admin route POST /ui; GET /__admin lists them"


def test_manifest_describes_the_service_prefix_and_routes(locked):
    body = locked.get("/__admin/ui/manifest?namespace=w1", headers=KEY).json
    routes = locked.get("/__admin", headers=KEY).json["routes"]
    assert body == {"service": "counter", "version": "1.2.3", "namespace": "w1",
                    "adminPrefix": "/__admin", "adminUi": "/__admin/ui",
                    "openapi": "/__admin/openapi.json", "routes": routes}
    assert "GET /ui/manifest" in routes and "POST /counter/seed" in routes


def test_manifest_follows_a_custom_admin_prefix(tmp_path):
    import webtest
    runtime = Runtime(service, Settings(db=str(tmp_path / "e.sqlite3"), admin_prefix="/_ctl"))
    app = webtest.TestApp(runtime)
    assert app.get("/_ctl/ui").content_type == "text/html"
    body = app.get("/_ctl/ui/manifest").json
    assert body["adminPrefix"] == "/_ctl" and body["adminUi"] == "/_ctl/ui"
    assert app.get("/_ctl/health").json["adminUi"] == "/_ctl/ui"


# -- the page's own script, run by Node against a served emulator ------------------------------
@pytest.fixture
def node():
    if not shutil.which("node"):
        pytest.skip("node is not on this machine")
    return shutil.which("node")


@pytest.fixture
def served(tmp_path):
    runtime = Runtime(service, Settings(db=str(tmp_path / "e.sqlite3"), admin_key="s3cret-key"))
    mounted = PathDispatcher(runtime, {"/emulators/counter": runtime})
    with Server(mounted, runtime) as server:
        yield server


def run_page(node, url, key, click=""):
    done = subprocess.run([node, str(HARNESS), url, key, click], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("base", ["", "/emulators/counter"])
def test_the_page_lists_namespaces_routes_and_the_journal(node, served, base):
    import urllib.request
    for path, headers in (("/info", {}), ("/items/9", {}), ("/counter", ns("w1"))):
        request = urllib.request.Request(served.url + base + path, headers=headers)
        try:
            urllib.request.urlopen(request).close()
        except urllib.error.HTTPError:
            pass
    shown = run_page(node, f"{served.url}{base}/__admin/ui", "s3cret-key", "w1")
    first, clicked = shown["first"], shown["clicked"]
    assert first["title"] == "counter@1.2.3 admin" and first["status"] == ""
    assert first["namespace"] == "default" and first["namespaces"] == ["default", "w1"]
    assert first["routes"] == served.runtime.admin.route_keys()
    assert [line.split(" ", 1)[1] for line in first["journal"]] == [
        "GET /items/9 404 getItem", "GET /info 200 getInfo"]
    assert clicked["namespace"] == "w1"
    assert [line.split(" ", 1)[1] for line in clicked["journal"]] == [
        "GET /counter 200 getCounter"]


def test_the_page_shows_the_admin_error_without_the_key(node, served):
    shown = run_page(node, f"{served.url}/__admin/ui", "")["first"]
    assert shown["status"] == "missing or wrong x-mockingbird-admin-key"
    assert shown["routes"] == [] and shown["journal"] == []
