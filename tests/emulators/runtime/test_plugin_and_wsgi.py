"""The pytest fixtures (loaded by the package's entry point) serve the registered emulators;
wsgi.py mounts them beside the chat app."""
import importlib

import requests
import webtest


def test_github_fixture_serves_github_and_resets_between_tests(github_emulator):
    health = requests.get(github_emulator.url + "/__admin/health").json()
    assert health["service"] == "github"
    requests.post(github_emulator.admin_url + "/clock", json={"set": 5, "freeze": True})
    assert requests.get(github_emulator.admin_url + "/clock").json()["now"] == 5
    github_emulator.namespace("taken").clock(set=7, freeze=True)


def test_github_fixture_again_starts_clean(github_emulator):
    assert requests.get(github_emulator.admin_url + "/clock").json()["frozen"] is False
    assert github_emulator.namespace("taken").clock()["frozen"] is False  # wiped after its test


def test_hermes_fixture_serves_hermes(hermes_emulator):
    assert requests.get(hermes_emulator.url + "/__admin/health").json()["service"] == "hermes"


def test_wsgi_mounts_both_emulators_and_leaves_the_rest_to_chat(tmp_path, monkeypatch):
    monkeypatch.setenv("EMULATORS_DB", str(tmp_path / "wsgi.sqlite3"))
    import wsgi
    wsgi = importlib.reload(wsgi)
    app = webtest.TestApp(wsgi.application)
    for name in ("hermes", "github"):
        res = app.get(f"/emulators/{name}/__admin/health")
        assert res.json["service"] == name
        assert res.headers["x-mockingbird"].startswith(f"{name}@")
        alone = webtest.TestApp(getattr(wsgi, name)).get("/__admin/health")
        assert alone.json["service"] == name
    assert wsgi.hermes.db.path == str(tmp_path / "wsgi.sqlite3")
    assert "x-mockingbird" not in app.get("/emulators", expect_errors=True).headers


def test_the_monoliths_root_sends_a_browser_to_the_chat_page(tmp_path, monkeypatch):
    """`make serve` announces http://127.0.0.1:8000: that root leads to the page."""
    monkeypatch.setenv("EMULATORS_DB", str(tmp_path / "wsgi.sqlite3"))
    monkeypatch.setenv("NEWOS4_DATA_DIR", str(tmp_path / "data"))
    import wsgi
    app = webtest.TestApp(importlib.reload(wsgi).application)
    for answer in (app.get("/", status=302), app.head("/", status=302)):
        assert answer.headers["Location"].endswith("/spaces/newos4/")
    assert "Send" in app.get("/").follow().text
    assert app.post("/", status=404).json == {"success": False, "error": "not found"}
    assert app.get("/nope", status=404).json == {"success": False, "error": "not found"}
