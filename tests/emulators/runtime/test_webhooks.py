"""The webhook hub against a real receiver on loopback: signed, ordered, retried, faulted."""
import json
import os

import pytest

from emulators.runtime import Service
from emulators.runtime.state.db import Database
from emulators.pytest_plugin import test_app
from emulators.runtime.webhooks import WebhookError, WebhookHub, parse_endpoints, sign
from testkit.webhook_receiver import Receiver
from testkit.counter_service import OPENAPI, provider_app


@pytest.fixture
def hub(tmp_path):
    return WebhookHub(Database(str(tmp_path / "hooks.sqlite3")), "svc", user_agent="Test-Hook/1",
                      dispatch=False)


@pytest.fixture
def receiver():
    server = Receiver(secret="s3cret")
    yield server
    server.close()


def register(hub, receiver, namespace="default", **extra):
    return hub.put_endpoints(namespace, parse_endpoints(
        [{"url": receiver.url, "secret": receiver.secret, **extra}]))


def emit_all(hub, names, namespace="default"):
    for name in names:
        hub.emit(namespace, "push", {"ref": name}, created_ms=1)


def refs(receiver):
    return [payload["ref"] for _, payload in receiver.received]


def test_deliveries_are_signed_in_order_with_githubs_headers(hub, receiver):
    [endpoint] = register(hub, receiver)
    emit_all(hub, ["a", "b", "c"])
    hub.flush()
    assert refs(receiver) == ["a", "b", "c"] and receiver.refused == []
    headers = receiver.received[0][0]
    assert headers["X-Github-Event"] == "push" and headers["User-Agent"] == "Test-Hook/1"
    assert headers["X-Github-Hook-Id"] == str(endpoint["id"])
    assert headers["Content-Type"] == "application/json"
    logged = hub.deliveries("default")
    assert [(d["status"], d["response_status"], d["attempts"]) for d in logged] == \
        [("delivered", 204, 1)] * 3
    assert headers["X-Github-Delivery"] == logged[0]["id"]


def test_the_signature_is_hmac_sha256_of_the_raw_body():
    assert sign("It's a Secret to Everybody", b"Hello, World!") == \
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"  # GitHub docs


def test_a_dispatcher_thread_delivers_without_a_flush(tmp_path, receiver):
    hub = WebhookHub(Database(str(tmp_path / "hooks.sqlite3")), "svc", user_agent="a")
    register(hub, receiver)
    emit_all(hub, ["a", "b"])
    receiver.wait_for(2)
    assert refs(receiver) == ["a", "b"]


def test_failures_are_retried_with_backoff_then_given_up(hub, tmp_path):
    flaky = Receiver(secret="k", statuses=[500, 503])
    try:
        register(hub, flaky)
        emit_all(hub, ["a"])
        assert hub.run_due() == 1
        [first] = hub.deliveries("default")
        assert (first["status"], first["attempts"], first["response_status"]) == \
            ("pending", 1, 500)
        assert hub.run_due() == 0  # not due yet: 1 s of backoff
        hub.flush()
        [done] = hub.deliveries("default")
        assert (done["status"], done["attempts"], done["response_status"]) == \
            ("delivered", 3, 204)
        dead = Receiver(statuses=[500] * 10)
        hub.put_endpoints("other", parse_endpoints([{"url": dead.url}]))
        emit_all(hub, ["x"], namespace="other")
        hub.flush("other")
        [failed] = hub.deliveries("other")
        assert (failed["status"], failed["attempts"]) == ("failed", 5)
        dead.close()
    finally:
        flaky.close()


def test_wrong_secret_is_refused_by_the_receiver(hub, receiver):
    hub.put_endpoints("default", parse_endpoints([{"url": receiver.url, "secret": "nope"}]))
    emit_all(hub, ["a"])
    hub.flush()
    assert receiver.received == [] and len(receiver.refused) == 5
    assert hub.deliveries("default")[0]["response_status"] == 401


@pytest.mark.parametrize("mode,expected,statuses", [
    ("drop", ["b", "c"], ["dropped", "delivered", "delivered"]),
    ("duplicate", ["a", "a", "b", "c"], ["delivered"] * 3),
    ("reorder", ["b", "a", "c"], ["delivered"] * 3)])
def test_delivery_faults(hub, receiver, mode, expected, statuses):
    register(hub, receiver)
    assert hub.set_fault("default", {"mode": mode}) == {"namespace": "default", "mode": mode}
    emit_all(hub, ["a", "b", "c"])
    hub.flush()
    assert refs(receiver) == expected
    assert [d["status"] for d in hub.deliveries("default")] == statuses


def test_fault_count_and_validation(hub, receiver):
    register(hub, receiver)
    assert hub.set_fault("default", {"mode": "drop", "count": 2})["count"] == 2
    emit_all(hub, ["a", "b", "c"])
    hub.flush()
    assert refs(receiver) == ["c"]
    for body in ({"mode": "lose"}, [], {"mode": "drop", "count": 0}):
        with pytest.raises(WebhookError):
            hub.set_fault("default", body)


def test_replay_sends_the_same_delivery_again(hub, receiver):
    register(hub, receiver)
    emit_all(hub, ["a"])
    hub.flush()
    first = hub.deliveries("default")[0]["id"]
    hub.replay("default", first)
    hub.flush()
    assert refs(receiver) == ["a", "a"]
    assert receiver.received[1][0]["X-Github-Delivery"] == first
    with pytest.raises(WebhookError) as caught:
        hub.replay("default", "missing")
    assert caught.value.status == 404 and caught.value.message == "no delivery missing"


def test_endpoints_filter_events_and_hide_secrets(hub, receiver):
    register(hub, receiver, events=["pull_request"])
    hub.emit("default", "push", {"ref": "a"}, created_ms=1)
    hub.emit("default", "pull_request", {"action": "opened"}, created_ms=1)
    hub.flush()
    assert receiver.events() == [("pull_request", "opened")]
    assert hub.endpoints("default")[0]["secret"] == "(set)"
    assert hub.endpoints("elsewhere") == []
    for body in ({"url": receiver.url}, [{"url": "ftp://x"}], [{"url": receiver.url, "x": 1}]):
        with pytest.raises(WebhookError, match=r"expected \[\{url, secret\?, events\?\}\]"):
            parse_endpoints(body)


def test_reset_clears_a_namespace_queue_but_keeps_its_endpoints(hub, receiver):
    register(hub, receiver)
    emit_all(hub, ["a"])
    hub.clear("default")
    assert hub.deliveries("default") == [] and len(hub.endpoints("default")) == 1
    hub.clear()
    assert hub.endpoints("default") == []


def test_queued_deliveries_survive_a_new_hub_over_the_same_database(tmp_path, receiver):
    path = str(tmp_path / "hooks.sqlite3")
    first = WebhookHub(Database(path), "svc", user_agent="a", send=lambda *a: None,
                       dispatch=False)
    register(first, receiver)
    emit_all(first, ["a", "b"])
    first.run_due()  # the process's sends fail: both stay queued
    restarted = WebhookHub(Database(path), "svc", user_agent="b", dispatch=False)
    restarted.flush()
    assert refs(receiver) == ["a", "b"]


def test_an_idle_dispatcher_stops_and_the_next_event_starts_another(
        tmp_path, receiver, monkeypatch):
    from emulators.runtime import webhooks
    monkeypatch.setattr(webhooks, "POLL_S", 0.01)
    monkeypatch.setattr(webhooks, "IDLE_ROUNDS", 3)
    hub = WebhookHub(Database(str(tmp_path / "hooks.sqlite3")), "svc", user_agent="a")
    register(hub, receiver)
    emit_all(hub, ["a"])
    first = hub._thread  # started by the emit
    receiver.wait_for(1)
    first.join(timeout=5)
    assert not first.is_alive() and hub._thread is None
    emit_all(hub, ["b"])
    receiver.wait_for(2)
    assert refs(receiver) == ["a", "b"]


PRESETS = {"hooks_lost": {"description": "503 on the next counter call and lose webhooks",
                          "rules": [{"operationId": "incrementCounter", "status": 503,
                                     "count": 1}],
                          "webhook": {"mode": "drop", "count": 1}}}


def hooked_counter(**extra):
    """The counter service with a hub: each new endpoint is pinged with its url."""
    return Service(name="counter", openapi=OPENAPI, provider_app=provider_app, presets=PRESETS,
                   webhook_ping=lambda instance, endpoint: ("ping", {"url": endpoint["url"]}),
                   **extra)


def test_a_preset_with_a_webhook_part_also_arms_a_delivery_fault(tmp_path, receiver):
    """Applying the preset sets its rules and the namespace's webhook fault (an
    override `count` counts for both); GET /faults/presets shows the part."""
    app = test_app(hooked_counter(webhooks=True), tmp_path / "e.sqlite3")
    listed = app.get("/__admin/faults/presets").json["presets"]
    assert listed == [{"name": "hooks_lost", **PRESETS["hooks_lost"]}]
    applied = app.post_json("/__admin/faults/presets/hooks_lost", {"count": 2}, status=201).json
    assert [(r["id"], r["count"]) for r in applied["rules"]] == [("hooks_lost", 2)]
    assert applied["webhook"] == {"namespace": "default", "mode": "drop", "count": 2}
    assert [app.post("/counter", expect_errors=True).status_int for _ in range(3)] == \
        [503, 503, 200]
    urls = [f"{receiver.url}?n={n}" for n in range(3)]
    app.put_json("/__admin/webhook-endpoints", [{"url": u, "secret": "s3cret"} for u in urls])
    app.post("/__admin/webhooks/flush")
    assert [d["status"] for d in app.get("/__admin/webhooks").json["deliveries"]] == [
        "dropped", "dropped", "delivered"]
    assert [payload["url"] for _, payload in receiver.received] == urls[2:]

    # in another namespace through POST /faults; an unusable namespace stores nothing
    app.post_json("/__admin/faults?namespace=w1", {"preset": "hooks_lost"}, status=201)
    assert app.post("/counter", headers={"x-mockingbird-namespace": "w1"},
                    expect_errors=True).status_int == 503
    refused = app.post_json("/__admin/faults?namespace=w2",
                            {"preset": "hooks_lost", "namespace": "*"}, status=400).json
    assert "webhook fault needs one namespace" in json.dumps(refused)
    assert sorted(f["namespace"] for f in app.get("/__admin/faults?all=1").json["faults"]) == \
        ["default", "w1"]  # the refused preset's rules rolled back with it


def test_a_preset_webhook_part_is_skipped_without_a_hub(tmp_path):
    app = test_app(hooked_counter(), tmp_path / "e.sqlite3")
    applied = app.post_json("/__admin/faults", {"preset": "hooks_lost"}, status=201).json
    assert "webhook" not in applied and len(applied["rules"]) == 1


def test_a_forked_child_resumes_on_its_own_first_request(tmp_path, receiver):
    """A gunicorn worker forked from a master that already served has no dispatcher thread:
    its first request must start one, not trust the parent's flag."""
    hub = WebhookHub(Database(str(tmp_path / "hooks.sqlite3")), "svc", user_agent="a")
    hub.resume()
    assert hub.resumed and hub._thread is None  # nothing queued: no thread started
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running pytest's teardown
        os.write(write, b"1" if not hub.resumed and hub._thread is None else b"0")
        os._exit(0)
    os.close(write)
    assert os.read(read, 1) == b"1"
    os.waitpid(pid, 0)
    os.close(read)


def test_an_event_for_one_chosen_destination_carries_its_own_secret_hook_and_headers(
        hub, receiver):
    register(hub, Receiver(secret="other"))  # a namespace endpoint: it gets nothing of this
    hub.emit_to("default", "issues", {"action": "opened"}, url=receiver.url, secret="s3cret",
                hook_id=77, headers={"X-GitHub-Hook-Installation-Target-Type": "integration"},
                created_ms=1)
    hub.flush()
    [(headers, payload)] = receiver.received
    assert payload == {"action": "opened"} and receiver.refused == []
    assert headers["X-Github-Hook-Id"] == "77"
    assert headers["X-Github-Hook-Installation-Target-Type"] == "integration"
    [delivery] = hub.deliveries("default")
    hub.replay("default", delivery["id"])  # a replay is the same delivery, headers included
    hub.flush()
    assert [h["X-Github-Hook-Installation-Target-Type"] for h, _ in receiver.received] == \
        ["integration"] * 2


def test_a_database_without_delivery_headers_gains_the_column(tmp_path):
    import sqlite3
    path = str(tmp_path / "old.sqlite3")
    Database(path).execute("SELECT 1")  # today's schema, then the column taken away
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE webhook_deliveries DROP COLUMN headers")
    conn.commit()
    conn.close()
    hub = WebhookHub(Database(path), "svc", user_agent="Test-Hook/1", dispatch=False)
    hub.emit_to("default", "ping", {}, url="http://127.0.0.1:9/x", secret=None, hook_id=1,
                headers={"X-A": "b"}, created_ms=1)
    assert [d["event"] for d in hub.deliveries("default")] == ["ping"]
