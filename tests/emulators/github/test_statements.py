"""What a request costs the database: a read writes only its rate-limit count (one statement,
no transaction), a mutation commits once."""
from .conftest import B

REPO = "/repos/synthetic-org/example"


def traced(runtime):
    seen = []
    runtime.db.conn.set_trace_callback(seen.append)
    return seen


def test_a_read_begins_no_transaction_and_writes_only_its_rate_limit_count(seeded, runtime):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(status=201)
    seen = traced(runtime)
    paths = (REPO, f"{REPO}/pulls", f"{REPO}/pulls/1", f"{REPO}/pulls/9")
    for path in paths:
        seeded.get(path, status="*")
    writes = [sql for sql in seen if sql.split()[0].upper() not in ("SELECT", "PRAGMA")]
    # every read counts against the caller's window (GitHub's primary rate limit), which all
    # workers share: one statement each, and nothing else
    assert len(writes) == len(paths)
    assert all(sql.startswith(("INSERT INTO quotas ", "UPDATE quotas ")) for sql in writes)


def test_a_conditional_read_that_still_matches_writes_nothing(seeded, runtime):
    tag = seeded.get(REPO, status=200).headers["ETag"]
    seen = traced(runtime)
    assert seeded.get(REPO, status=304, headers={"If-None-Match": tag}).body == b""
    assert [sql for sql in seen if sql.split()[0].upper() not in ("SELECT", "PRAGMA")] == []


def test_a_pull_update_is_one_transaction_reading_head_and_clock_once(seeded, runtime):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(status=201)
    seen = traced(runtime)
    answer = seeded.patch(f"{REPO}/pulls/1", {"title": "renamed"}, 200)
    assert answer.headers["x-mockingbird-checkpoint"].startswith("cp_")
    assert [sql for sql in seen if sql in ("BEGIN IMMEDIATE", "COMMIT")] == \
        ["BEGIN IMMEDIATE", "COMMIT"]
    assert len([sql for sql in seen if "FROM branches b" in sql]) == 1  # main's head
    assert not [sql for sql in seen if "FROM clocks" in sql]  # the worker's kept clock
    assert not [sql for sql in seen if "INTO journal " in sql]  # the segment file instead
    # (the trace repeats a statement once per trigger it fires: one distinct text, one row)
    assert len({sql for sql in seen if sql.startswith("INSERT INTO checkpoints")}) == 1
