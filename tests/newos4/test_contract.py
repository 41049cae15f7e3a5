"""Every row of the frozen chat contract and every decision where it was silent (the chat's
manual, spaces/newos4/README.md), over the WSGI app."""
import json
import re

import pytest

from spaces.newos4.app import POLL_PATH, POST_PATH, RETIRED_PATH

from .conftest import T0, ChatClient, files_under, new_token

UNAUTHORIZED = {"success": False, "error": "missing or malformed X-Chat-Token"}
TOO_LONG = {"success": False, "error": "text too long (max 4000 chars)"}
NOT_ALLOWED = {"success": False, "error": "Method not allowed"}


def test_post_returns_201_with_id_epoch_ts_and_thread(client):
    body = client.post({"text": "message body", "kind": "operator"}).json
    assert body == {"success": True, "id": body["id"], "epoch": T0,
                    "ts": "2026-10-23T18:40:00+00:00", "thread": client.thread}
    assert re.fullmatch(r"MSG-20261023-184000-[0-9a-f]{6}", body["id"])


def test_thread_is_the_first_16_hex_of_sha256_of_the_token(testapp):
    token = "0123456789abcdef" * 4
    body = ChatClient(testapp, token).post().json
    # sha256("0123…cdef" * 4) = a8ae6e6ee929abea…, computed independently
    assert body["thread"] == "a8ae6e6ee929abea"


def test_kind_defaults_to_operator_and_agent_is_accepted(client):
    client.say("from the human")
    client.say("from the in-page AI", kind="agent")
    authors = [m["author"] for m in client.poll().json["messages"]]
    assert authors == ["operator", "agent"]


def test_poll_returns_thread_messages_awaiting_and_cursor(client, clock):
    first = client.say("one")
    clock.advance(5)
    second = client.say("two")
    body = client.poll().json
    assert body == {"success": True, "thread": client.thread, "awaiting": True,
                    "cursor": second["epoch"], "messages": [
                        {"id": first["id"], "epoch": first["epoch"], "ts": first["ts"],
                         "author": "operator", "text": "one"},
                        {"id": second["id"], "epoch": second["epoch"], "ts": second["ts"],
                         "author": "operator", "text": "two"}]}


def test_poll_since_excludes_older_and_equal_epochs(client, clock):
    first = client.say("one")
    clock.advance(1)
    second = client.say("two")
    assert [m["text"] for m in client.poll(first["epoch"]).json["messages"]] == ["two"]
    assert client.poll(second["epoch"]).json["messages"] == []
    assert client.poll(second["epoch"]).json["cursor"] == second["epoch"]
    assert [m["text"] for m in client.poll(0).json["messages"]] == ["one", "two"]


def test_two_messages_in_the_same_millisecond_get_increasing_epochs(client):
    epochs = [client.say(f"m{i}")["epoch"] for i in range(5)]
    assert epochs == [T0, T0 + 1, T0 + 2, T0 + 3, T0 + 4]
    cursor, seen = 0, []
    for _ in range(3):
        batch = client.poll(cursor).json
        seen += [m["text"] for m in batch["messages"]]
        cursor = batch["cursor"]
    assert seen == ["m0", "m1", "m2", "m3", "m4"]


def test_epochs_never_go_backwards_when_the_clock_does(client, clock):
    first = client.say("before")
    clock.advance(-60_000)
    second = client.say("after the clock stepped back")
    assert second["epoch"] == first["epoch"] + 1
    assert second["ts"] == first["ts"]


def test_ts_and_id_are_derived_from_the_epoch(client, clock):
    clock.now = T0 + 59_876  # 18:40:59.999
    body = client.say("x")
    assert body["ts"] == "2026-10-23T18:40:59+00:00"
    assert body["id"].startswith("MSG-20261023-184059-")


def test_awaiting_is_false_after_a_hermes_reply_and_true_after_an_operator(client, service):
    client.say("question")
    service.reply(client.thread, "answer")
    assert client.poll().json["awaiting"] is False
    client.say("follow-up")
    assert client.poll().json["awaiting"] is True


def test_poll_returns_at_most_the_50_newest_oldest_first(make_app, clock):
    testapp, _ = make_app(rate_thread=1000, rate_ip=1000)
    client = ChatClient(testapp)
    for i in range(60):
        client.say(f"m{i}")
    texts = [m["text"] for m in client.poll().json["messages"]]
    assert texts == [f"m{i}" for i in range(10, 60)]
    since = client.poll().json["messages"][0]["epoch"] - 5  # older than the 50 newest
    assert len(client.poll(since).json["messages"]) == 50


def test_polling_an_unknown_thread_is_empty_and_creates_nothing(client, settings):
    body = client.poll().json
    assert body == {"success": True, "thread": client.thread, "messages": [],
                    "awaiting": False, "cursor": 0}
    assert files_under(settings.data_dir) == []


def test_polling_never_writes(client, settings):
    client.say("hello")
    before = {p: p.stat().st_mtime_ns for p in settings.data_dir.rglob("*")}
    for since in (None, 0, 1, T0):
        client.poll(since)
    after = {p: p.stat().st_mtime_ns for p in settings.data_dir.rglob("*")}
    assert before == after


@pytest.mark.parametrize("token", [None, "", "abc", "A" * 64, "g" * 64, "a" * 63, "a" * 65,
                                   "a" * 64 + "\n", " " + "a" * 63])
def test_missing_or_malformed_token_is_401_and_touches_no_file(testapp, settings, token):
    headers = {} if token is None else {"X-Chat-Token": token}
    post = testapp.post_json(POST_PATH, {"text": "x"}, headers=headers, status=401)
    poll = testapp.get(POLL_PATH, headers=headers, status=401)
    assert post.json == UNAUTHORIZED and poll.json == UNAUTHORIZED
    assert files_under(settings.data_dir) == []


def test_body_over_32kb_is_413_before_the_body_is_parsed(client, settings):
    raw = b"{" + b" " * 32768 + b"}"
    assert client.post(raw=raw, status=413).json == TOO_LONG
    assert files_under(settings.chat_dir) == []


def test_body_of_exactly_32kb_is_read(client):
    text = "x" * 3000
    raw = ('{"text": "%s"}' % text).encode()
    raw = raw[:-1] + b" " * (32768 - len(raw)) + b"}"
    assert len(raw) == 32768
    assert client.post(raw=raw).json["success"] is True


def test_text_over_4000_code_points_is_413_and_4000_emoji_are_accepted(client):
    assert client.post({"text": "😀" * 4001}, status=413).json == TOO_LONG
    # As a browser's JSON.stringify sends it: raw UTF-8, 16000 bytes for 4000 code points.
    client.post(raw=json.dumps({"text": "😀" * 4000}, ensure_ascii=False).encode())
    assert client.poll().json["messages"][0]["text"] == "😀" * 4000


def test_text_is_stored_as_sent_never_trimmed(client):
    text = "  spaced\n\ttext  \u0000 "
    client.say(text)
    assert client.poll().json["messages"][0]["text"] == text


@pytest.mark.parametrize("raw,error", [
    (b"not json", "body must be a JSON object"),
    (b"", "body must be a JSON object"),
    (b"[1, 2]", "body must be a JSON object"),
    (b'"text"', "body must be a JSON object"),
    (b"\xff\xfe", "body must be a JSON object"),
    (b"{}", "text is required"),
    (b'{"text": 5}', "text must be a string"),
    (b'{"text": null}', "text must be a string"),
    (b'{"text": ""}', "text must be a non-empty string"),
    (b'{"text": "x", "kind": "hermes"}', "kind hermes is written by the host only"),
    (b'{"text": "x", "kind": "admin"}', "kind must be operator or agent"),
    (b'{"text": "x", "kind": null}', "kind must be a string"),
    (b'{"text": "\\ud800"}', "text is not valid Unicode (lone surrogate)"),
])
def test_bad_bodies_are_400_with_what_is_wrong(client, settings, raw, error):
    assert client.post(raw=raw, status=400).json == {"success": False, "error": error}
    assert files_under(settings.chat_dir) == []


@pytest.mark.parametrize("since", ["-1", "1.5", "1e3", "abc", "", "+5", " 5", "٣", "5%0A"])
def test_since_must_be_ascii_digits(client, since):
    body = client.poll(query=f"?since={since}", status=400).json
    assert body == {"success": False, "error": "since must be epoch milliseconds (ASCII digits)"}


def test_rate_limit_20_per_thread_per_10_minutes_with_retry_after(client, clock, settings):
    for i in range(20):
        client.say(f"m{i}")
        clock.advance(1000)
    answer = client.post({"text": "one too many"}, status=429)
    assert answer.json["success"] is False and answer.json["error"].startswith("rate limit")
    assert "per thread" in answer.json["error"]
    assert answer.headers["Retry-After"] == str(600 - 20)  # the first message leaves at T0+600s
    assert len(client.poll().json["messages"]) == 20
    clock.advance(580_000)  # T0 + 600.000 s: the first message is exactly 10 minutes old
    client.say("the window slid")


def test_hermes_replies_do_not_count_against_the_thread_window(client, service):
    for i in range(19):
        client.say(f"m{i}")
        service.reply(client.thread, f"r{i}")
    client.say("twentieth")
    client.post({"text": "21st"}, status=429)


def test_rate_limit_40_per_ip_across_tokens(testapp, clock):
    for i in range(40):
        ChatClient(testapp, remote_addr="198.51.100.9").say(f"t{i}")
    answer = ChatClient(testapp, remote_addr="198.51.100.9").post(status=429)
    assert "per IP" in answer.json["error"] and answer.headers["Retry-After"] == "600"
    ChatClient(testapp, remote_addr="198.51.100.10").say("another address is fine")
    clock.advance(600_000)
    ChatClient(testapp, remote_addr="198.51.100.9").say("window over")


def test_rejected_messages_do_not_count_against_the_ip_window(testapp):
    client = ChatClient(testapp, remote_addr="198.51.100.20")
    for _ in range(45):
        client.post({"text": ""}, status=400)
    client.say("still allowed")


def test_ip_windows_store_a_hash_not_the_address(testapp, settings):
    ChatClient(testapp, remote_addr="198.51.100.77").say("x")
    for path in settings.data_dir.rglob("*"):
        if path.is_file():
            assert b"198.51.100.77" not in path.read_bytes()
            assert "198.51.100.77" not in path.name


def _ip_limited_after(testapp, remote_addr, forwarded_for, n=40):
    for i in range(n):
        ChatClient(testapp, remote_addr=remote_addr).post(
            headers={"X-Forwarded-For": forwarded_for(i)})
    return ChatClient(testapp, remote_addr=remote_addr)


def test_untrusted_peer_cannot_mint_addresses_with_x_forwarded_for(testapp):
    client = _ip_limited_after(testapp, "198.51.100.30", lambda i: f"10.0.0.{i}")
    client.post(headers={"X-Forwarded-For": "10.9.9.9"}, status=429)


def test_behind_a_trusted_proxy_the_right_most_untrusted_hop_is_the_client(testapp):
    # The proxy appends the real client; whatever the client claims sits further left.
    client = _ip_limited_after(testapp, "127.0.0.1", lambda i: f"10.0.0.{i}, 198.51.100.40")
    client.post(headers={"X-Forwarded-For": "1.2.3.4, 198.51.100.40"}, status=429)
    client.post(headers={"X-Forwarded-For": "198.51.100.41, 127.0.0.1"})


def test_no_trusted_proxies_means_the_socket_peer_always(make_app):
    testapp, _ = make_app(trusted_proxies=())
    client = _ip_limited_after(testapp, "127.0.0.1", lambda i: f"198.51.100.{i}")
    client.post(headers={"X-Forwarded-For": "198.51.100.200"}, status=429)


def test_thread_cap_is_507_for_new_threads_and_existing_threads_keep_working(make_app):
    testapp, _ = make_app(max_threads=3, rate_ip=1000)
    clients = [ChatClient(testapp) for _ in range(3)]
    for c in clients:
        c.say("hi")
    assert ChatClient(testapp).post(status=507).json == {
        "success": False, "error": "thread limit reached"}
    clients[0].say("still here")


def test_check_order_405_401_413_400_413_429_507(make_app, clock):
    testapp, _ = make_app(max_threads=1, rate_thread=1)
    bad = ChatClient(testapp, token="bad")
    assert testapp.put(POST_PATH, status=405).json == NOT_ALLOWED
    assert bad.post(raw=b"x" * 40000, status=401).json == UNAUTHORIZED
    good = ChatClient(testapp)
    assert good.post(raw=b"x" * 40000, status=413).json == TOO_LONG
    assert good.post({"text": "x" * 5000, "kind": "hermes"}, status=400).json["error"] \
        == "kind hermes is written by the host only"
    good.say("first")
    assert good.post({"text": "x" * 5000}, status=413).json == TOO_LONG
    assert good.post({"text": "y"}, status=429).status_int == 429
    assert ChatClient(testapp).post(status=507).status_int == 507


@pytest.mark.parametrize("method", ["get", "put", "delete", "patch", "options"])
def test_wrong_method_on_post_php_is_405_with_allow(testapp, method):
    answer = getattr(testapp, method)(POST_PATH, status=405)
    assert answer.json == NOT_ALLOWED and answer.headers["Allow"] == "POST"
    assert answer.content_type == "application/json"


@pytest.mark.parametrize("method", ["post", "put", "delete", "options"])
def test_wrong_method_on_poll_php_is_405_with_allow(testapp, method):
    answer = getattr(testapp, method)(POLL_PATH, status=405)
    assert answer.json == NOT_ALLOWED and answer.headers["Allow"] == "GET"


def test_retired_agent_replies_endpoint_is_410_with_a_pointer(testapp):
    assert testapp.post(RETIRED_PATH, status=410).json == {
        "success": False, "error": "gone: use /spaces/newos4/api/chat/post.php"}
    assert testapp.get(RETIRED_PATH, status=405).headers["Allow"] == "POST"


@pytest.mark.parametrize("path", [
    "/", "/spaces/newos4/data/chat/", "/spaces/newos4/api/chat/post.php/",
    "/spaces/newos4/api/chat/../../data/chat/x.json", "/spaces/newos4/data%2Fchat%2Fx.json",
    "/spaces/newos4/api/chat/list.php", "/spaces/newos4/spaces/newos4/data/chat-create.lock"])
def test_unknown_paths_are_json_404_and_data_is_never_served(client, testapp, path):
    client.say("secret")
    answer = testapp.get(path, status=404, headers={"X-Chat-Token": client.token})
    assert answer.json == {"success": False, "error": "not found"}
    assert b"secret" not in answer.body


def test_every_response_is_json(client, testapp):
    for answer in (client.post(), client.poll(), testapp.get("/nope", status=404),
                   testapp.post(RETIRED_PATH, status=410)):
        assert answer.content_type == "application/json"


def test_the_stored_file_is_exactly_the_documented_format(client, settings):
    sent = client.say("hello")
    doc = json.loads((settings.chat_dir / f"{client.thread}.json").read_text())
    assert doc == {"thread": client.thread, "messages": [
        {"id": sent["id"], "epoch": sent["epoch"], "ts": sent["ts"], "author": "operator",
         "text": "hello"}]}
    assert sorted(p.name for p in settings.chat_dir.iterdir()) == [
        f"{client.thread}.json", f"{client.thread}.json.lock"]


def test_repeated_since_takes_the_last_value_like_php(client, clock):
    first = client.say("a")
    clock.advance(1)
    client.say("b")
    body = client.poll(query=f"?since=0&since={first['epoch']}").json
    assert [m["text"] for m in body["messages"]] == ["b"]


def test_distinct_tokens_have_distinct_threads(testapp):
    a, b = ChatClient(testapp), ChatClient(testapp)
    a.say("for a")
    assert b.poll().json["messages"] == []
    assert new_token() != new_token()


def test_a_refused_request_creates_no_file(make_app, settings, service):
    """Twenty refused new threads (507) leave chat/ as it was; so do the other refusals, even
    from an address the server has never seen (no empty IP window is left behind)."""
    testapp, _ = make_app(max_threads=1, rate_thread=1, rate_ip=1000)
    first = ChatClient(testapp, remote_addr="198.51.100.1")
    first.say("the one thread allowed")
    before = files_under(settings.data_dir)
    for i in range(20):
        ChatClient(testapp, remote_addr=f"198.51.100.{100 + i}").post(status=507)
    assert [p for p in files_under(settings.data_dir) if p.startswith("chat/")] == \
        [p for p in before if p.startswith("chat/")]
    stranger = ChatClient(testapp, token=first.token, remote_addr="203.0.113.99")
    stranger.post({"text": "over the thread window"}, status=429)
    ChatClient(testapp, remote_addr="203.0.113.98").post({"text": "x" * 5000}, status=413)
    ChatClient(testapp, remote_addr="203.0.113.97").post(raw=b"{", status=400)
    ChatClient(testapp, token="bad", remote_addr="203.0.113.96").post(status=401)
    ChatClient(testapp, remote_addr="203.0.113.95").poll(since=0)
    with pytest.raises(Exception, match="no such thread"):
        service.reply("00000000000000aa", "to nobody")
    assert service.deliver("00000000000000ab", "MSG-1", ["an answer"]) == "superseded"
    after = files_under(settings.data_dir)
    ip_windows = [p for p in after if p.startswith("ratelimit/ip/") and p.endswith(".json")]
    assert len(ip_windows) == 21  # the accepted post's and the twenty 507s' addresses
    assert [p for p in after if not p.startswith("ratelimit/")] == \
        [p for p in before if not p.startswith("ratelimit/")]
