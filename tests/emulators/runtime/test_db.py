"""Database.transaction(): nesting, savepoints, and the clean first block of a batch."""
import pytest

from emulators.runtime.state.db import Database
from emulators.runtime.errors import ConnectionDropped


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "t.db")
    database.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
    return database


def statements(db):
    seen = []
    db.conn.set_trace_callback(seen.append)
    return seen


def values(db):
    return dict(db.all("SELECT k, v FROM t ORDER BY k"))


def test_a_failing_first_block_of_a_clean_batch_undoes_only_itself_without_a_savepoint(db):
    seen = statements(db)
    with db.transaction(commit_on_error=True):
        with pytest.raises(ValueError):
            with db.transaction():
                db.execute("INSERT INTO t VALUES ('a', 1)")
                raise ValueError("handler failed")
        db.execute("INSERT INTO t VALUES ('b', 2)")  # the batch goes on (the journal)
    assert values(db) == {"b": 2}
    assert not [sql for sql in seen if "SAVEPOINT" in sql]


def test_a_block_after_a_write_rolls_back_to_its_savepoint(db):
    seen = statements(db)
    with db.transaction(commit_on_error=True):
        db.execute("INSERT INTO t VALUES ('a', 1)")
        with pytest.raises(ValueError):
            with db.transaction():
                db.execute("INSERT INTO t VALUES ('b', 2)")
                raise ValueError("handler failed")
        with db.transaction():  # a second block after a clean one that wrote: a savepoint
            db.execute("INSERT INTO t VALUES ('c', 3)")
    assert values(db) == {"a": 1, "c": 3}
    assert sum("SAVEPOINT" in sql for sql in seen) == 2


def test_a_clean_first_block_that_succeeds_keeps_its_writes_for_the_batch(db):
    with db.transaction(commit_on_error=True):
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('a', 1)")
        with pytest.raises(ValueError):
            with db.transaction():  # not clean any more: rolls back to its savepoint
                db.execute("INSERT INTO t VALUES ('b', 2)")
                raise ValueError
    assert values(db) == {"a": 1}


def test_a_drop_inside_a_clean_block_keeps_what_it_wrote(db):
    with pytest.raises(ConnectionDropped):
        with db.transaction(commit_on_error=True):
            with db.transaction():
                db.execute("INSERT INTO t VALUES ('a', 1)")
                raise ConnectionDropped()
    assert values(db) == {"a": 1}


def test_a_top_level_block_that_raises_rolls_back(db):
    with pytest.raises(ValueError):
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('a', 1)")
            raise ValueError
    assert values(db) == {}


def test_transactions_of_processes_and_threads_take_turns_on_the_writer_lock(tmp_path):
    import os
    import threading
    import time

    path = tmp_path / "turns.db"
    first = Database(path)
    first.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)")
    ready, go = os.pipe()
    child = os.fork()
    if child == 0:  # another worker: holds a transaction for 0.3 s
        with Database(path).transaction() as conn:
            conn.execute("INSERT INTO t VALUES ('child', 1)")
            os.write(go, b"x")
            time.sleep(0.3)
        os._exit(0)
    os.read(ready, 1)
    started = time.monotonic()
    with first.transaction() as conn:  # waits on the lock, not on SQLite's busy retries
        waited = time.monotonic() - started
        conn.execute("INSERT INTO t VALUES ('parent', 2)")
    os.waitpid(child, 0)
    assert 0.15 < waited < 5 and values(first) == {"child": 1, "parent": 2}
    order = []

    def writer(name):
        with Database(path).transaction() as conn:  # another object, same file: same lock
            order.append(f"{name} in")
            conn.execute("INSERT OR REPLACE INTO t VALUES (?, 0)", (name,))
            time.sleep(0.05)
            order.append(f"{name} out")
    threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert all(order[i].endswith("in") and order[i + 1] == order[i][:-2] + "out"
               for i in range(0, 6, 2))
