"""deploy/ works as shipped: the nginx site in front of real gunicorn, the systemd unit through
systemd-analyze, logrotate rotating the relay log, the cron lines run as written. Each tool
missing on the machine skips its test with the reason (fails it in CI, where `make test` installs
nginx and logrotate)."""
import collections
import concurrent.futures
import contextlib
import os
import re
import socket
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests

from spaces.newos4.app import HEALTH_PATH, POLL_PATH, POST_PATH
from testkit.servers import REPO, gunicorn, unused_port

DEPLOY = REPO / "deploy"
PRODUCTION = "spaces.newos4.wsgi:application"  # the chat alone, as the systemd unit serves it
pytestmark = pytest.mark.gunicorn


def needs(tool):
    found = shutil.which(tool) or next((p for p in (f"/usr/sbin/{tool}", f"/sbin/{tool}")
                                        if os.access(p, os.X_OK)), None)
    if not found:
        if os.environ.get("CI", "").lower() in ("true", "1"):  # `make test` installs them
            pytest.fail(f"CI must run the deploy tests: {tool} is not installed", pytrace=False)
        pytest.skip(f"{tool} is not installed")
    return found


@pytest.fixture
def behind_nginx(tmp_path):
    """gunicorn as shipped, and nginx with deploy/nginx/newos4.conf in front of it.

    Only the ports change, and nginx reaches gunicorn from 127.0.0.2 (the one address listed in
    NEWOS4_TRUSTED_PROXIES), so the test client on 127.0.0.1 is an untrusted client as on the
    internet."""
    needs("nginx")
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "NEWOS4_TRUSTED_PROXIES": "127.0.0.2",
           "NEWOS4_RATE_IP": "2"}
    with gunicorn(PRODUCTION, env=env, workers=2) as upstream:
        with nginx_site(tmp_path, upstream) as url:
            yield url


@contextlib.contextmanager
def nginx_site(tmp_path, upstream, *, read_timeout=None):
    """nginx serving deploy/nginx/newos4.conf on an unused port in front of `upstream`
    (http://host:port), with `proxy_read_timeout` shortened when given; yields its URL."""
    nginx = needs("nginx")
    site = (DEPLOY / "nginx" / "newos4.conf").read_text()
    port = unused_port()
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    site = site.replace("/var/log/nginx/newos4.access.log", str(tmp_path / "access.log"))
    site = site.replace("server 127.0.0.1:8000;", f"server {upstream[len('http://'):]};")
    site = site.replace("proxy_pass http://newos4;", "proxy_pass http://newos4;\n"
                        "        proxy_bind 127.0.0.2;" + (
                            f"\n        proxy_read_timeout {read_timeout};" if read_timeout
                            else ""))
    (tmp_path / "site.conf").write_text(site)
    temp = {name: tmp_path / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    (tmp_path / "nginx.conf").write_text(
        f"worker_processes 1;\npid {tmp_path / 'nginx.pid'};\nerror_log stderr;\n"
        "events {}\nhttp {\n    access_log off;\n"
        + "".join(f"    {name}_temp_path {path};\n" if name != "body" else
                  f"    client_body_temp_path {path};\n" for name, path in temp.items())
        + f"    include {tmp_path / 'site.conf'};\n}}\n")
    conf = ["-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")]
    checked = subprocess.run([nginx, *conf, "-t"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    proc = subprocess.Popen([nginx, *conf, "-g", "daemon off;"], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                requests.get(url + "/spaces/newos4/data/", timeout=1)
                break
            except requests.ConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_nginx_site_serves_the_chat_and_hides_the_rest(behind_nginx):
    url = behind_nginx
    health = requests.get(url + HEALTH_PATH, timeout=10)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    token = secrets.token_hex(32)
    posted = requests.post(url + POST_PATH, json={"text": "via nginx"}, timeout=10,
                           headers={"X-Chat-Token": token})
    assert posted.status_code == 201, posted.text
    polled = requests.get(url + POLL_PATH, headers={"X-Chat-Token": token}, timeout=10).json()
    assert polled["messages"][0]["text"] == "via nginx"
    for path in ("/spaces/newos4/data/chat/", f"/spaces/newos4/data/chat/{posted.json()['thread']}"
                 ".json", "/emulators/hermes/v1/models", "/", "/index.html", "/spaces/newos"):
        hidden = requests.get(url + path, timeout=10)
        assert hidden.status_code == 404, path
        assert hidden.headers["Content-Type"] == "application/json", path
        assert hidden.json() == {"success": False, "error": "not found"}, path
    huge = requests.post(url + POST_PATH, data=b"x" * 100_000, timeout=10,
                         headers={"X-Chat-Token": token})
    assert huge.status_code == 413
    assert huge.json() == {"success": False, "error": "text too long (max 4000 chars)"}


PAGE_PATHS = ["/spaces/newos4/", "/spaces/newos4/chat.js", HEALTH_PATH, POLL_PATH]


def assert_json_error(answer, status, words):
    assert answer.status_code == status, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json() == {"success": False, "error": words}
    assert answer.headers["Retry-After"] == "10"


def test_with_gunicorn_down_the_nginx_site_answers_the_chats_json_502(tmp_path):
    """And so does every answer nginx makes itself on the page's paths."""
    with nginx_site(tmp_path, f"http://127.0.0.1:{unused_port()}") as url:
        for path in PAGE_PATHS:
            assert_json_error(requests.get(url + path, timeout=10), 502,
                              "the chat service is not running; try again in a minute")
        assert_json_error(requests.post(url + POST_PATH, json={"text": "hi"}, timeout=10,
                                        headers={"X-Chat-Token": secrets.token_hex(32)}),
                          502, "the chat service is not running; try again in a minute")
        # What nginx refuses before any location: the same JSON shape, no Retry-After.
        for answer, status, words in [
                (requests.get(url + POLL_PATH + "?since=" + "1" * 20000, timeout=10), 414,
                 "URI too long"),
                (requests.get(url + POLL_PATH, headers={"X-Big": "x" * 20000}, timeout=10), 400,
                 "bad request")]:
            assert answer.status_code == status
            assert answer.headers["Content-Type"] == "application/json"
            assert answer.json() == {"success": False, "error": words}


def test_a_silent_gunicorn_behind_the_nginx_site_is_the_chats_json_504(tmp_path):
    with socket.socket() as silent:  # accepts (the kernel does), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        upstream = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with nginx_site(tmp_path, upstream, read_timeout="1s") as url:
            assert_json_error(requests.get(url + POLL_PATH, timeout=10), 504,
                              "the chat service did not answer in time; try again")


def test_behind_the_nginx_site_a_forged_forwarded_for_does_not_escape_the_ip_window(
        behind_nginx):
    # NEWOS4_RATE_IP=2: the client's real address (127.0.0.1, appended by nginx) is what counts.
    codes = [requests.post(behind_nginx + POST_PATH, json={"text": "hi"}, timeout=10,
                           headers={"X-Chat-Token": secrets.token_hex(32),
                                    "X-Forwarded-For": f"203.0.113.{i}"}).status_code
             for i in range(4)]
    assert codes == [201, 201, 429, 429]


def test_kept_connections_survive_a_graceful_reload_and_worker_restarts_without_a_502(
        tmp_path):
    """nginx keeps its connections to gunicorn (the site's upstream `keepalive`). Under a steady
    load of posts and polls through the site, gunicorn reloads twice (HUP: new workers, the old
    ones stop gracefully) and its workers restart every 20 requests (`max_requests`): every
    request is answered, none with a 502, and nginx still holds connections to gunicorn."""
    needs("nginx")
    pidfile = tmp_path / "gunicorn.pid"
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "NEWOS4_TRUSTED_PROXIES": "127.0.0.2",
           "NEWOS4_RATE_IP": "1000000", "NEWOS4_RATE_THREAD": "1000000"}
    with gunicorn(PRODUCTION, env=env, workers=2, threads=None,
                  extra_args=["--pid", str(pidfile), "--max-requests", "20"]) as upstream:
        master = int(pidfile.read_text())
        with nginx_site(tmp_path, upstream) as url:
            # Paced by answers, not by the clock, so a loaded machine only makes it slower: a
            # HUP after 80 and after 160 answers, and the load stops at 300.
            statuses, workers, done = collections.Counter(), set(), threading.Event()

            def client():
                session, token = requests.Session(), secrets.token_hex(32)
                while not done.is_set():
                    for answer in (
                            session.post(url + POST_PATH, json={"text": "hi"}, timeout=10,
                                         headers={"X-Chat-Token": token}),
                            session.get(url + POLL_PATH, headers={"X-Chat-Token": token},
                                        timeout=10)):
                        statuses[answer.status_code] += 1

            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                clients = [pool.submit(client) for _ in range(4)]
                deadline = time.monotonic() + 60
                for answered in (80, 160, 300):
                    while sum(statuses.values()) < answered and time.monotonic() < deadline:
                        workers |= children(master)
                        time.sleep(0.05)
                    if answered < 300:
                        os.kill(master, signal.SIGHUP)
                done.set()
                for future in clients:
                    future.result()
            # Between answers (none in flight), a connection nginx holds is one it keeps. A
            # worker's restart at its 20th answer closes those it held: a few tries.
            kept = []
            for _ in range(10):
                assert requests.get(url + HEALTH_PATH, timeout=10).status_code == 200
                kept = established_to(upstream)
                if kept:
                    break
                time.sleep(0.1)
    assert set(statuses) == {200, 201}, statuses
    assert sum(statuses.values()) >= 300
    assert len(workers) > 6  # HUPs and max_requests replaced the workers many times
    assert kept, "nginx holds no connection to gunicorn: none was kept"


def children(pid):
    listing = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return set(listing.split())


def established_to(url):
    """The established connections to the port of `url` (as `ss` lists them)."""
    listing = subprocess.run(["ss", "-Htn", "state", "established",
                              f"( dport = :{url.rsplit(':', 1)[1]} )"],
                             capture_output=True, text=True, check=True).stdout
    return listing.splitlines()


def test_the_systemd_unit_verifies_and_runs_the_shipped_command(tmp_path):
    analyze = needs("systemd-analyze")
    unit = (DEPLOY / "systemd" / "newos4.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1).split()
    assert exec_start[1:] == ["-c", "gunicorn.conf.py", PRODUCTION]
    assert "RestartPreventExitStatus=4" in unit  # configuration errors exit 4: no restart loop
    verify_here(analyze, unit, "newos4.service", tmp_path, REPO / ".venv" / "bin" / "gunicorn")


def verify_here(analyze, unit, name, folder, program):
    """`systemd-analyze verify` the unit as installed in this checkout (run as root)."""
    here = unit.replace("/srv/newos4-monolith", str(REPO))
    (folder / name).write_text(re.sub(r"^(User|Group)=.*$", r"\1=root", here, flags=re.M))
    program.exists() or pytest.skip(f"no {program.relative_to(REPO)}")
    done = subprocess.run([analyze, "verify", str(folder / name)],
                          capture_output=True, text=True, timeout=60)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if name in line]
    assert done.returncode == 0 and problems == [], done.stdout + done.stderr


def test_logrotate_rotates_the_relay_log_and_the_next_run_writes_a_new_one(tmp_path):
    logrotate = needs("logrotate")
    conf = (DEPLOY / "logrotate" / "newos4-relay").read_text()
    conf = conf.replace("/srv/newos4-monolith", str(tmp_path))
    conf = conf.replace("newos4 newos4", "root root")
    (tmp_path / "relay.conf").write_text(conf)
    (tmp_path / "var").mkdir()
    log = tmp_path / "var" / "relay.log"
    log.write_text("relay: sweep {}\n")
    done = subprocess.run([logrotate, "-f", "-s", str(tmp_path / "state"),
                           str(tmp_path / "relay.conf")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "var" / "relay.log.1").read_text() == "relay: sweep {}\n"
    assert log.exists() and log.read_text() == ""


def test_the_cron_line_runs_as_written(tmp_path):
    crontab = DEPLOY / "cron.d" / "newos4"  # the one cron file (a user crontab: no user field)
    entries = [line for line in crontab.read_text().splitlines()
               if line.strip() and not line.startswith("#") and "=" not in line.split()[0]]
    assert len(entries) == 1
    fields = entries[0].split(None, 6)
    assert fields[:6] == ["*"] * 5 + ["newos4"]
    command = fields[-1].replace("/srv/newos4-monolith", str(tmp_path / "checkout"))
    (tmp_path / "checkout").symlink_to(REPO)
    env = {"PATH": os.environ["PATH"], "NEWOS4_DATA_DIR": str(tmp_path / "data"),
           "HOME": str(tmp_path)}
    done = subprocess.run(["sh", "-c", command.replace("var/relay.log", str(tmp_path / "relay.log"))
                           .replace("mkdir -p var", f"mkdir -p {tmp_path}")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "relay: sweep" in (tmp_path / "relay.log").read_text()


def test_console_scripts_run_the_programs_from_anywhere(tmp_path):
    bin_dir = os.path.dirname(sys.executable)
    for name in ("newos4-chat", "newos4-relay", "emulators"):
        if not os.access(os.path.join(bin_dir, name), os.X_OK):
            pytest.skip(f"{name} is not installed (pip install -e .)")
    env = {**os.environ, "NEWOS4_DATA_DIR": str(tmp_path / "data"), "HERMES_API_URL": ""}

    def run(name, *args):
        return subprocess.run([os.path.join(bin_dir, name), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)

    assert "clear-rate" in run("newos4-chat", "--help").stdout
    (tmp_path / "data").mkdir()  # as the server's start creates it
    listed = run("newos4-chat", "list")
    assert listed.returncode == 0 and listed.stdout == ""
    swept = run("newos4-relay", "--sweep-only")
    assert swept.returncode == 0 and swept.stdout.startswith("relay: sweep ")
    assert "serve" in run("emulators", "--help").stdout


def test_the_watcher_unit_verifies_and_runs_the_watcher(tmp_path):
    analyze = needs("systemd-analyze")
    unit = (DEPLOY / "systemd" / "newos4-relay-watch.service").read_text()
    assert re.search(r"^ExecStart=(.*)$", unit, re.M).group(1) == \
        "/srv/newos4-monolith/.venv/bin/python cron/relay.py --watch"
    # --watch without HERMES_API_URL exits 2 (tests/integration/relay/test_watch.py): no loop.
    assert "Restart=on-failure" in unit and "RestartPreventExitStatus=2" in unit
    # READY=1 and WATCHDOG=1 (relay/test_watch.py): a hung watcher is restarted.
    assert "Type=notify" in unit and "WatchdogSec=" in unit
    # It exits within 5 s of SIGTERM; systemd waits longer before it kills.
    assert int(re.search(r"^TimeoutStopSec=(\d+)$", unit, re.M).group(1)) > 5
    verify_here(analyze, unit, "newos4-relay-watch.service", tmp_path,
                REPO / ".venv" / "bin" / "python")
