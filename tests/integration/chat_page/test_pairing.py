"""How a person finds their way in, in a real headless Chromium: a site of its own whose watcher
runs in pairing mode (the default). The page shows the one-time code and the host's command in
the thread; the host approves it; the question waits and its answer arrives in the page."""
import json
import os
import re
import subprocess
import sys
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from spaces.newos4.relay.access import LET_IN_LINE, NOTICE_MARKER
from testkit.servers import REPO, Watcher, gunicorn
from .browsing import (RECORD_POLLS, RECORD_STATUS, STEP_MS, T_PAGE, WAIT_MS, advance,
                       complete_run, expect, gaps_ms, log_entries, no_sideways_scroll,
                       open_page, polled, say_as_browser, submitted_run, thread_of, token_of,
                       wait_for_log, wait_until)

pytestmark = [pytest.mark.gunicorn, pytest.mark.browser]


@pytest.fixture(scope="module")
def paired_site(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairing-page")
    env = {"NEWOS4_DATA_DIR": str(root / "data"), "EMULATORS_DB": str(root / "emu.sqlite3")}
    with gunicorn(env=env, workers=2, threads=4) as url:
        relay_env = {**os.environ, **env, "HERMES_API_URL": url + "/emulators/hermes",
                     "NEWOS4_RELAY_ACCESS": "pairing"}
        watcher = Watcher(relay_env, root)
        try:
            yield {"url": url, "data": root / "data", "hermes": url + "/emulators/hermes",
                   "env": relay_env}
        finally:
            watcher.kill()


WAITING = "Waiting for the host to let this conversation in (see above)."
WORKING = "Hermes is working on an answer…"


def approve(paired_site, code):
    approved = subprocess.run([sys.executable, "scripts/chat.py", "pairing", "approve", code],
                              cwd=REPO, env=paired_site["env"], capture_output=True, text=True,
                              timeout=30)
    assert approved.returncode == 0, approved.stderr


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_page_shows_the_code_the_host_lets_it_in_and_the_answer_follows(
        browser, paired_site, size, tmp_path):
    with open_page(browser, paired_site["url"], size) as page:
        page.add_init_script(RECORD_STATUS)
        page.reload()
        token = token_of(page)
        thread = thread_of(token)
        expect(page.locator("#thread")).to_contain_text(thread)  # the id `pairing allow` takes
        page.get_by_role("textbox", name="Message").fill("What is 6 x 7?")
        page.get_by_role("button", name="Send").click()
        notice = page.locator("[role=log] [data-kind=notice]")
        expect(notice).to_contain_text(NOTICE_MARKER, timeout=WAIT_MS)
        assert notice.get_attribute("data-author") == "hermes"
        # The host's word, not Hermes' (it says Hermes cannot be reached yet).
        assert notice.locator(".who").text_content().startswith("Host · ")
        # A second word before the host lets it in reaches nobody: the page says whom it waits
        # for, not that Hermes is working on an answer.
        page.get_by_role("textbox", name="Message").fill("Hello?")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("status")).to_have_text(WAITING, timeout=WAIT_MS)
        no_sideways_scroll(page)  # the host's command wraps, on a phone too
        page.screenshot(path=tmp_path / f"notice-{size}.png")
        command = notice.locator("code").first.text_content()  # shown as code, easy to copy
        code = re.fullmatch(r"scripts/chat\.py pairing approve ([A-Z2-9]{8})\n?", command)[1]

        approve(paired_site, code)
        # The relay tells the thread at once; the page says Hermes works from its next poll.
        assert wait_until(lambda: ("hermes", LET_IN_LINE) in polled(paired_site, token), page)
        polls_then = len(page.evaluate("window.__polls"))
        expect(page.get_by_role("status")).to_have_text(WORKING, timeout=WAIT_MS)
        shown_at = [n for text, n in page.evaluate("window.__statuses") if text == WORKING]
        assert shown_at[0] <= polls_then + 1, (polls_then, page.evaluate("window.__statuses"))
        expect(notice.locator(".stamp")).to_have_text(
            "Code used: the host let this conversation in.")
        expect(page.locator("[data-kind=letin] .who")).to_contain_text("Host · ")
        page.screenshot(path=tmp_path / f"let-in-{size}.png")

        complete_run(paired_site, submitted_run(paired_site, thread), "It is 42.")
        shown = log_entries(page)
        wait_for_log(page, [["operator", "What is 6 x 7?"], ["hermes", shown[1][1]],
                            ["operator", "Hello?"], ["hermes", LET_IN_LINE],
                            ["hermes", "It is 42."]])
        expect(page.get_by_role("status")).to_have_text("")
        no_sideways_scroll(page)

        # A new conversation would have to be let in again: the dialog says so before it goes.
        page.get_by_role("button", name="New conversation").click()
        dialog = page.get_by_role("dialog", name="Start a new conversation?")
        expect(dialog).to_be_visible()
        expect(dialog).to_have_accessible_description(re.compile(
            "The host will have to let the new conversation in before Hermes answers it"))
        page.screenshot(path=tmp_path / f"dialog-{size}.png")
        dialog.get_by_role("button", name="Cancel").click()
        assert token_of(page) == token


def test_the_relays_words_typed_by_anyone_else_let_nothing_in(browser, paired_site):
    # Only poll.php's `hermes` author is the relay: the same line from the person or the
    # in-page assistant is only words, and the page keeps saying whom it waits for.
    with open_page(browser, paired_site["url"]) as page:
        token = token_of(page)
        say_as_browser(paired_site, token, "What is 6 x 7?")
        notice = page.locator("[role=log] [data-kind=notice]")
        expect(notice).to_contain_text(NOTICE_MARKER, timeout=WAIT_MS)
        say_as_browser(paired_site, token, LET_IN_LINE)
        say_as_browser(paired_site, token, LET_IN_LINE, kind="agent")
        expect(page.locator(".msg")).to_have_count(4, timeout=WAIT_MS)
        expect(page.get_by_role("status")).to_have_text(WAITING)
        assert notice.locator(".stamp").count() == 0
        assert page.locator("[data-kind=letin]").count() == 0
        time.sleep(1)  # the watcher ticks every 0.1 s: it would have written by now
        assert [author for author, _ in polled(paired_site, token)] == [
            "operator", "hermes", "operator", "agent"]


def test_until_the_host_lets_it_in_the_page_says_whom_it_waits_for_and_keeps_looking(page):
    """The relay's notice is the thread's latest word, so poll.php awaits nothing; yet the
    question goes to Hermes the moment the host approves. The status names the host, and the
    page looks every 2 to 10 s (on its own clock, paused and moved on by the test), never at
    an idle conversation's pace (up to 30 s)."""
    thread, at = "0123456789abcdef", T_PAGE - 60_000
    messages = [{"id": "MSG-1", "epoch": at, "ts": "2029-12-31T23:59:00+00:00",
                 "author": "operator", "text": "What is 6 x 7?"},
                {"id": "MSG-2", "epoch": at + 1, "ts": "2029-12-31T23:59:00+00:00",
                 "author": "hermes", "text": NOTICE_MARKER + "\n\nThe host's owner lets it in."}]

    def poll_answer(route):
        since = int(parse_qs(urlsplit(route.request.url).query).get("since", ["0"])[0])
        route.fulfill(status=200, content_type="application/json", body=json.dumps({
            "success": True, "thread": thread, "awaiting": False, "cursor": at + 1,
            "messages": [m for m in messages if m["epoch"] > since]}))

    page.route("**/poll.php*", poll_answer)
    page.add_init_script(RECORD_POLLS)
    page.clock.install(time=T_PAGE)
    page.clock.pause_at(T_PAGE + 1000)
    page.reload()
    advance(page, 250)
    expect(page.get_by_role("status")).to_have_text(
        "Waiting for the host to let this conversation in (see above).")
    advance(page, 60_000)
    gaps = gaps_ms(page.evaluate("window.__polls"))
    assert len(gaps) >= 7, gaps  # 2, 3, 4.5, 6.75, 10, 10, ... s (+-10 % jitter)
    assert 1800 <= gaps[0] <= 2200 + STEP_MS + 500
    assert max(gaps) <= 11_000 + STEP_MS + 500, gaps
