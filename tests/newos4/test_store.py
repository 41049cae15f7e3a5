"""ThreadStore: atomic replace under the sidecar lock, the poll cache, corrupt files."""
import json
import os
import threading
import time

import pytest

from spaces.newos4 import errors
from spaces.newos4 import store as store_module
from spaces.newos4.files import lock
from spaces.newos4.service import ChatService

from .conftest import ChatClient


def test_concurrent_appends_from_many_services_lose_nothing(settings, clock):
    services = [ChatService(settings, clock=clock) for _ in range(4)]
    thread = "0123456789abcdef"
    services[0].store.update(thread, lambda doc: {**doc, "messages": [
        {"id": "seed", "epoch": clock.now, "ts": "x", "author": "operator", "text": "seed"}]})

    def writer(service, n):
        for i in range(25):
            service.reply(thread, f"{n}-{i}")

    workers = [threading.Thread(target=writer, args=(s, n)) for n, s in enumerate(services)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    messages = services[0].history(thread)
    assert len(messages) == 101
    epochs = [m["epoch"] for m in messages]
    assert epochs == sorted(set(epochs))


def test_a_store_reads_another_ones_appends_and_still_refuses_a_bad_one(settings, clock,
                                                                         monkeypatch):
    """Two workers take turns on a thread: each finds the other's append after the file it
    wrote itself, and parses only that; anything else there is parsed (and refused) whole."""
    ours, theirs = ChatService(settings, clock=clock), ChatService(settings, clock=clock)
    thread = "0123456789abcdee"
    path = settings.chat_dir / f"{thread}.json"
    parsed = []
    whole = store_module._parse
    monkeypatch.setattr(store_module, "_parse", lambda data, where: parsed.append(len(data))
                        or whole(data, where))
    ours.store.update(thread, lambda doc: {**doc, "messages": [
        {"id": "a", "epoch": clock.now, "ts": "x", "author": "operator", "text": "a"}]})
    for n in range(4):
        (theirs if n % 2 == 0 else ours).post(thread, f"reply {n}", "operator", "10.0.0.1")
    assert len(parsed) == 1  # theirs, at its first look; since then only the appended parts
    written = path.read_bytes()
    assert json.loads(written)["messages"][-1]["text"] == "reply 3"
    assert [m["text"] for m in ours.history(thread)] == ["a"] + [f"reply {n}" for n in range(4)]
    assert written == store_module._encode(json.loads(written)).encode()  # laid out as before

    for bad in (b',{"id":"b","epoch":9}]}', b",]}", b',1]}', b',{"id":"b"]}'):
        path.write_bytes(written[:-2] + bad)
        with pytest.raises(errors.ThreadCorrupt):
            theirs.post(thread, "never written", "operator", "10.0.0.2")
        assert path.read_bytes() == written[:-2] + bad
    cut = {**json.loads(written), "messages": json.loads(written)["messages"][-2:]}
    path.write_bytes(store_module._encode(cut).encode())  # a sweep's retention cut
    theirs.post(thread, "after the cut", "operator", "10.0.0.1")
    assert [m["text"] for m in ours.history(thread)] == ["reply 2", "reply 3", "after the cut"]


def test_a_corrupt_thread_file_is_an_error_and_is_never_overwritten(client, settings, testapp):
    client.say("x")
    path = settings.chat_dir / f"{client.thread}.json"
    path.write_text("{not json")
    assert client.post(status=500).json == {"success": False, "error": "internal error"}
    assert client.poll(status=500).json == {"success": False, "error": "internal error"}
    assert path.read_text() == "{not json"


def test_the_poll_cache_sees_every_write(make_app, service, monkeypatch):
    monkeypatch.setattr(store_module, "RACY_NS", 0)  # trust the cache as soon as possible
    client = ChatClient(make_app(rate_thread=100)[0])
    for i in range(30):
        client.say(f"m{i}")
        assert client.poll().json["messages"][-1]["text"] == f"m{i}"
        assert service.history(client.thread)[-1]["text"] == f"m{i}"


def test_a_recently_written_file_is_not_trusted_from_the_cache(settings, clock):
    service = ChatService(settings, clock=clock)
    service.store.update("00000000000000aa", lambda doc: {**doc, "messages": [
        {"id": "a", "epoch": 1, "ts": "x", "author": "operator", "text": "a"}]})
    service.poll("00000000000000aa")
    assert service.store._cache == {}  # written just now: racily clean, so not cached
    path = settings.chat_dir / "00000000000000aa.json"
    os.utime(path, ns=(0, 0))
    service.poll("00000000000000aa")
    assert str(path) in service.store._cache


def test_update_returning_none_writes_nothing(settings, clock):
    service = ChatService(settings, clock=clock)
    assert service.store.update("00000000000000bb", lambda doc: None) is None
    assert not (settings.chat_dir / "00000000000000bb.json").exists()


def test_a_failed_change_leaves_the_file_as_it_was(client, settings, service):
    client.say("x")
    path = settings.chat_dir / f"{client.thread}.json"
    before = path.read_bytes()

    def explode(doc):
        doc["messages"].append({"half": "done"})
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        service.store.update(client.thread, explode)
    assert path.read_bytes() == before
    assert sorted(p.name for p in settings.chat_dir.iterdir()) == [path.name, path.name + ".lock"]


def test_a_held_lock_times_out_as_busy_and_writes_nothing(client, settings, clock):
    client.say("x")
    service = ChatService(settings, clock=clock)
    service.store._locks.timeout_s = 0.2
    path = settings.chat_dir / f"{client.thread}.json"
    with lock(f"{path}.lock", 0):
        result = {}

        def attempt():
            try:
                service.reply(client.thread, "late")
            except errors.StoreBusy as exc:
                result["error"] = exc

        other = threading.Thread(target=attempt)
        other.start()
        other.join()
    assert result["error"].status == 503
    assert len(json.loads(path.read_text())["messages"]) == 1


@pytest.mark.parametrize("name", ["../../etc/passwd", "0123456789ABCDEF", "0123", "", None])
def test_thread_names_are_checked_before_any_path_is_built(service, name):
    with pytest.raises(ValueError):
        service.store.path(name)


def test_thread_cap_counts_only_thread_files(make_app, settings):
    testapp, _ = make_app(max_threads=1)
    settings.chat_dir.mkdir(parents=True)
    (settings.chat_dir / "README").write_text("not a thread")
    (settings.chat_dir / ".0123456789abcdef.json.1.2.tmp").write_text("{}")
    ChatClient(testapp).say("first thread fits")
    ChatClient(testapp).post(status=507)


def test_thread_count_is_the_number_of_thread_files(settings, service):
    settings.chat_dir.mkdir(parents=True)
    names = ["0123456789abcdef.json", "fedcba9876543210.json", "0123456789ABCDEF.json",
             "0123456789abcdef.json.lock", "x0123456789abcdef.json", "0123456789abcdef.jsonx",
             "0123456789abcde.json", "a\n0123456789abcde0.json", ".0123456789abcdef.json.1.tmp"]
    for name in names:
        (settings.chat_dir / name).write_text("{}")
    assert service.store.threads() == ["0123456789abcdef", "fedcba9876543210"]
    assert service.store.count() == 2


def test_a_window_longer_than_one_read_keeps_every_hit_and_a_shorter_one_is_truncated(settings):
    from spaces.newos4 import ratelimit
    windows = ratelimit.IpWindows(settings.data_dir / "ip", limit=10_000, window_ms=600_000)
    path = settings.data_dir / "ip" / f"{windows._hash('198.51.100.1')}.json"
    hits = list(range(10**12, 10**12 + 9_000))
    path.write_text(json.dumps({"hits": hits}))
    assert path.stat().st_size > 2 * ratelimit.READ_CHUNK
    with windows.hold("198.51.100.1", hits[-1] + 1) as record:
        record()
    assert json.loads(path.read_text()) == {"hits": hits + [hits[-1] + 1]}
    # Ten minutes later every old hit has left the window: the file shrinks to the new one.
    later = hits[-1] + 600_002
    with windows.hold("198.51.100.1", later) as record:
        record()
    assert json.loads(path.read_text()) == {"hits": [later]}


@pytest.mark.parametrize("found, counted", [
    ('{"hits":[1000,1500]}', 2),  # the same JSON in another layout (written by hand)
    ('{"hits": [1000, true, "1500", 1500.0, 1500]}', 3),  # only integers count (true is 1)
    ('{"hits": [1000, 1500', 0), ("{not json", 0), ("", 0)])  # unreadable: an empty window
def test_a_window_is_json_of_its_hits_whatever_layout_it_was_found_in(settings, found, counted):
    from spaces.newos4 import ratelimit
    windows = ratelimit.IpWindows(settings.data_dir / "ip", limit=4, window_ms=600_000)
    path = settings.data_dir / "ip" / f"{windows._hash('198.51.100.1')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(found)
    for n in range(4 - counted):
        with windows.hold("198.51.100.1", 2000 + n) as record:
            record()
    with pytest.raises(errors.RateLimited):
        with windows.hold("198.51.100.1", 3000):
            pass
    assert path.read_bytes() == json.dumps({"hits": json.loads(path.read_bytes())["hits"]}
                                           ).encode()  # as json.dumps writes it


def test_a_window_swept_while_a_post_waits_is_recreated_not_written_into_the_void(settings):
    from spaces.newos4 import ratelimit
    windows = ratelimit.IpWindows(settings.data_dir / "ip", limit=5, window_ms=600_000)
    with windows.hold("198.51.100.1", 1000) as record:
        record()
    path = next((settings.data_dir / "ip").glob("*.json"))
    entered = threading.Event()

    def post():
        with windows.hold("198.51.100.1", 2000) as record:
            entered.set()
            record()

    with lock(path, 0):  # as another process's sweep holds it
        waiter = threading.Thread(target=post)
        waiter.start()
        assert not entered.wait(0.2)  # blocked on the flock we hold
        os.unlink(path)  # what the sweep does to an idle window
    waiter.join(5)
    assert entered.is_set()
    assert json.loads(path.read_text()) == {"hits": [2000]}


def _hold_flock(path):
    """Hold `path`'s flock through a separate open file, as another process would."""
    import fcntl
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_a_writer_waits_for_another_process_lock_trying_every_poll_interval(
        client, settings, clock, monkeypatch):
    """filelock's wait polls: a waiter tries again every files.POLL_S, never in a busy loop,
    and has the lock within a few intervals of its release."""
    import fcntl
    from spaces.newos4 import files
    client.say("x")
    service = ChatService(settings, clock=clock)
    held = _hold_flock(settings.chat_dir / f"{client.thread}.json.lock")
    tries, real_flock = [], fcntl.flock
    monkeypatch.setattr(fcntl, "flock", lambda fd, op: (tries.append(op), real_flock(fd, op))[1])
    writer = threading.Thread(target=service.reply, args=(client.thread, "after the holder"))
    writer.start()
    writer.join(0.5)
    assert writer.is_alive()
    waited = len(tries)
    assert set(tries) == {fcntl.LOCK_EX | fcntl.LOCK_NB}  # never a blocking flock
    assert 0.1 / files.POLL_S < waited <= 0.5 / files.POLL_S + 1
    released = time.monotonic()
    os.close(held)
    writer.join(5)
    assert not writer.is_alive()
    assert time.monotonic() - released < 0.1
    assert [m["text"] for m in service.history(client.thread)] == ["x", "after the holder"]


def test_a_lock_that_comes_after_the_timeout_is_let_go(client, settings, clock):
    client.say("x")
    service = ChatService(settings, clock=clock)
    service.store._locks.timeout_s = 0.2
    held = _hold_flock(settings.chat_dir / f"{client.thread}.json.lock")
    with pytest.raises(errors.StoreBusy):
        service.reply(client.thread, "late")
    os.close(held)
    service.store._locks.timeout_s = 5
    service.reply(client.thread, "in time")  # the abandoned wait released what it got
    assert [m["text"] for m in service.history(client.thread)] == ["x", "in time"]


def test_a_lock_file_unlinked_while_waiting_is_opened_again(client, settings, clock):
    client.say("x")
    service = ChatService(settings, clock=clock)
    lock_path = settings.chat_dir / f"{client.thread}.json.lock"
    held = _hold_flock(lock_path)
    writer = threading.Thread(target=service.reply, args=(client.thread, "y"))
    writer.start()
    writer.join(0.2)
    os.unlink(lock_path)       # a sweep of orphan lock files, racing with the waiter
    newcomer = _hold_flock(lock_path)   # ...and a newcomer locks the new file
    os.close(held)
    writer.join(0.3)
    assert writer.is_alive(), "the waiter took the unlinked inode beside the newcomer's lock"
    os.close(newcomer)
    writer.join(5)
    assert [m["text"] for m in service.history(client.thread)] == ["x", "y"]


def test_a_new_thread_below_the_cap_scans_no_folder(make_app, monkeypatch):
    testapp, _ = make_app(max_threads=100)
    ChatClient(testapp).say("the first thread counts the folder once")
    listed = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: listed.append(path) or real_listdir(path))
    for n in range(5):
        ChatClient(testapp).say(f"new thread {n}")
    assert listed == []


def test_at_the_cap_the_files_are_counted_before_a_refusal(make_app, settings):
    testapp, _ = make_app(max_threads=2)
    first, second = ChatClient(testapp), ChatClient(testapp)
    first.say("one")
    second.say("two")
    ChatClient(testapp).post(status=507)
    os.unlink(settings.chat_dir / f"{first.thread}.json")  # removed by hand: the count is stale
    ChatClient(testapp).say("fits again")
    ChatClient(testapp).post(status=507)


def test_deleted_threads_free_their_places(make_app, service, settings, clock):
    testapp, _ = make_app(max_threads=3)
    clients = [ChatClient(testapp) for _ in range(3)]
    for client in clients:
        client.say("hello")
    ChatClient(testapp).post(status=507)
    service.delete(clients[0].thread)  # the host's delete
    ChatClient(testapp).say("takes the freed place")
    clock.advance(31 * 86_400_000)  # retention empties every thread: the sweep deletes them
    service.sweep()
    for _ in range(3):
        ChatClient(testapp).say("a new thread")
    ChatClient(testapp).post(status=507)


def test_the_sweep_counts_threads_added_by_hand(make_app, service, settings):
    testapp, _ = make_app(max_threads=2)
    client = ChatClient(testapp)
    client.say("one")
    copied = settings.chat_dir / "0123456789abcdef.json"
    copied.write_bytes((settings.chat_dir / f"{client.thread}.json").read_bytes())
    assert service.sweep()["threads_counted"] == 2
    ChatClient(testapp).post(status=507)


@pytest.mark.parametrize("content", [b"", b"not a number", b"   12", b"\xff"])
def test_a_torn_or_missing_count_is_counted_again(make_app, settings, content):
    testapp, _ = make_app(max_threads=2)
    ChatClient(testapp).say("one")
    count_file = settings.data_dir / "chat-threads.count"
    count_file.write_bytes(content)
    ChatClient(testapp).say("two")  # a count at or past the cap is checked against the folder
    ChatClient(testapp).post(status=507)
    assert int(count_file.read_bytes()) == 2


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 65_537, 3 * 65_536, 800_001])
def test_a_thread_file_is_read_whole_whatever_its_size(tmp_path, size):
    from spaces.newos4.files import read_bytes
    data = os.urandom(size)
    (tmp_path / "f").write_bytes(data)
    assert read_bytes(tmp_path / "f") == data


def test_temporary_names_differ_and_carry_the_process_id(tmp_path):
    from spaces.newos4.files import tmp_name
    names = {tmp_name(tmp_path / "0123456789abcdef.json") for _ in range(1000)}
    assert len(names) == 1000
    assert all(f".0123456789abcdef.json.{os.getpid()}." in name for name in names)
    child = os.fork()
    if child == 0:  # a forked worker names its files with its own id
        os._exit(0 if f".{os.getpid()}." in tmp_name(tmp_path / "x.json") else 1)
    assert os.waitpid(child, 0)[1] == 0
