"""No stale 304 under real gunicorn with two workers: after each kind of write (REST, a git push,
an admin seed) an ETag taken before it no longer matches, whichever worker answers; and every
worker counts into the same rate-limit window."""
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from testkit.servers import gunicorn

pytestmark = pytest.mark.gunicorn
TOKEN = {"Authorization": "token bot"}
REPO = "/repos/octo/live"
PULL = f"{REPO}/pulls/1"


@pytest.fixture(scope="module")
def access_log(tmp_path_factory):
    return tmp_path_factory.mktemp("conditional-log") / "access.log"


@pytest.fixture(scope="module")
def served(tmp_path_factory, access_log):
    """`gunicorn wsgi:github -w 2`; yields its base URL."""
    db = tmp_path_factory.mktemp("conditional") / "emulators.sqlite3"
    log = ["--access-logfile", str(access_log), "--access-logformat", "%(p)s %(m)s %(U)s %(s)s"]
    with gunicorn("wsgi:github", env={"EMULATORS_DB": str(db)}, workers=2, threads=4,
                  ready_path="/__admin/health", extra_args=log) as url:
        _both_workers_up(url, access_log)
        yield url


@pytest.fixture
def live(served):
    """`octo/live` of git objects, `topic` one commit ahead of `main`, PR #1 from it."""
    requests.post(f"{served}/__admin/reset?all=1", timeout=5).raise_for_status()
    requests.put(f"{served}/__admin/github/rate-limits", json={"core": 100000},
                 timeout=5).raise_for_status()
    seeded = requests.post(f"{served}/__admin/github/repositories", timeout=5, json={
        "owner": "octo", "name": "live",
        "files": {"main": {"README.md": "# live\n"}, "topic": {"topic.txt": "one\n"}}})
    assert seeded.status_code == 201, seeded.text
    opened = requests.post(f"{served}{PULL[:-2]}", headers=TOKEN, timeout=5,
                           json={"title": "Topic", "head": "topic", "base": "main"})
    assert opened.status_code == 201, opened.text
    return served


def get(url, **headers):
    """A GET on a connection of its own, so gunicorn hands it to either worker."""
    return requests.get(url, headers={**TOKEN, **headers}, timeout=10)


def assert_no_stale_304(log, url, write, check):
    """Each round: take the answer's ETag, let `write(n)` change what it shows, then ask with
    the old ETag, four at once, until both workers have answered since the first write (each
    keeps answers built in a cache of its own): a fresh 200 every time that `check(body, n)`
    accepts, whose own ETag then matches."""
    path = "/" + url.split("://", 1)[1].split("/", 1)[1]
    mark = None
    for n in range(4):
        tag = get(url).headers["ETag"]
        assert get(url, **{"If-None-Match": tag}).status_code == 304
        if mark is None:
            mark = len(log.read_text().splitlines())
        write(n)
        for _ in range(10):
            with ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(lambda _: get(url, **{"If-None-Match": tag}), range(4)))
            for fresh in answers:
                assert fresh.status_code == 200, (n, fresh.status_code)
                assert check(fresh.json(), n), (n, fresh.json())
            if len(_answered(log, path, mark)) == 2:
                break
        else:
            pytest.fail("one worker answered every request: the other was never asked")
        assert get(url, **{"If-None-Match": fresh.headers["ETag"]}).status_code == 304


def test_a_rest_write_leaves_no_stale_304(live, access_log):
    url = f"{live}{PULL}"

    def write(n):
        answer = requests.patch(url, json={"title": f"title {n}"}, headers=TOKEN, timeout=5)
        assert answer.status_code == 200, answer.text
    assert_no_stale_304(access_log, url, write, lambda body, n: body["title"] == f"title {n}")


def test_a_git_push_leaves_no_stale_304(live, access_log, tmp_path):
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(tmp_path), "GIT_AUTHOR_NAME": "A",
           "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.com"}

    def git(*args):
        done = subprocess.run(["git", *args], cwd=work, env=env, capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()
    work = tmp_path / "work"
    remote = live.replace("http://", "http://x-access-token:bot@") + "/octo/live.git"
    subprocess.run(["git", "clone", "-q", "-b", "topic", remote, str(work)], env=env,
                   check=True, timeout=60)
    heads = []

    def write(n):
        (work / "topic.txt").write_text(f"push {n}\n")
        git("commit", "-qam", f"push {n}")
        git("push", "-q", "origin", "topic")
        heads.append(git("rev-parse", "HEAD"))
    assert_no_stale_304(access_log, f"{live}{PULL}", write,
                        lambda body, n: body["head"]["sha"] == heads[n])


def test_an_admin_seed_leaves_no_stale_304(live, access_log):
    types = ["User", "Organization"] * 2

    def write(n):  # a write around the rules, through the state API
        answer = requests.patch(f"{live}/__admin/state/owners/octo",
                                json={"value": {"type": types[n]}}, timeout=5)
        assert answer.status_code == 200, answer.text
    assert_no_stale_304(access_log, f"{live}{REPO}", write,
                        lambda body, n: body["owner"]["type"] == types[n])


def test_both_workers_count_into_one_window(live):
    requests.put(f"{live}/__admin/github/rate-limits", json={"core": 40},
                 timeout=5).raise_for_status()
    fresh = {"Authorization": "token fresh"}  # a caller with nothing counted yet
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: get(f"{live}{REPO}", **fresh).status_code, range(60)))
    assert sorted(codes) == [200] * 40 + [403] * 20
    limit = requests.get(f"{live}/rate_limit", headers=fresh, timeout=5).json()
    assert limit["rate"] == {**limit["rate"], "limit": 40, "used": 40, "remaining": 0}


def _both_workers_up(url, access_log):
    """Wait until each worker has answered a request: gunicorn is ready with the first, and
    the second may still be starting on a busy machine."""
    deadline = time.monotonic() + 30
    while len(_answered(access_log, "/rate_limit", 0)) < 2:
        assert time.monotonic() < deadline, "the second worker never answered"
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: requests.get(f"{url}/rate_limit", timeout=10), range(4)))


def _answered(access_log, path, mark):
    """The pids of the workers that logged a GET of `path` past the log's line `mark` (a
    worker logs a request just after its answer left)."""
    lines = [line.split() for line in access_log.read_text().splitlines()[mark:]]
    return {line[0] for line in lines if len(line) > 2 and line[1] == "GET" and line[2] == path}
