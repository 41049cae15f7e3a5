"""What operators and careless clients do to the chat app: deep nesting, 507 floods, the health
route, and the operator's kit in scripts/chat.py (check, delete, clear-rate) as real processes."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spaces.newos4.app import HEALTH_PATH

from .conftest import ChatClient

REPO = Path(__file__).resolve().parents[2]


def chat(data_dir, *args):
    return subprocess.run([sys.executable, "scripts/chat.py", *args], cwd=REPO,
                          env={**os.environ, "NEWOS4_DATA_DIR": str(data_dir)},
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("body", [
    b"[" * 5000,
    b'{"text": "x", "deep": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b"{" + b'"a":{' * 5000 + b"}" * 5001])
def test_deeply_nested_json_is_a_400_not_a_500(client, settings, body):
    answer = client.post(raw=body, status=400)
    assert answer.json == {"success": False, "error": "body must be a JSON object"}
    assert not settings.chat_dir.exists()


def test_a_507_counts_against_the_ip_window(make_app):
    testapp, _ = make_app(max_threads=1, rate_ip=3)
    ChatClient(testapp, remote_addr="198.51.100.5").say("the one thread")
    statuses = [ChatClient(testapp, remote_addr="198.51.100.5").post(status="*").status_int
                for _ in range(4)]
    assert statuses == [507, 507, 429, 429]
    # Another client is not affected; the existing thread still takes messages from elsewhere.
    assert ChatClient(testapp, remote_addr="198.51.100.6").post(status=507)


def test_health_is_200_when_the_data_directory_is_usable(testapp, settings):
    answer = testapp.get(HEALTH_PATH)
    assert answer.json == {"success": True, "status": "ok"}
    assert answer.headers["Cache-Control"] == "no-store"
    assert testapp.head(HEALTH_PATH).status_int == 200
    assert sorted(p.name for p in settings.data_dir.iterdir()) == []  # the probe is gone
    assert testapp.post(HEALTH_PATH, status=405).headers["Allow"] == "GET, HEAD"


def test_health_is_503_without_details_when_the_data_directory_is_gone(make_app, tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    testapp, _ = make_app(data_dir=not_a_dir)
    answer = testapp.get(HEALTH_PATH, status=503)
    assert answer.json == {"success": False, "error": "data directory not usable"}
    assert str(tmp_path) not in answer.text


def write_thread(chat_dir, name, content):
    chat_dir.mkdir(parents=True, exist_ok=True)
    (chat_dir / name).write_bytes(content)


def test_check_reports_corrupt_foreign_and_leftover_files_and_exits_1(client, settings):
    client.say("fine")
    write_thread(settings.chat_dir, "00000000000000b1.json", b"not json")
    write_thread(settings.chat_dir, "00000000000000b2.json", b'{"messages": [{"text": "x"}]}')
    write_thread(settings.chat_dir, "notes.txt", b"hello")
    (settings.chat_dir / "00000000000000b3.json").mkdir()
    write_thread(settings.chat_dir, "00000000000000d1.json.lock", b"")
    done = chat(settings.data_dir, "check")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:-1] == [
        "corrupt   00000000000000b1.json: not valid JSON (Expecting value: line 1 column 1 "
        "(char 0))",
        "corrupt   00000000000000b2.json: message 0 is not an object with string id, ts, "
        "author, text and integer epoch",
        "corrupt   00000000000000b3.json: cannot be read (Is a directory)",
        "leftover  00000000000000d1.json.lock: lock file",
        "foreign   notes.txt: not a thread, lock or temporary file",
    ]
    assert lines[-1].startswith(f"checked 7 entries in {settings.chat_dir} (4 thread files): "
                                "2 ok, 3 corrupt, 1 foreign, 1 leftover")
    assert (settings.chat_dir / "notes.txt").read_bytes() == b"hello"  # changes nothing


def test_check_of_a_clean_folder_exits_0(client, settings):
    client.say("fine")
    done = chat(settings.data_dir, "check")
    assert done.returncode == 0 and "0 corrupt, 0 foreign" in done.stdout


def test_delete_removes_a_thread_and_its_lock_and_refuses_corrupt_files_without_force(
        client, settings):
    client.say("bye")
    done = chat(settings.data_dir, "delete", client.thread)
    assert done.returncode == 0
    assert done.stdout == f"deleted thread {client.thread} (1 message(s))\n"
    assert list(settings.chat_dir.iterdir()) == []
    assert client.poll().json["messages"] == []
    missing = chat(settings.data_dir, "delete", client.thread)
    assert missing.returncode == 1
    assert missing.stderr == f"chat.py: no such thread: {client.thread}\n"
    assert list(settings.chat_dir.iterdir()) == []  # no lock file left behind
    assert "0 leftover" in chat(settings.data_dir, "check").stdout
    write_thread(settings.chat_dir, "00000000000000b1.json", b"not json")
    refused = chat(settings.data_dir, "delete", "00000000000000b1")
    assert refused.returncode == 1 and "not valid JSON" in refused.stderr
    assert (settings.chat_dir / "00000000000000b1.json").exists()
    forced = chat(settings.data_dir, "delete", "--force", "00000000000000b1")
    assert forced.returncode == 0 and "(a corrupt file)" in forced.stdout
    assert not (settings.chat_dir / "00000000000000b1.json").exists()


def test_clear_rate_forgets_one_clients_ip_window(make_app, settings):
    testapp, _ = make_app(rate_ip=2)
    for _ in range(2):
        ChatClient(testapp, remote_addr="198.51.100.7").say("hi")
    ChatClient(testapp, remote_addr="198.51.100.8").say("other")
    assert ChatClient(testapp, remote_addr="198.51.100.7").post(status=429)
    done = chat(settings.data_dir, "clear-rate", "198.51.100.7")
    assert done.returncode == 0 and done.stdout == "cleared the per-IP window of 198.51.100.7\n"
    ChatClient(testapp, remote_addr="198.51.100.7").say("welcome back")
    again = chat(settings.data_dir, "clear-rate", "198.51.100.9")
    assert again.returncode == 0 and "nothing to clear" in again.stdout
    bad = chat(settings.data_dir, "clear-rate", "not-an-ip")
    assert bad.returncode == 1 and bad.stderr == "chat.py: not an IP address: 'not-an-ip'\n"
    # The other client's window is untouched: one more is its last.
    ChatClient(testapp, remote_addr="198.51.100.8").say("second")
    assert ChatClient(testapp, remote_addr="198.51.100.8").post(status=429)
