"""The fleet starts and stops as one: its files, health, a child that cannot start, the config
file and its precedence, and the CLI as a real process."""
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest
import requests

from emulators import start_fleet
from emulators.cli import main
from emulators.runtime.fleet.start import FleetError, FleetStartError
from emulators.runtime.fleet.config import ConfigError, plan
from tests.emulators.runtime.test_cli import clean_env
from testkit.servers import REPO, unused_port
from testkit.shell import run_as_user, sh_blocks, user_env

from .conftest import BOTH, W1


# -- start-up, files, health ----------------------------------------------------------------
def test_start_publishes_0600_files_and_removes_only_its_own_on_close(tmp_path):
    ready, connections = tmp_path / "ready.json", tmp_path / "conn.json"
    ready.write_text("stale")
    with start_fleet(BOTH, db=str(tmp_path / "f.db"), ready_file=str(ready),
                     connections_file=str(connections)) as fleet:
        for path in (ready, connections):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
        manifest = json.loads(ready.read_text())
        assert manifest == fleet.manifest
        control = fleet.url
        hermes, github = fleet.children["hermes"].url, fleet.children["github"].url
        assert manifest == {
            "version": 1, "state": "ready", "pid": os.getpid(), "id": fleet.id,
            "startedAt": fleet.started_at, "adminBase": control + "/__admin/fleet",
            "healthUrl": control + "/__admin/health",
            "services": {name: {
                "protocol": "http", "url": url, "healthUrl": url + "/__admin/health",
                "adminUrl": url + "/__admin",
                "namespaces": {"header": "x-mockingbird-namespace",
                               "path": "/__admin/ns/{name}"},
                "processReady": True, "protocolReady": True}
                for name, url in (("hermes", hermes), ("github", github))}}
        assert json.loads(connections.read_text()) == {
            "version": 1, "id": fleet.id, "pid": os.getpid(),
            "services": {"hermes": {"url": hermes}, "github": {"url": github}}}
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
        health = requests.get(control + "/__admin/health")
        assert (health.status_code, health.json()) == (200, {
            "status": "ready", "id": fleet.id, "services": {name: {
                "processReady": True, "protocolReady": True, "status": "ready", "url": url}
                for name, url in (("hermes", hermes), ("github", github))}})
        head = requests.head(control + "/__admin/health")
        assert (head.status_code, head.content) == (200, b"")
        assert requests.get(hermes + "/v1/models").status_code == 200
        connections.write_text(json.dumps({"id": "another-fleet"}))  # no longer ours
    assert not ready.exists()
    assert json.loads(connections.read_text()) == {"id": "another-fleet"}
    for url in (control, hermes, github):
        with pytest.raises(requests.ConnectionError):
            requests.get(url + "/__admin/health", timeout=2)


def test_health_answers_503_when_a_service_stops(fleet):
    fleet.children["github"].server.close()
    health = requests.get(fleet.url + "/__admin/health")
    assert health.status_code == 503
    body = health.json()
    assert body["status"] == "failed"
    assert body["services"]["github"] == {"processReady": True, "protocolReady": False,
                                          "status": "failed",
                                          "url": fleet.children["github"].url}
    assert body["services"]["hermes"]["status"] == "ready"


def test_a_service_that_cannot_start_closes_every_listener_started(tmp_path):
    hermes_port = unused_port()
    ready = tmp_path / "ready.json"
    ready.write_text("{}")
    config = {"services": {"hermes": {"port": hermes_port}, "nope": {"port": 0}}}
    with pytest.raises(FleetStartError) as failed:
        start_fleet(config, db=str(tmp_path / "f.db"), ready_file=str(ready))
    assert str(failed.value) == "service nope failed to start; all started listeners were closed"
    assert isinstance(failed.value.cause, LookupError)
    assert not ready.exists()  # a stale file goes before boot, whatever happens next
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", hermes_port), timeout=1).close()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(FleetStartError, match="^service github failed") as failed:
            start_fleet({"services": {"hermes": {"port": 0}, "github": {"port": port}}},
                        db=str(tmp_path / "f.db"))
        assert str(failed.value.cause) == (f"cannot listen on 127.0.0.1:{port}: Address"
                                           " already in use")
        with pytest.raises(FleetError, match="for the fleet control: Address already in use;"
                                             " all started listeners were closed$"):
            start_fleet({"services": {"hermes": {"port": hermes_port}},
                         "control": {"port": port}}, db=str(tmp_path / "f.db"))
    with pytest.raises(FleetError, match=f"^cannot write {tmp_path}/no/ready.json: No such file"
                                         " or directory; all started listeners were closed$"):
        start_fleet({"services": {"hermes": {"port": hermes_port}}}, db=str(tmp_path / "f.db"),
                    ready_file=str(tmp_path / "no" / "ready.json"))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", hermes_port), timeout=1).close()
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(FleetError, match=f"^cannot open {tmp_path}/file/f.db: "):
        start_fleet(BOTH, db=str(tmp_path / "file" / "f.db"))


@pytest.mark.parametrize("config, message", [
    ([], "config: expected a JSON object"),
    ({"services": {}}, "config must contain at least one service"),
    ({}, "config must contain at least one service"),
    ({"services": {"Hermes": {}}}, 'config: invalid service name "Hermes": it must match'
                                   " /^[a-z0-9]+(?:-[a-z0-9]+)*$/"),
    ({"services": {"hermes": {"protocol": "postgres"}}},
     'config: services.hermes.protocol: only "http" services are served here (got "postgres")'),
    ({"services": {"hermes": {"fixtures": {}}}}, 'config: services.hermes: unsupported field'
     ' "fixtures" (known: protocol, port, host, adminPrefix, adminKey, seed)'),
    ({"services": {"hermes": {"port": 70000}}},
     "config: services.hermes.port must be a TCP port from 0 to 65535 (got 70000)"),
    ({"services": {"hermes": {"port": "1"}}},
     'config: services.hermes.port must be a TCP port from 0 to 65535 (got "1")'),
    ({"services": {"hermes": {"adminPrefix": "admin"}}}, "config: services.hermes.adminPrefix"
     ' must be an absolute path of plain segments, like /__admin (got "admin")'),
    ({"services": {"hermes": {"adminKey": ""}}},
     "config: services.hermes.adminKey must be a non-empty string"),
    ({"services": {"hermes": {"seed": True}}},
     "config: services.hermes.seed must be an integer or a string"),
    ({"services": {"hermes": []}}, "config: services.hermes must be an object"),
    ({"services": {"hermes": {}}, "log": "loud"},
     'config: log must be pretty, json or off (got "loud")'),
    ({"services": {"hermes": {}}, "namespace": "a b"},
     "config: namespace must match /^[A-Za-z0-9_.-]{1,64}$/"),
    ({"services": {"hermes": {}}, "control": {"port": -1}},
     "config: control.port must be a TCP port from 0 to 65535 (got -1)"),
    ({"services": {"hermes": {}}, "control": {"tls": True}},
     'config: control: unsupported field "tls" (known: host, port)'),
    ({"services": {"hermes": {}}, "extra": 1}, 'config: unsupported field "extra" (known:'
     " services, log, adminPrefix, adminKey, namespace, control, db)"),
])
def test_a_bad_config_is_refused_before_anything_starts(config, message):
    with pytest.raises(ConfigError) as refused:
        plan(config)
    assert str(refused.value) == message


def test_precedence_of_admin_key_prefix_log_and_db():
    resolved = plan({"services": {"hermes": {"adminKey": "own", "adminPrefix": "/_h/"},
                                  "github": {"port": 9, "seed": "s"}},
                     "adminKey": "file", "adminPrefix": "/_file"},
                    admin_key="cli", admin_prefix="/_cli", log="json", db="cli.db")
    hermes, github = resolved.children
    assert (resolved.admin_key, resolved.admin_prefix, resolved.log, resolved.db) == \
        ("file", "/_file", "json", "cli.db")
    assert (hermes.admin_key, hermes.admin_prefix, hermes.port) == ("own", "/_h", None)
    assert (github.admin_key, github.admin_prefix, github.port, github.seed) == \
        ("file", "/_file", 9, "s")
    fallback = plan({"services": {"hermes": {}}, "log": "off", "db": "file.db"},
                    admin_key="cli", admin_prefix="/_cli", log="json", db="cli.db")
    assert (fallback.admin_key, fallback.admin_prefix, fallback.log, fallback.db) == \
        ("cli", "/_cli", "off", "file.db")
    assert fallback.children[0].admin_key == "cli"


# -- the control routes ---------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_readme_runs_top_to_bottom_as_a_user_runs_it(tmp_path):
    """Both walk-throughs of emulators/README.md in one shell with no venv activated: the
    first starts and stops its GitHub emulator, so the fleet then finds its ports free."""
    ports = {8827: unused_port(), 8828: unused_port(), 8829: unused_port()}
    done = run_as_user("\n".join(sh_blocks("emulators/README.md", "## Using the emulators")),
                       user_env(TMPDIR=str(tmp_path)), ports)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines()
             if not line.startswith(("github ", "hermes ", "control ", "fleet "))]
    codes = [line for line in lines if re.fullmatch(r"\d{3}", line)]
    assert codes == ["200", "404", "503", "200", "200", "404", "404", "200"]
    assert '"now":1893456900000' in done.stdout and '"requests":[' in done.stdout
    health, clock, reset, gone, restored, back, final = lines[-7:]
    assert '"status":"ready"' in health and '"now":1893456000000' in clock
    assert (gone, back) == ("404", "200")
    for answer in (reset, restored):
        assert json.loads(answer)["status"] == "ok"
    assert (json.loads(final)["now"], json.loads(final)["frozen"]) == (1_893_456_000_000, True)


# -- the command line -----------------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["serve"], "choose a service (hermes or github), or a fleet with --config FILE"),
    (["serve", "hermes", "--config", "f.json"], "give a service or --config FILE, not both"),
    (["serve", "hermes", "--ready-json"], "--ready-json only applies to a fleet (--config FILE)"),
    (["serve", "github", "--ready-file", "r"],
     "--ready-file only applies to a fleet (--config FILE)"),
    (["serve", "--config", "f.json", "--port", "1"],
     "--port does not apply with --config: set it per service in the file"),
    (["serve", "--config", "f.json", "--host", "::1"],
     "--host does not apply with --config: set it per service in the file"),
])
def test_cli_fleet_options_are_strict(capsys, args, message):
    assert main(args, environ={}) == 2
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"python -m emulators serve: error: {message}"


def test_cli_config_errors_exit_1(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # keep pytest's own handlers
    assert main(["serve", "--config", str(tmp_path / "none.json")], environ={}) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot read config {tmp_path}/none.json:")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"services": {"hermes": {"protocol": "redis"}}}))
    assert main(["serve", "--config", str(bad)], environ={}) == 1
    assert capsys.readouterr().err == ('error: config: services.hermes.protocol: only "http"'
                                       ' services are served here (got "redis")\n')


def test_cli_prints_start_up_lines_and_stops_on_a_signal(capsys, monkeypatch, tmp_path):
    handlers, done = {}, {}
    monkeypatch.setattr(signal, "signal", lambda signum, handler: handlers.setdefault(
        signum, handler))
    config = tmp_path / "fleet.json"
    config.write_text(json.dumps({**BOTH, "adminPrefix": "/_ctl"}))
    thread = threading.Thread(target=lambda: done.setdefault("rc", main(
        ["serve", "--config", str(config), "--db", str(tmp_path / "f.db"), "--admin-key", "k",
         "--log", "off"], environ={})))
    thread.start()
    out = ""
    try:
        deadline = time.monotonic() + 10
        while "fleet state:" not in out and time.monotonic() < deadline:
            time.sleep(0.02)
            out += capsys.readouterr().out
    finally:
        while signal.SIGTERM not in handlers and thread.is_alive():
            time.sleep(0.01)
        handlers[signal.SIGTERM]()
        thread.join(10)
    assert done["rc"] == 0
    lines = out.splitlines()
    assert len(lines) == 8, out
    hermes, github, control = (line.rsplit(" ", 1)[1] for line in (lines[0], lines[2], lines[4]))
    lock = "(x-mockingbird-admin-key required)"
    assert lines == [f"hermes emulator listening on {hermes}",
                     f"hermes admin: {hermes}/_ctl {lock}",
                     f"github emulator listening on {github}",
                     f"github admin: {github}/_ctl {lock}",
                     f"fleet control listening on {control}",
                     f"fleet health: GET {control}/_ctl/health",
                     f"fleet admin: {control}/_ctl/fleet {lock}", f"fleet state: {tmp_path}/f.db"]
    with pytest.raises(requests.ConnectionError):
        requests.get(control + "/_ctl/health", timeout=2)


def test_cli_serves_a_fleet_until_sigterm(tmp_path):
    config, ready, connections = (tmp_path / name for name in ("fleet.json", "ready.json",
                                                               "conn.json"))
    config.write_text(json.dumps({"services": {"hermes": {"port": 0}, "github": {"port": 0}},
                                  "log": "json"}))
    connections.write_text("stale")
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulators", "serve", "--config", str(config), "--ready-json",
         "--ready-file", str(ready), "--connections-file", str(connections),
         "--db", str(tmp_path / "f.db")], cwd=REPO, env=clean_env(EMULATORS_ADMIN_KEY="k"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        manifest = json.loads(proc.stdout.readline())
        assert manifest == json.loads(ready.read_text())
        assert manifest["id"] == json.loads(connections.read_text())["id"]
        assert manifest["pid"] == proc.pid
        assert stat.S_IMODE(ready.stat().st_mode) == 0o600
        assert stat.S_IMODE(connections.stat().st_mode) == 0o600
        assert requests.get(manifest["healthUrl"]).json()["status"] == "ready"
        assert requests.get(manifest["adminBase"] + "/metrics").status_code == 401  # env key
        reset = requests.post(manifest["adminBase"] + "/namespaces/w1/reset",
                              headers={"x-mockingbird-admin-key": "k"})
        assert reset.status_code == 200
        github = manifest["services"]["github"]["url"]
        requests.get(github + "/repos/octo/demo", headers=W1)
        logged = json.loads(proc.stdout.readline())
        assert (logged["service"], logged["path"], logged["namespace"], logged["status"]) == \
            ("github", "/repos/octo/demo", "w1", 404)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr.read() == ""
    assert not ready.exists() and not connections.exists()
    with pytest.raises(requests.ConnectionError):
        requests.get(manifest["healthUrl"], timeout=2)


def test_cli_start_failure_exits_1_after_deleting_stale_files(tmp_path):
    config, ready = tmp_path / "fleet.json", tmp_path / "ready.json"
    config.write_text(json.dumps({"services": {"hermes": {"port": 0}, "ghost": {"port": 0}}}))
    ready.write_text('{"id": "old"}')
    done = subprocess.run(
        [sys.executable, "-m", "emulators", "serve", "--config", str(config), "--ready-file",
         str(ready), "--db", str(tmp_path / "f.db")], cwd=REPO, env=clean_env(),
        capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("error: service ghost failed to start; all started listeners were"
                           " closed (unknown emulator 'ghost'; choose one of hermes, github)\n")
    assert not ready.exists()
