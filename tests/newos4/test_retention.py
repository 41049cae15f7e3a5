"""Retention: newest 200 messages, 30 days, applied on append and by the sweep."""
import datetime
import json
import os
import re
import time

import pytest
import webtest

from spaces.newos4.app import create_app
from spaces.newos4.service import DAY_MS, STALE_FILE_S
from testkit import freezing

from .conftest import T0, ChatClient


def test_append_keeps_only_the_newest_200(make_app, service, clock):
    testapp, _ = make_app(rate_thread=10_000, rate_ip=10_000, rate_window_s=1)
    client = ChatClient(testapp)
    for i in range(205):
        client.say(f"m{i}")
        clock.advance(1000)  # each post has left the rate window before the next
    stored = service.history(client.thread)
    assert len(stored) == 200 and stored[0]["text"] == "m5" and stored[-1]["text"] == "m204"


def test_a_thread_limit_above_keep_messages_still_holds(make_app, service, clock):
    """Retention never drops a message the per-thread window still counts."""
    testapp, _ = make_app(rate_thread=5, keep_messages=2)
    client = ChatClient(testapp)
    for i in range(5):
        client.say(f"m{i}")
    assert client.post({"text": "sixth"}, status=429)
    assert len(service.history(client.thread)) == 5
    clock.advance(600_000 + 10)  # the window has passed: retention is back to the newest 2
    client.say("later")
    assert [m["text"] for m in service.history(client.thread)] == ["m4", "later"]


def test_long_answers_do_not_push_counted_messages_out_of_the_window(make_app, service):
    testapp, chat = make_app(rate_thread=3, keep_messages=4)
    client = ChatClient(testapp)
    for question in ("q1", "q2", "q3"):
        client.say(question)
        chat.reply(client.thread, "a part")
        chat.reply(client.thread, "another part")
    assert client.post({"text": "q4"}, status=429)
    kept = service.history(client.thread)
    assert [m["text"] for m in kept if m["author"] != "hermes"] == ["q1", "q2", "q3"]


def test_append_drops_messages_older_than_30_days(client, clock, service):
    client.say("old")
    clock.advance(30 * DAY_MS)
    client.say("exactly 30 days later: the old one is 30 days old, kept")
    assert len(service.history(client.thread)) == 2
    clock.advance(1)
    client.say("one millisecond more: the old one goes")
    assert [m["text"] for m in service.history(client.thread)][0].startswith("exactly")


def test_sweep_trims_old_messages_and_removes_emptied_threads(make_app, clock, service, settings):
    testapp, _ = make_app()
    stale, fresh = ChatClient(testapp), ChatClient(testapp)
    stale.say("will expire")
    clock.advance(29 * DAY_MS)
    fresh.say("recent 1")
    clock.advance(1 * DAY_MS + 1)
    fresh.say("recent 2")
    mixed = fresh.thread
    outcome = service.sweep()
    assert outcome["threads_removed"] == 1 and outcome["threads_trimmed"] == 0
    assert not (settings.chat_dir / f"{stale.thread}.json").exists()
    assert len(service.history(mixed)) == 2
    clock.advance(29 * DAY_MS + 1)
    outcome = service.sweep()
    assert outcome["threads_trimmed"] == 1
    assert [m["text"] for m in service.history(mixed)] == ["recent 2"]


def test_sweep_removes_stale_temporary_files_only(client, service, settings):
    client.say("x")
    stale = settings.chat_dir / f".{client.thread}.json.123.abcd.tmp"
    young = settings.chat_dir / f".{client.thread}.json.456.ef01.tmp"
    stale.write_text("{}")
    young.write_text("{}")
    old = time.time() - STALE_FILE_S - 10
    os.utime(stale, (old, old))
    assert service.sweep()["tmp_removed"] == 1
    assert not stale.exists() and young.exists()


def test_sweep_forgets_idle_ip_windows(client, clock, service, settings):
    client.say("x")
    folder = settings.data_dir / "ratelimit" / "ip"
    assert len(list(folder.glob("*.json"))) == 1
    clock.advance(600_001)
    assert service.sweep()["ip_windows_removed"] == 1
    assert list(folder.glob("*.json")) == []


def test_with_the_system_clock_ids_and_ts_follow_frozen_time(settings):
    with freezing.frozen("2026-10-23 18:40:00.123"):
        client = ChatClient(webtest.TestApp(create_app(settings)))
        body = client.say("x")
    assert body["epoch"] == T0
    assert body["ts"] == "2026-10-23T18:40:00+00:00"
    assert re.fullmatch(r"MSG-20261023-184000-[0-9a-f]{6}", body["id"])


def test_with_the_system_clock_the_10_minute_window_slides(settings):
    with freezing.frozen("2026-10-23 18:40:00") as frozen:
        client = ChatClient(webtest.TestApp(create_app(settings)))
        for _ in range(20):
            client.say("x")
        assert client.post(status=429).headers["Retry-After"] == "600"
        frozen.tick(datetime.timedelta(minutes=9, seconds=59))
        assert client.post(status=429).headers["Retry-After"] == "1"
        frozen.tick(datetime.timedelta(seconds=1))
        client.say("slid")


def test_with_the_system_clock_30_day_retention_applies(settings, service):
    with freezing.frozen("2026-09-01") as frozen:
        client = ChatClient(webtest.TestApp(create_app(settings)))
        client.say("september")
        frozen.tick(datetime.timedelta(days=31))
        client.say("october")
    doc = json.loads((settings.chat_dir / f"{client.thread}.json").read_text())
    assert [m["text"] for m in doc["messages"]] == ["october"]


@pytest.mark.parametrize("keep", [1, 3])
def test_keep_messages_is_configurable(make_app, service, clock, keep):
    testapp, _ = make_app(keep_messages=keep, rate_window_s=1)
    client = ChatClient(testapp)
    for i in range(5):
        client.say(f"m{i}")
        clock.advance(1000)  # out of the rate window, which would otherwise keep it
    assert [m["text"] for m in service.history(client.thread)] == \
        [f"m{i}" for i in range(5 - keep, 5)]
