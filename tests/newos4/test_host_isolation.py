"""One bad thread, answer or file never stops the host side: scripts/chat.py and cron/relay.py
run as real processes against real files; a bad item is reported once and skipped, the rest is
done in the same run, nothing is overwritten, and the exit status says something needs a look."""
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spaces.newos4.clock import FixedClock, SystemClock
from spaces.newos4.service import DAY_MS, ChatService
from spaces.newos4.settings import Settings
from testkit.hermes.stub import HermesStub

REPO = Path(__file__).resolve().parents[2]

# The bad thread files of the issue, by name: content on disk (None: a directory).
BAD_FILES = {
    "not_json": b"not json",
    "malformed_message": b'{"messages": [{"text": "x"}]}',
    "lone_surrogate": b'{"thread": "x", "messages": [{"id": "MSG-1", "epoch": 1, "ts": "t",'
                      b' "author": "operator", "text": "bad \\ud800 text"}]}',
    "directory": None,
}


def run(data_dir, *args, stdin=None, env=None):
    environ = {**os.environ, "NEWOS4_DATA_DIR": str(data_dir), "HERMES_API_URL": "",
               **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=environ, input=stdin,
                          capture_output=True, timeout=60)


def text(done):
    return done.stdout.decode(), done.stderr.decode()


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def host(data_dir):
    """The chat rules over the real clock, as the browser side would have written."""
    return ChatService(Settings(data_dir=data_dir))


def thread_name(n):
    return f"{n:016x}"


def seed(host, n, text="question?"):
    thread = thread_name(n)
    host.post(thread, text, "operator", f"198.51.100.{n}")
    return thread


def plant_bad_threads(data_dir):
    """One bad file per kind, named like threads 0xb00..; return {thread: kind}."""
    chat = data_dir / "chat"
    chat.mkdir(parents=True, exist_ok=True)
    planted = {}
    for offset, (kind, content) in enumerate(BAD_FILES.items()):
        thread = thread_name(0xb00 + offset)
        path = chat / f"{thread}.json"
        if content is None:
            path.mkdir()
        else:
            path.write_bytes(content)
        planted[thread] = kind
    return planted


def snapshot(data_dir, threads):
    chat = data_dir / "chat"
    return {t: None if (chat / f"{t}.json").is_dir() else (chat / f"{t}.json").read_bytes()
            for t in threads}


def test_list_reports_each_bad_thread_once_and_lists_the_others(host, data_dir):
    good = [seed(host, 1), seed(host, 2)]
    host.reply(good[1], "answered")
    bad = plant_bad_threads(data_dir)
    before = snapshot(data_dir, bad)
    for args in (["list"], ["list", "--awaiting"], ["list", "--json"]):
        done = run(data_dir, "scripts/chat.py", *args)
        out, err = text(done)
        assert done.returncode == 1
        assert good[0] in out and (good[1] in out) == ("--awaiting" not in args)
        problems = err.splitlines()
        assert sorted(line.split()[3].rstrip(":") for line in problems) == sorted(bad), err
        assert all(line.startswith("chat.py: skipped thread ") for line in problems)
        assert "Traceback" not in err
    assert snapshot(data_dir, bad) == before


def test_show_of_a_bad_thread_says_why_in_one_line(host, data_dir):
    bad = plant_bad_threads(data_dir)
    for thread, kind in bad.items():
        done = run(data_dir, "scripts/chat.py", "show", thread)
        out, err = text(done)
        assert done.returncode == 1 and out == ""
        assert err.startswith(f"chat.py: {data_dir / 'chat' / thread}.json: ") and \
            err.count("\n") == 1, (kind, err)


def test_sweep_skips_bad_threads_and_sweeps_the_rest(host, data_dir):
    host.clock = FixedClock(int(time.time() * 1000) - 31 * DAY_MS)
    stale = seed(host, 1, "a month ago")
    host.clock = SystemClock()
    fresh = seed(host, 2)
    bad = plant_bad_threads(data_dir)
    before = snapshot(data_dir, bad)
    done = run(data_dir, "cron/relay.py", "--sweep-only")
    out, err = text(done)
    assert done.returncode == 1
    assert '"threads_removed": 1' in out
    assert not (data_dir / "chat" / f"{stale}.json").exists()
    assert (data_dir / "chat" / f"{fresh}.json").exists()
    lines = err.splitlines()
    assert len(lines) == len(bad) and "Traceback" not in err
    for thread in bad:
        assert sum(f"relay: PROBLEM thread={thread} skipped: " in line for line in lines) == 1
    assert snapshot(data_dir, bad) == before


def test_relay_relays_every_good_thread_past_bad_ones(host, data_dir):
    good = [seed(host, 1), seed(host, 2, "second?")]
    bad = plant_bad_threads(data_dir)
    with HermesStub().serving() as hermes:
        done = run(data_dir, "cron/relay.py", env={"HERMES_API_URL": hermes.url})
        out, err = text(done)
        assert done.returncode == 1 and "Traceback" not in err
        assert sorted(body["input"] for body, _ in hermes.submits) == ["question?", "second?"]
        for thread in bad:  # reported by the sweep, not again by the relay
            assert err.count(f"thread={thread} ") == 1, err
        hermes.complete(hermes.run_for("question?"), '"first answer"')
        hermes.complete(hermes.run_for("second?"), '"second answer"')
        done = run(data_dir, "cron/relay.py", env={"HERMES_API_URL": hermes.url})
    assert done.returncode == 1
    assert [m["text"] for m in host.history(good[0])] == ["question?", "first answer"]
    assert [m["text"] for m in host.history(good[1])] == ["second?", "second answer"]


def test_a_thread_unreadable_while_its_run_is_in_flight_keeps_its_run(host, data_dir):
    thread = seed(host, 1)
    path = data_dir / "chat" / f"{thread}.json"
    with HermesStub().serving() as hermes:
        env = {"HERMES_API_URL": hermes.url}
        assert run(data_dir, "cron/relay.py", env=env).returncode == 0
        state = (data_dir / "relay" / "state.json").read_bytes()
        good = path.read_bytes()
        path.write_bytes(b"{half a write by someone's editor")
        done = run(data_dir, "cron/relay.py", env=env)
        assert done.returncode == 1 and text(done)[1].count("\n") == 1
        assert (data_dir / "relay" / "state.json").read_bytes() == state
        assert hermes.stops == []
        path.write_bytes(good)
        hermes.complete("run_1", '"kept"')
        assert run(data_dir, "cron/relay.py", env=env).returncode == 0
    assert [m["text"] for m in host.history(thread)] == ["question?", "kept"]
    assert len(hermes.submits) == 1


def test_the_sweep_reports_a_broken_folder_and_still_relays(host, data_dir):
    seed(host, 1)
    old = time.time() - 7200
    strays = [data_dir / "ratelimit" / "ip" / "0123.json", data_dir / "chat" / ".x.json.1.a.tmp",
              data_dir / "chat" / "00000000000000c1.json.lock"]
    for stray in strays:  # directories where our files would be: not ours, never deleted
        stray.mkdir()
        os.utime(stray, (old, old))
    swept = run(data_dir, "cron/relay.py", "--sweep-only")
    assert swept.returncode == 0 and swept.stderr == b""
    assert all(p.is_dir() for p in strays)
    windows = data_dir / "ratelimit" / "ip"
    windows.rename(data_dir / "ratelimit" / "ip.moved")
    windows.write_text("a file where the windows folder should be")
    with HermesStub().serving() as hermes:
        done = run(data_dir, "cron/relay.py", env={"HERMES_API_URL": hermes.url})
        out, err = text(done)
        assert done.returncode == 1 and "Traceback" not in err
        assert err == f"relay: PROBLEM sweep ip_windows: [Errno 20] Not a directory: " \
                      f"'{windows}'\n"
        assert [body["input"] for body, _ in hermes.submits] == ["question?"]
    assert all(p.is_dir() for p in strays[1:])


def test_an_answer_with_a_lone_surrogate_is_repaired_loudly_and_jams_nothing(host, data_dir):
    broken, other = seed(host, 1, "broken?"), seed(host, 2, "other?")
    with HermesStub().serving() as hermes:
        env = {"HERMES_API_URL": hermes.url}
        assert run(data_dir, "cron/relay.py", env=env).returncode == 0
        hermes.complete(hermes.run_for("broken?"), r'"bad \ud800 answer"')
        hermes.complete(hermes.run_for("other?"), '"fine"')
        done = run(data_dir, "cron/relay.py", env=env)
        out, err = text(done)
        assert done.returncode == 1 and "Traceback" not in err
        assert err.count("relay: PROBLEM") == 1 and "1 lone surrogate(s)" in err
        assert f"thread={broken}" in err
        assert [m["text"] for m in host.history(broken)] == ["broken?", "bad \ufffd answer"]
        assert [m["text"] for m in host.history(other)] == ["other?", "fine"]
        seed(host, 3, "later?")
        again = run(data_dir, "cron/relay.py", env=env)
    assert again.returncode == 0, again.stderr
    assert [body["input"] for body, _ in hermes.submits][-1] == "later?"
    json.loads((data_dir / "chat" / f"{broken}.json").read_bytes().decode("utf-8"))


def test_with_hermes_down_one_line_says_so_not_one_per_thread(host, data_dir):
    for n in range(13):
        seed(host, n + 1)
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    done = run(data_dir, "cron/relay.py", env={"HERMES_API_URL": url})
    out, err = text(done)
    assert done.returncode == 1
    assert err.count("\n") == 1 and err.startswith(f"relay: PROBLEM Hermes is unreachable at {url}")
    assert "13 waiting thread(s) wait for the next run" in err
    state = json.loads((data_dir / "relay" / "state.json").read_text())["threads"]
    assert len(state) == 1 and next(iter(state.values()))["key"]  # replayed with that key next


@pytest.mark.parametrize("content", [b"{not json", b'{"threads": []}', b"[1]",
                                     b"\xff\xfe", b"[" * 5000])
def test_a_corrupt_relay_state_is_kept_aside_and_the_relay_goes_on(host, data_dir, content):
    """The question may have been submitted by the state that was lost: Hermes' transcript
    (empty here) shows it was not once the grace period is over, and it goes once."""
    thread = seed(host, 1)
    state = data_dir / "relay" / "state.json"
    state.parent.mkdir(parents=True)
    state.write_bytes(content)
    with HermesStub().serving() as hermes:
        env = {"HERMES_API_URL": hermes.url, "NEWOS4_RELAY_TRANSCRIPT_GRACE_S": "1"}
        done = run(data_dir, "cron/relay.py", env=env)
        out, err = text(done)
        assert done.returncode == 1 and "Traceback" not in err
        assert err.count("\n") == 1 and "relay state" in err
        assert "kept as state.json.corrupt-" in err
        assert hermes.submits == []
        kept = list(state.parent.glob("state.json.corrupt-*"))
        assert [p.read_bytes() for p in kept] == [content]
        assert thread in json.loads(state.read_text())["threads"]
        time.sleep(1.1)
        assert run(data_dir, "cron/relay.py", env=env).returncode == 0
        assert [body["input"] for body, _ in hermes.submits] == ["question?"]
        assert run(data_dir, "cron/relay.py", env=env).returncode == 0


def test_malformed_relay_records_start_over_and_the_file_is_kept(host, data_dir):
    good, bad = seed(host, 1, "good?"), seed(host, 2, "bad?")
    with HermesStub().serving() as hermes:
        env = {"HERMES_API_URL": hermes.url}
        assert run(data_dir, "cron/relay.py", env=env).returncode == 0
        state = data_dir / "relay" / "state.json"
        doc = json.loads(state.read_text())
        doc["threads"][bad]["attempts"] = "many"
        state.write_text(json.dumps(doc))
        hermes.complete(hermes.run_for("good?"), '"good answer"')
        done = run(data_dir, "cron/relay.py", env=env)
        out, err = text(done)
    assert done.returncode == 1 and "1 malformed record(s)" in err and bad in err
    assert [m["text"] for m in host.history(good)][-1] == "good answer"
    assert len(list(state.parent.glob("state.json.corrupt-*"))) == 1
    # The bad record started over with its generation-0 key: the same run is replayed.
    assert hermes.submits[-1][1] == hermes.submits[1][1]


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:port",
                                 "http://:8642", "127.0.0.1:8642"])
def test_a_bad_hermes_url_is_one_line_before_anything_runs(data_dir, url):
    done = run(data_dir, "cron/relay.py", env={"HERMES_API_URL": url})
    out, err = text(done)
    assert done.returncode == 1 and out == ""
    assert err == f"relay: HERMES_API_URL: expected an http(s) URL with a host and a valid " \
                  f"port, got {url!r}\n"


def test_reply_refuses_text_that_is_not_utf8_in_one_line(host, data_dir):
    thread = seed(host, 1)
    path = data_dir / "chat" / f"{thread}.json"
    before = path.read_bytes()
    done = subprocess.run([sys.executable, "scripts/chat.py", "reply", thread, b"bad \xff arg"],
                          cwd=REPO, env={**os.environ, "NEWOS4_DATA_DIR": str(data_dir)},
                          capture_output=True, timeout=60)
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr == b"chat.py: TEXT is not valid UTF-8 (byte 0xff at offset 4)\n"
    done = run(data_dir, "scripts/chat.py", "reply", thread, "-",
               stdin="caf\xe9!".encode("latin-1"))
    assert done.returncode == 1
    assert done.stderr == b"chat.py: standard input is not valid UTF-8 (byte 0xe9 at offset 3)\n"
    assert path.read_bytes() == before


def test_a_data_dir_that_is_a_file_is_one_line_for_every_host_tool(tmp_path):
    not_a_dir = tmp_path / "data"
    not_a_dir.write_text("oops")
    for args in (["scripts/chat.py", "list"], ["scripts/chat.py", "reply", thread_name(1), "x"],
                 ["cron/relay.py", "--sweep-only"]):
        done = run(not_a_dir, *args)
        out, err = text(done)
        assert done.returncode == 1 and "Traceback" not in err and err.count("\n") == 1, err
        assert f"NEWOS4_DATA_DIR: {not_a_dir} is not a directory" in err
