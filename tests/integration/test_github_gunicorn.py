"""The GitHub emulator under real gunicorn workers: shared state, atomic writes, dropped answers."""
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from testkit.webhook_receiver import Receiver
from testkit.servers import gunicorn

from tests.emulators.github.conftest import A, B, C, D, E, graph_body
from tests.emulators.github.schema_check import SCHEMAS

pytestmark = pytest.mark.gunicorn
REPO = "/repos/synthetic-org/example"


@pytest.fixture(scope="module")
def access_log(tmp_path_factory):
    """The access log of `mounted`: `<worker pid> <method> <path> <status>` per request."""
    return tmp_path_factory.mktemp("gh-gunicorn-log") / "access.log"


@pytest.fixture(scope="module")
def mounted(tmp_path_factory, access_log):
    """`gunicorn wsgi:application` (chat + both emulators), 3 workers; yields the GitHub base."""
    db = tmp_path_factory.mktemp("gh-gunicorn") / "emulators.sqlite3"
    env = {"EMULATORS_DB": str(db),
           "NEWOS4_DATA_DIR": str(tmp_path_factory.mktemp("chat-data"))}
    log = ["--access-logfile", str(access_log), "--access-logformat", "%(p)s %(m)s %(U)s %(s)s"]
    with gunicorn("wsgi:application", env=env, workers=3, threads=4, extra_args=log) as url:
        yield url + "/emulators/github"


@pytest.fixture
def base(mounted):
    requests.post(f"{mounted}/__admin/reset?all=1", timeout=5).raise_for_status()
    res = requests.post(f"{mounted}/__admin/github/repositories", json=graph_body(), timeout=5)
    assert res.status_code == 201, res.text
    return mounted


def test_urls_and_links_carry_the_mount_prefix(base):
    for i in range(3):
        requests.post(f"{base}{REPO}/git/refs", json={"ref": f"refs/heads/t{i}", "sha": B},
                      timeout=5).raise_for_status()
        requests.post(f"{base}{REPO}/pulls", json={"title": "t", "head": f"t{i}", "base": "main"},
                      timeout=5).raise_for_status()
    res = requests.get(f"{base}{REPO}/pulls?per_page=2", timeout=5)
    assert res.json()[0]["url"] == f"{base}{REPO}/pulls/3"
    assert res.links["next"]["url"] == f"{base}{REPO}/pulls?per_page=2&page=2"
    assert [p["number"] for p in requests.get(res.links["next"]["url"], timeout=5).json()] == [1]


def test_answers_of_worker_processes_follow_githubs_schemas(base):
    """The conftest checks in-process answers; these come from gunicorn workers."""
    requests.post(f"{base}{REPO}/git/refs", json={"ref": "refs/heads/t", "sha": B},
                  timeout=5).raise_for_status()
    requests.post(f"{base}{REPO}/pulls", json={"title": "t", "head": "t", "base": "main"},
                  timeout=5).raise_for_status()
    for method, template, path in [
            ("GET", "/repos/{owner}/{repo}", REPO),
            ("GET", "/repos/{owner}/{repo}/git/refs", f"{REPO}/git/refs"),
            ("GET", "/repos/{owner}/{repo}/pulls", f"{REPO}/pulls"),
            ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", f"{REPO}/pulls/1"),
            ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}", f"{REPO}/pulls/7")]:
        res = requests.get(base + path, timeout=5)
        schema = SCHEMAS.schema_for(method, template, res.status_code, res.json())
        assert schema is not None and SCHEMAS.problems(schema, res.json()) == [], path


def test_webhooks_from_several_workers_arrive_signed_and_in_order(base):
    receiver = Receiver(secret="k")
    try:
        requests.put(f"{base}/__admin/webhook-endpoints",
                     json=[{"url": receiver.url, "secret": "k"}], timeout=5).raise_for_status()
        for i in range(4):
            requests.post(f"{base}{REPO}/git/refs", json={"ref": f"refs/heads/w{i}", "sha": B},
                          timeout=5).raise_for_status()
        requests.post(f"{base}{REPO}/pulls", json={"title": "t", "head": "w0", "base": "main"},
                      timeout=5).raise_for_status()
        requests.patch(f"{base}{REPO}/pulls/1", json={"state": "closed"},
                       timeout=5).raise_for_status()
        receiver.wait_for(11)  # no flush: the workers' dispatchers deliver on their own
        assert receiver.events() == [("ping", None)] + [("create", None), ("push", None)] * 4 \
            + [("pull_request", "opened"), ("pull_request", "closed")]
        assert [p["ref"] for _, p in receiver.received[2:9:2]] == \
            [f"refs/heads/w{i}" for i in range(4)]
        assert receiver.refused == []
        # flush waits for a delivery still in flight, so the log below is final
        requests.post(f"{base}/__admin/webhooks/flush", timeout=10).raise_for_status()
        logged = requests.get(f"{base}/__admin/webhooks", timeout=5).json()["deliveries"]
        assert {d["status"] for d in logged} == {"delivered"} and len(logged) == 11
    finally:
        receiver.close()
        requests.delete(f"{base}/__admin/webhook-endpoints", timeout=5)


def test_state_written_through_one_worker_is_read_by_all(base):
    requests.post(f"{base}{REPO}/git/refs", json={"ref": "refs/heads/x", "sha": B},
                  timeout=5).raise_for_status()
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda _: requests.get(f"{base}{REPO}/git/ref/heads/x",
                                                     timeout=5).status_code, range(24)))
    assert codes == [200] * 24


def test_concurrent_duplicate_creates_admit_exactly_one(base):
    requests.post(f"{base}{REPO}/git/refs", json={"ref": "refs/heads/topic", "sha": B},
                  timeout=5).raise_for_status()

    def create(_):
        return requests.post(f"{base}{REPO}/pulls",
                             json={"title": "race", "head": "topic", "base": "main"}, timeout=10)
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(create, range(12)))
    assert sorted(a.status_code for a in answers) == [201] + [422] * 11
    assert len(requests.get(f"{base}{REPO}/pulls", timeout=5).json()) == 1


def test_concurrent_divergent_ref_updates_have_one_winner(base):
    # main is at a; c and d are both descendants of a, but neither is an ancestor of the other
    targets = [C, D] * 6

    def update(sha):
        return requests.patch(f"{base}{REPO}/git/refs/heads/main", json={"sha": sha}, timeout=10)
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(update, targets))
    winners = {a.json()["object"]["sha"] for a in answers if a.status_code == 200}
    assert len(winners) == 1
    losers = [a for a in answers if a.status_code != 200]
    assert losers and {a.json()["message"] for a in losers} == {"Update is not a fast forward"}


def test_distinct_concurrent_creates_get_distinct_numbers(base):
    for i in range(10):
        requests.post(f"{base}{REPO}/git/refs", json={"ref": f"refs/heads/p{i}", "sha": E},
                      timeout=5).raise_for_status()

    def create(i):
        return requests.post(f"{base}{REPO}/pulls",
                             json={"title": "p", "head": f"p{i}", "base": "main"}, timeout=10)
    with ThreadPoolExecutor(10) as pool:
        numbers = sorted(a.json()["number"] for a in pool.map(create, range(10)))
    assert numbers == list(range(1, 11))


def test_accepted_drop_closes_the_socket_and_the_write_survives(base):
    requests.post(f"{base}/__admin/faults", json={"preset": "github_ref_create_accepted_drop"},
                  timeout=5).raise_for_status()
    with pytest.raises(requests.ConnectionError):
        requests.post(f"{base}{REPO}/git/refs", json={"ref": "refs/heads/lost", "sha": A},
                      timeout=5)
    assert requests.get(f"{base}{REPO}/git/ref/heads/lost", timeout=5).status_code == 200
    journal = requests.get(f"{base}/__admin/requests?operationId=git/create-ref",
                           timeout=5).json()["requests"]
    assert any(e["status"] == 0 and e.get("accepted") for e in journal)


def _served_by(access_log, suffix, count):
    """The worker pids that answered requests whose path ends with `suffix`, in order, once
    there are `count` (a worker logs a request just after its answer left)."""
    deadline = time.monotonic() + 5
    while True:
        lines = [line.split() for line in access_log.read_text().splitlines()]
        pids = [line[0] for line in lines if len(line) > 2 and line[2].endswith(suffix)]
        if len(pids) >= count or time.monotonic() > deadline:
            return pids
        time.sleep(0.02)


def test_a_push_through_one_worker_is_cloned_through_another(base, access_log, tmp_path):
    """Objects and refs live in SQLite: a clone served by any worker has what another took."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(tmp_path), "GIT_AUTHOR_NAME": "A",
           "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.com"}

    def git(*args, cwd=None):
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()
    requests.post(f"{base}/__admin/github/repositories", json={"owner": "octo", "name": "live"},
                  timeout=5).raise_for_status()
    url = base.replace("http://", "http://x-access-token:t@") + "/octo/live.git"
    work = tmp_path / "work"
    git("init", "-q", "-b", "main", str(work))
    for n in range(3):
        (work / f"f{n}.txt").write_text(f"{n}\n" * 1000)
        git("add", ".", cwd=work)
        git("commit", "-qm", f"commit {n}", cwd=work)
    pushes = len(_served_by(access_log, "/git-receive-pack", 0)) + 1
    git("push", "-q", url, "main", cwd=work)
    pusher = _served_by(access_log, "/git-receive-pack", pushes)[-1]
    head = git("rev-parse", "HEAD", cwd=work)
    clones = len(_served_by(access_log, "/git-upload-pack", 0))
    for attempt in range(30):  # clone until another worker answered one (usually the first)
        copy = tmp_path / f"copy{attempt}"
        git("clone", "-q", url, str(copy))
        assert git("rev-parse", "HEAD", cwd=copy) == head
        clones += 1
        if _served_by(access_log, "/git-upload-pack", clones)[-1] != pusher:
            break
    else:
        pytest.fail(f"every clone was served by the pushing worker {pusher}")
    assert (copy / "f2.txt").read_text() == "2\n" * 1000
