"""The chat page in a real headless Chromium, against real gunicorn serving the chat and the
mounted Hermes emulator, with the watching relay (`cron/relay.py --watch`) as a real process:
the journey a person takes, answers arriving as they would in production; the alerts, the
polling back-off, the layout, and a new conversation."""
import json
import re
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from spaces.newos4.app import POLL_PATH, POST_PATH
from testkit.servers import gunicorn
from .browsing import (PAGE, RATE_THREAD, RECORD_POLLS, STEP_MS, T_PAGE, WAIT_MS, advance,
                       complete_run, epochs, expect, gaps_ms, log_entries, open_page, polled,
                       shows_something, submitted_run, thread_of, token_of, wait_for_log,
                       wait_until)

pytestmark = [pytest.mark.gunicorn, pytest.mark.browser]


def test_a_question_is_answered_and_the_conversation_survives_a_reload(page, site):
    box = page.get_by_role("textbox", name="Message")
    status = page.get_by_role("status")
    sinces = []
    page.on("request", lambda r: sinces.append(int(parse_qs(urlsplit(r.url).query)["since"][0]))
            if urlsplit(r.url).path.endswith("/poll.php") else None)
    token = token_of(page)
    assert re.fullmatch(r"[0-9a-f]{64}", token)
    expect(page.get_by_role("log")).to_have_attribute("aria-busy", "false")
    assert log_entries(page) == [] and status.text_content() == ""

    box.fill("What is 6 x 7?")
    page.get_by_role("button", name="Send").click()
    wait_for_log(page, [["operator", "What is 6 x 7?"]])
    assert box.input_value() == ""
    shows_something(status)
    # Polls while awaiting leave the status alone: a live region re-announces every change.
    page.evaluate("""() => { window.statusChanges = 0; new MutationObserver(
        () => window.statusChanges++).observe(document.querySelector('[role=status]'),
        {childList: true, characterData: true, subtree: true}); }""")
    page.wait_for_timeout(2500)
    assert page.evaluate("window.statusChanges") == 0

    complete_run(site, submitted_run(site, thread_of(token)), "42, of course.")

    answered = [["operator", "What is 6 x 7?"], ["hermes", "42, of course."]]
    wait_for_log(page, answered)
    expect(status).to_have_text("", timeout=WAIT_MS)
    # The page asks only for what is new: since = the cursor of its last answer.
    stored = epochs(site, token)
    assert wait_until(lambda: stored[-1] in sinces, page), sinces
    assert sinces == sorted(sinces) and set(sinces) <= {0, *stored}

    # newOS4's in-page assistant writes to the same conversation as `agent`.
    noted = requests.post(site["url"] + POST_PATH, json={"text": "Noted.", "kind": "agent"},
                          headers={"X-Chat-Token": token}, timeout=10)
    assert noted.status_code == 201
    answered.append(["agent", "Noted."])
    page.reload()
    wait_for_log(page, answered)
    assert token_of(page) == token
    shows_something(status)  # the last word is not Hermes': awaiting again

    too_long = "x" * 4000 + "!"
    box.fill(too_long)
    page.get_by_role("button", name="Send").click()
    alert = page.get_by_role("alert")
    shows_something(alert)
    assert "text too long (max 4000 chars)" in alert.text_content()
    assert box.input_value() == too_long
    assert log_entries(page) == answered
    polled = requests.get(site["url"] + POLL_PATH, headers={"X-Chat-Token": token}, timeout=10)
    assert len(polled.json()["messages"]) == 3
    page.reload()  # what was typed and not sent survives a reload too
    wait_for_log(page, answered)
    assert box.input_value() == too_long


def test_a_rate_limited_message_shows_the_wait_and_keeps_the_text(page):
    box = page.get_by_role("textbox", name="Message")
    box.press_sequentially("two")
    box.press("Shift+Enter")  # a new line, not a send
    box.press_sequentially("lines")
    assert box.input_value() == "two\nlines" and log_entries(page) == []
    box.press("Enter")  # Enter sends from a keyboard
    sent = [["operator", "two\nlines"]]
    wait_for_log(page, sent)
    for n in range(1, RATE_THREAD):
        sent.append(["operator", f"message {n}"])
        box.fill(f"message {n}")
        box.press("Enter")
        wait_for_log(page, sent)
    box.fill("one too many")
    with page.expect_response(lambda r: r.url.endswith("post.php")) as answer:
        page.get_by_role("button", name="Send").click()
    assert answer.value.status == 429
    minutes = -(-int(answer.value.headers["retry-after"]) // 60)
    shows_something(page.get_by_role("alert"))
    alert = page.get_by_role("alert").text_content()
    assert "rate limit" in alert and f"Try again in {minutes} minutes" in alert
    assert box.input_value() == "one too many" and log_entries(page) == sent


def refused_with_text_kept(page, shown):
    box = page.get_by_role("textbox", name="Message")
    box.fill("keep me")
    page.get_by_role("button", name="Send").click()
    shows_something(page.get_by_role("alert"))
    assert shown in page.get_by_role("alert").text_content()
    assert box.input_value() == "keep me" and log_entries(page) == []


def test_a_full_host_is_an_alert_and_the_text_stays(browser, tmp_path):
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db"),
           "NEWOS4_MAX_THREADS": "1"}
    with gunicorn(env=env, workers=1, threads=2) as url:
        first = requests.post(url + POST_PATH, json={"text": "the only thread"},
                              headers={"X-Chat-Token": secrets.token_hex(32)}, timeout=10)
        assert first.status_code == 201
        with open_page(browser, url) as page:
            refused_with_text_kept(page, "the chat is full right now (thread limit reached)")


def test_a_busy_server_is_an_alert_and_the_text_stays(page):
    # The store's 503 needs a lock held for seconds; what the page shows needs only the answer.
    page.route("**/post.php", lambda route: route.fulfill(
        status=503, content_type="application/json",
        body=json.dumps({"success": False, "error": "busy, try again"})))
    refused_with_text_kept(page, "busy, try again (HTTP 503)")


def test_polling_backs_off_on_errors_and_when_idle_and_recovers(page):
    """On the page's clock (Playwright's, paused and moved on by the test): the back-off's
    seconds cost no wall time, and each delay is measured within its +-10% jitter."""
    failing = {"on": True}
    page.route("**/poll.php*",
               lambda route: route.abort() if failing["on"] else route.continue_())
    page.add_init_script(RECORD_POLLS)
    page.clock.install(time=T_PAGE)
    page.clock.pause_at(T_PAGE + 1000)
    page.reload()
    advance(page, 250)
    shows_something(page.get_by_role("alert"))
    assert "Cannot reach the chat server" in page.get_by_role("alert").text_content()
    advance(page, 7500)  # failing polls back off: 2 s, then 4 s
    failing["on"] = False
    polls = page.evaluate("window.__polls")
    gaps = gaps_ms(polls)
    assert len(polls) == 3, gaps
    assert 1800 <= gaps[0] <= 2200 + STEP_MS + 500 and 3600 <= gaps[1] <= 4400 + STEP_MS + 500

    page.evaluate("window.dispatchEvent(new Event('online'))")  # back online: look at once
    expect(page.get_by_role("alert")).to_have_text("")
    advance(page, 7500)  # an idle conversation backs off too: 2 s, then 4 s
    idle = page.evaluate("window.__polls")[len(polls):]
    gaps = gaps_ms(idle)
    assert len(idle) == 3, gaps
    assert 1800 <= gaps[0] <= 2200 + STEP_MS + 500 and 3600 <= gaps[1] <= 4400 + STEP_MS + 500


@pytest.mark.parametrize("width, height", [(390, 780), (1280, 800)])
def test_the_page_fits_a_phone_and_a_desktop(browser, site, width, height):
    context = browser.new_context(viewport={"width": width, "height": height},
                                  is_mobile=width < 500, has_touch=width < 500)
    page = context.new_page()
    page.goto(site["url"] + PAGE)
    send = page.get_by_role("button", name="Send").bounding_box()
    box = page.get_by_role("textbox", name="Message").bounding_box()
    overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
    context.close()
    assert overflow <= 0
    for part in (send, box):  # the composer is on screen without scrolling
        assert part["x"] >= 0 and part["x"] + part["width"] <= width
        assert part["y"] >= 0 and part["y"] + part["height"] <= height
    assert send["height"] >= 40  # a comfortable touch target


def test_a_new_conversation_gets_a_fresh_token_and_the_old_thread_stays(page, site):
    old = token_of(page)
    box = page.get_by_role("textbox", name="Message")
    box.fill("the first conversation")
    box.press("Enter")
    wait_for_log(page, [["operator", "the first conversation"]])
    other_tab = page.context.new_page()
    other_tab.goto(site["url"] + PAGE)
    wait_for_log(other_tab, [["operator", "the first conversation"]])
    dialog = page.get_by_role("dialog", name="Start a new conversation?")

    page.get_by_role("button", name="New conversation").click()
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")  # a change of mind keeps everything
    expect(dialog).to_be_hidden()
    page.get_by_role("button", name="New conversation").click()
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert token_of(page) == old and log_entries(page) == [["operator", "the first conversation"]]

    page.get_by_role("button", name="New conversation").click()
    dialog.get_by_role("button", name="Start new conversation").click()
    expect(dialog).to_be_hidden()
    wait_until(lambda: token_of(page) != old, page)  # the dialog's close event comes after
    new = token_of(page)
    assert re.fullmatch(r"[0-9a-f]{64}", new) and new != old
    assert log_entries(page) == []
    expect(page.get_by_text("No messages yet.")).to_be_visible()
    expect(page.get_by_text("Conversation " + thread_of(new))).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_role("status")).to_have_text("")
    assert page.evaluate("document.activeElement.id") == "message"
    # The browser's other tab follows: one browser, one conversation.
    expect(other_tab.get_by_text("Conversation " + thread_of(new))).to_be_visible()
    assert log_entries(other_tab) == []
    other_tab.close()

    box.fill("the second one")
    box.press("Enter")
    wait_for_log(page, [["operator", "the second one"]])
    page.reload()
    wait_for_log(page, [["operator", "the second one"]])
    assert token_of(page) == new
    # The old thread is still on the server, untouched, under the usual retention.
    assert (site["data"] / "chat" / f"{thread_of(old)}.json").exists()
    assert polled(site, old)[0] == ("operator", "the first conversation")
    assert polled(site, new) == [("operator", "the second one")]
