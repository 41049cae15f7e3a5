"""The emulators over HTTP beside a bare Falcon app, all under the shipped gunicorn config.

Every server runs as a user deploys it: `gunicorn -c gunicorn.conf.py -w 2` (BENCH_WORKERS),
nothing else changed. The bare app is bench/bare.py on the same flags: `GET /bare` (small JSON)
and `POST /bare-durable-write` (tmp + fsync + rename of a small file). Rows are timed in
interleaved slices (each cycle runs every row for BENCH_SLICE seconds, in order) with wrk at
BENCH_CONNECTIONS connections, or a Python load generator when wrk is missing (BENCH_LOADGEN);
each ratio is the median of its per-cycle ratios, because this machine is shared.

Rows and targets (ratio of req/s):
  GitHub GET /repos/o/r, Hermes GET /v1/runs/{id}         >= 0.5 of bare GET
  GitHub GET /repos/o/r/pulls?per_page=30&page=3 (of 200)  >= 0.3 of bare GET
  GitHub GET /repos/o/r/pulls/1                            >= 0.3 of bare GET
  GitHub POST /graphql PullRequestByNumber, gh's query with  >= 0.1 of the REST pulls/1 read
    its checks (two check runs and a status on the head):
    GraphQL builds every answer (a POST), REST's read is built once per change
  the repository and the pulls page with If-None-Match (304) >= 1.0 of the 200 they replace
  GitHub PATCH /repos/o/r/pulls/1 (title), POST /v1/runs   >= 0.5 of bare durable write
The GitHub namespace's rate limit is raised past what the run sends (every GitHub request is
counted against it, as on GitHub; a 304 is not).
Every answer is checked once before timing; an answer other than the expected status during a
slice is counted (`bad`). Knobs (env): BENCH_CYCLES=5, BENCH_SLICE=1, BENCH_CONNECTIONS=16,
BENCH_WORKERS=2, BENCH_LOADGEN=wrk|python, BENCH_DATA (a folder on a real disk).
"""
import atexit
import concurrent.futures
import http.client
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from testkit.servers import unused_port  # noqa: E402

CYCLES = int(os.environ.get("BENCH_CYCLES", "5"))
SLICE = int(os.environ.get("BENCH_SLICE", "1"))
CONNS = int(os.environ.get("BENCH_CONNECTIONS", "16"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "2"))
LOADGEN = os.environ.get("BENCH_LOADGEN") or ("wrk" if shutil.which("wrk") else "python")
PULLS = 200
A, B = "a" * 40, "b" * 40
# what `gh pr view 1 --json number,title,state,statusCheckRollup` sends (gh 2.23); `n` only
# varies the body, as every row's does (GraphQL ignores a variable the query does not declare)
PULL_BY_NUMBER = (
    "query PullRequestByNumber($owner: String!, $repo: String!, $pr_number: Int!) {"
    " repository(owner: $owner, name: $repo) { pullRequest(number: $pr_number) {"
    " number,title,state,statusCheckRollup: commits(last: 1) {nodes {commit {"
    "statusCheckRollup {contexts(first:100) {nodes {__typename...on StatusContext {context,"
    "state,targetUrl,createdAt},...on CheckRun {name,checkSuite{workflowRun{workflow{name}}},"
    "status,conclusion,startedAt,completedAt,detailsUrl}},pageInfo{hasNextPage,endCursor}}}}}}"
    ",id} } }")
GRAPHQL_BODY = json.dumps({"query": PULL_BY_NUMBER, "variables": {
    "owner": "o", "repo": "r", "pr_number": 1, "n": 0}}).replace('"n": 0', '"n": %d')


class Server:
    """`gunicorn -c gunicorn.conf.py -w N APP` on an unused loopback port (the shipped config)."""

    def __init__(self, app, env, folder):
        self.port = unused_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(folder) / f"gunicorn-{self.port}.log"
        self.cmd = [sys.executable, "-m", "gunicorn", "-c", str(REPO / "gunicorn.conf.py"),
                    "-w", str(WORKERS), "-b", f"127.0.0.1:{self.port}", app]
        self.env = {**os.environ, **env}
        self.proc = None

    def __enter__(self):
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(self.cmd, cwd=REPO, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.cmd[-1]} exited:\n{self.log.read_text()[-2000:]}")
            try:
                request(self.url, "GET", "/__admin/health" if "bare" not in self.cmd[-1]
                        else "/bare")
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{self.cmd[-1]} not ready:\n{self.log.read_text()[-2000:]}")
                time.sleep(0.1)

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)


def request(url, method, path, body=None, headers=None, answer_headers=None):
    """One request on a fresh connection: (status, parsed JSON body or None); the answer's
    headers go into the dict `answer_headers` when one is given."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json",
                                                       **(headers or {})})
        answer = conn.getresponse()
        raw = answer.read()
        if answer_headers is not None:
            answer_headers.update((k.lower(), v) for k, v in answer.getheaders())
        return answer.status, (json.loads(raw) if raw else None)
    finally:
        conn.close()


def expect(url, method, path, status, body=None, check=None, headers=None):
    """The parsed answer, after checking its status; exits the run when it is another."""
    got, answer = request(url, method, path, body, headers)
    if got != status or (check is not None and not check(answer)):
        raise SystemExit(f"{method} {url}{path}: {got} {str(answer)[:300]}")
    return answer


def etag(url, path):
    """The ETag a GET of `path` answers (what a caching client sends back)."""
    headers = {}
    request(url, "GET", path, answer_headers=headers)
    return headers["etag"]


def seed_github(url):
    expect(url, "PUT", "/__admin/github/rate-limits", 200, {"core": 10 ** 9})
    repo = {"owner": "o", "name": "r", "commits": [{"sha": A, "parents": []},
                                                   {"sha": B, "parents": [A]}],
            "branches": {"main": A, **{f"b{i}": B for i in range(PULLS)}}}
    expect(url, "POST", "/__admin/github/repositories", 201, repo)

    def open_pull(i):
        expect(url, "POST", "/repos/o/r/pulls", 201,
               {"title": f"PR {i}", "head": f"b{i}", "base": "main", "body": "a pull"})
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(open_pull, range(PULLS)))
    for run in ({"name": "ci", "head_sha": B, "conclusion": "success"},
                {"name": "lint", "head_sha": B, "status": "in_progress"}):
        expect(url, "POST", "/repos/o/r/check-runs", 201, run)
    expect(url, "POST", f"/repos/o/r/statuses/{B}", 201, {"state": "success", "context": "docs"})


# -- load generation ---------------------------------------------------------------------

LUA = r"""
local method, body, counter = "%(method)s", %(body)s, 0
function request()
  counter = counter + 1
  local data = nil
  if body ~= nil then data = string.format(body, counter) end
  return wrk.format(method, nil, %(headers)s, data)
end
function done(summary, latency, requests)
  io.write(string.format('BENCHJSON {"requests": %%d, "seconds": %%f, "errors": %%d,' ..
    ' "p50_ms": %%f}\n', summary.requests, summary.duration / 1e6,
    summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout + summary.errors.status, latency:percentile(50) / 1000))
end
"""


def wrk(url, row, folder):
    """One slice of wrk on a row: {rps, p50_ms, bad} (bad: errors and answers >= 400)."""
    body = "nil" if row["body"] is None else json.dumps(row["body"])
    script = Path(folder) / f"row-{secrets.token_hex(4)}.lua"
    headers = "{" + ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}"
                              for k, v in row_headers(row).items()) + "}"
    script.write_text(LUA % {"method": row["method"], "body": body, "headers": headers})
    out = subprocess.run(["wrk", "-t", "1", "-c", str(CONNS), "-d", f"{SLICE}s", "--timeout",
                          "10s", "-s", str(script), url + row["path"]],
                         capture_output=True, text=True, timeout=SLICE + 60)
    script.unlink()
    line = next((x for x in out.stdout.splitlines() if x.startswith("BENCHJSON ")), None)
    if out.returncode or line is None:
        raise SystemExit(f"wrk failed: {out.stdout[-500:]} {out.stderr[-500:]}")
    result = json.loads(line[len("BENCHJSON "):])
    return {"rps": result["requests"] / result["seconds"], "p50_ms": result["p50_ms"],
            "bad": result["errors"]}


def row_headers(row):
    """The headers of a row's requests: JSON, its token's, and its own."""
    token = {"Authorization": f"token {row['token']}"} if row.get("token") else {}
    return {"Content-Type": "application/json", **token, **row.get("headers", {})}


def pyload(url, row, folder):
    """One slice of CONNS client threads (http.client); weaker than wrk, ratios nearer 1."""
    host, port = url.removeprefix("http://").split(":")
    lock, times, bad = threading.Lock(), [], [0]
    counter = iter(range(1, 1 << 62))
    end = time.perf_counter() + SLICE

    def client():
        mine = []
        while time.perf_counter() < end:
            data = None
            if row["body"] is not None:
                data = (row["body"] % next(counter)).encode()
            started = time.perf_counter()
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            try:
                conn.request(row["method"], row["path"], body=data, headers=row_headers(row))
                answer = conn.getresponse()
                answer.read()
                ok = answer.status == row["status"]
            except OSError:
                ok = False
            finally:
                conn.close()
            mine.append(time.perf_counter() - started)
            if not ok:
                with lock:
                    bad[0] += 1
        with lock:
            times.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(CONNS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.perf_counter() - started
    return {"rps": len(times) / took, "p50_ms": statistics.median(times or [0]) * 1000,
            "bad": bad[0]}


# -- the run -----------------------------------------------------------------------------

def rows(bare, github, hermes, run_id):
    get = {"method": "GET", "body": None, "status": 200}
    repo, page = "/repos/o/r", "/repos/o/r/pulls?per_page=30&page=3"
    pulls = f"GitHub GET pulls?per_page=30&page=3 ({PULLS})"
    return [
        {"label": "bare GET", **get, "url": bare, "path": "/bare"},
        {"label": "GitHub GET /repos/o/r", **get, "url": github, "path": repo,
         "base": "bare GET", "target": 0.5},
        {"label": "GitHub GET /repos/o/r 304 (If-None-Match)", **get, "status": 304,
         "url": github, "path": repo, "headers": {"If-None-Match": etag(github, repo)},
         "base": "GitHub GET /repos/o/r", "target": 1.0},
        {"label": pulls, **get, "url": github, "path": page, "base": "bare GET", "target": 0.3},
        {"label": "GitHub GET pulls page 304 (If-None-Match)", **get, "status": 304,
         "url": github, "path": page, "headers": {"If-None-Match": etag(github, page)},
         "base": pulls, "target": 1.0},
        {"label": "GitHub GET /repos/o/r/pulls/1", **get, "url": github,
         "path": "/repos/o/r/pulls/1", "base": "bare GET", "target": 0.3},
        {"label": "GitHub GraphQL PullRequestByNumber + checks", "method": "POST",
         "url": github, "path": "/graphql", "body": GRAPHQL_BODY, "status": 200,
         "token": "bench", "base": "GitHub GET /repos/o/r/pulls/1", "target": 0.1},
        {"label": "Hermes GET /v1/runs/{id}", **get, "url": hermes,
         "path": f"/v1/runs/{run_id}", "base": "bare GET", "target": 0.5},
        {"label": "bare durable write", "method": "POST", "url": bare,
         "path": "/bare-durable-write", "body": '{"text": "bench %d"}', "status": 201},
        {"label": "GitHub PATCH /repos/o/r/pulls/1", "method": "PATCH", "url": github,
         "path": "/repos/o/r/pulls/1", "body": '{"title": "title %d"}', "status": 200,
         "base": "bare durable write", "target": 0.5},
        {"label": "Hermes POST /v1/runs", "method": "POST", "url": hermes, "path": "/v1/runs",
         "body": '{"input": "bench run %d"}', "status": 202, "base": "bare durable write",
         "target": 0.5},
    ]


def main():
    folder = tempfile.mkdtemp(prefix="bench-emulators-", dir=os.environ.get("BENCH_DATA"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    env = {"EMULATORS_DB": os.path.join(folder, "emulators.sqlite3"), "BENCH_BARE_DIR": folder}
    slice_ = wrk if LOADGEN == "wrk" else pyload
    with Server("bench.bare:application", env, folder) as bare, \
            Server("wsgi:github", env, folder) as github, \
            Server("wsgi:hermes", env, folder) as hermes:
        seed_github(github.url)
        run_id = expect(hermes.url, "POST", "/v1/runs", 202, {"input": "seed"})["run_id"]
        table = rows(bare.url, github.url, hermes.url, run_id)
        expect(github.url, "GET", "/repos/o/r/pulls?per_page=30&page=3", 200,
               check=lambda page: len(page) == 30)
        expect(github.url, "GET", "/repos/o/r", 200, check=lambda repo: repo["id"])
        expect(hermes.url, "GET", f"/v1/runs/{run_id}", 200, check=lambda run: run["run_id"])
        for row in table:
            if row["status"] == 304:
                expect(github.url, "GET", row["path"], 304, headers=row["headers"])
        rollup = request(github.url, "POST", "/graphql", json.loads(GRAPHQL_BODY % 1),
                         {"Authorization": "token bench"})[1]
        contexts = rollup["data"]["repository"]["pullRequest"]["statusCheckRollup"]["nodes"][
            0]["commit"]["statusCheckRollup"]["contexts"]["nodes"]
        if len(contexts) != 3 or "errors" in rollup:
            raise SystemExit(f"POST /graphql: {str(rollup)[:300]}")
        for row in table:  # warm up every worker's caches and connections
            slice_(row["url"], row, folder)
        samples = {row["label"]: [] for row in table}
        for _ in range(CYCLES):
            for row in table:
                samples[row["label"]].append(slice_(row["url"], row, folder))
    report(table, samples)
    return 0


def report(table, samples):
    print(f"emulators vs bare Falcon, shipped gunicorn.conf.py -w {WORKERS}, {LOADGEN} at"
          f" {CONNS} connections, {CYCLES} interleaved cycles of {SLICE}-s slices (medians)")
    print(f"| {'row':48s} | {'req/s':>7s} | {'p50 ms':>6s} | {'bad':>4s} | ratio |")
    print(f"|{'-' * 50}|{'-' * 8}:|{'-' * 7}:|{'-' * 5}:|{'-' * 6}:|")
    verdicts = []
    for row in table:
        mine = samples[row["label"]]
        rps = statistics.median(s["rps"] for s in mine)
        p50 = statistics.median(s["p50_ms"] for s in mine)
        bad = sum(s["bad"] for s in mine)
        ratio = "1"
        if "base" in row:
            ratios = [s["rps"] / b["rps"] for s, b in zip(mine, samples[row["base"]])]
            value = statistics.median(ratios)
            ratio = f"{value:.2f}"
            verdicts.append(f"{row['label']}: {value:.2f} of {row['base']} (target"
                            f" {row['target']}: {'meets' if value >= row['target'] else 'BELOW'};"
                            f" cycles {', '.join(f'{r:.2f}' for r in ratios)})")
        print(f"| {row['label']:48s} | {rps:7.0f} | {p50:6.2f} | {bad:4d} | {ratio:>5s} |")
    for line in verdicts:
        print("  " + line)


if __name__ == "__main__":
    sys.exit(main())
