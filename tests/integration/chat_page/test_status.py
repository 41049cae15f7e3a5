"""The status line at every step, in a real headless Chromium at a desktop's size and a phone's:
after a decision (the person's or the host's) Hermes works again; with no relay running, an
overdue answer says the message is saved; and every time on the page is the reader's own, one
format, with the zone where a deadline is shown. (The host letting a conversation in is in
test_pairing.py.)"""
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from email.utils import format_datetime
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from spaces.newos4.relay.access import pairing_text
from spaces.newos4.relay.approvals import host_line
from testkit.servers import REPO
from .browsing import (WAIT_MS, choice_buttons, complete_run, expect, hermes_asks,
                       no_sideways_scroll, open_page, run_status, serve_site, submitted_run,
                       thread_of, token_of, wait_until)

pytestmark = [pytest.mark.gunicorn, pytest.mark.browser]

WORKING = "Hermes is working on an answer…"
DECIDE = "Hermes is waiting for your decision."
OVERDUE = ("No answer yet after {} minutes. Your message is saved and will be answered when "
           "the host's relay passes it to Hermes; you can close this page and come back.")
COMMAND = "chmod -R 777 /tmp/x"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A site of this module's own: the package's holds questions other tests leave waiting,
    whose runs may take every place in flight (NEWOS4_RELAY_MAX_IN_FLIGHT)."""
    with serve_site(tmp_path_factory.mktemp("status")) as served:
        yield served


@pytest.mark.parametrize("size", ["desktop", "phone"])
@pytest.mark.parametrize("who", ["person", "host"])
def test_after_a_decision_hermes_works_and_the_card_says_who_decided_what(
        browser, site, size, who, tmp_path):
    with open_page(browser, site["url"], size) as page:
        token = token_of(page)
        thread = thread_of(token)
        page.get_by_role("textbox", name="Message").fill(f"RUN: {COMMAND}")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("status")).to_have_text(WORKING, timeout=WAIT_MS)
        run_id = submitted_run(site, thread)
        hermes_asks(site, run_id, COMMAND)  # the watching relay asks in the thread
        buttons = choice_buttons(page)
        expect(buttons).to_have_text(["Allow once", "Allow for this conversation", "Deny"],
                                     timeout=WAIT_MS)
        expect(page.get_by_role("status")).to_have_text(DECIDE)
        card = page.locator(".msg.approval")
        expect(card).to_contain_text("Reply with one of these words")
        no_sideways_scroll(page)

        if who == "person":
            buttons.filter(has_text="Deny").click()
            said = "You decided: Deny."
        else:
            decided = subprocess.run(
                [sys.executable, "scripts/chat.py", "approve", thread, "deny"], cwd=REPO,
                env={**os.environ, "NEWOS4_DATA_DIR": str(site["data"])},
                capture_output=True, text=True, timeout=30)
            assert decided.returncode == 0, decided.stderr
            said = "The host decided: Deny."
            line = page.locator("[data-kind=decided]")
            expect(line.locator(".text")).to_have_text(
                host_line("deny").replace("`", ""), timeout=WAIT_MS)  # Markdown: `deny` is code
            assert line.locator(".who").text_content().startswith("Host · ")
        expect(card.locator(".stamp")).to_have_text(said, timeout=WAIT_MS)
        assert card.get_attribute("data-decided-by") == who
        expect(card.get_by_text("Reply with one of these words")).to_be_hidden()
        expect(buttons).to_have_count(0)
        # The decision reached Hermes, which works on: so the page says.
        assert wait_until(lambda: run_status(site, run_id) == "running", page)
        expect(page.get_by_role("status")).to_have_text(WORKING, timeout=WAIT_MS)
        no_sideways_scroll(page)
        page.screenshot(path=tmp_path / f"decided-by-{who}-{size}.png")

        complete_run(site, run_id, "I left /tmp/x as it was.")
        answer = page.locator("[role=log] .msg").last
        expect(answer.locator(".text")).to_have_text("I left /tmp/x as it was.", timeout=WAIT_MS)
        expect(page.get_by_role("status")).to_have_text("")


@pytest.fixture(scope="module")
def no_relay(tmp_path_factory):
    """The chat served with no relay at all (stopped, or never started)."""
    with serve_site(tmp_path_factory.mktemp("no-relay"), relay=False) as served:
        yield served["url"]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_with_no_relay_an_overdue_answer_says_the_message_is_saved_and_how_long_it_waits(
        browser, no_relay, size, tmp_path):
    """Two minutes, on the page's own clock (Playwright's, moved on by the test)."""
    with open_page(browser, no_relay, size) as page:
        page.clock.install()
        page.reload()
        page.get_by_role("textbox", name="Message").fill("Are you there?")
        page.get_by_role("button", name="Send").click()
        status = page.get_by_role("status")
        expect(status).to_have_text(WORKING, timeout=WAIT_MS)
        page.clock.fast_forward(100_000)
        page.wait_for_timeout(1500)  # polls on the moved clock: still within the bound
        expect(status).to_have_text(WORKING)
        page.clock.fast_forward(25_000)
        expect(status).to_have_text(OVERDUE.format(2), timeout=WAIT_MS)
        no_sideways_scroll(page)
        page.screenshot(path=tmp_path / f"overdue-{size}.png")
        page.clock.fast_forward(60_000)
        expect(status).to_have_text(OVERDUE.format(3), timeout=WAIT_MS)


def ms(*args):
    return int(datetime(*args, tzinfo=timezone.utc).timestamp() * 1000)


def test_times_are_the_readers_own_in_one_format_and_a_deadline_names_its_zone(browser, site):
    """In India (UTC+5:30, so minutes move too): the relay writes the code's deadline in UTC;
    the page shows it as the reader's time, zone named, in the format of every other time.
    Once it has passed, the code is shown as expired and the status says what to do."""
    asked = ms(2030, 1, 1, 7, 12)
    notice = pairing_text("K7Q2MZ4P", asked + 3_600_000)
    assert "(until 08:12 UTC)" in notice
    messages = [
        {"id": "MSG-1", "epoch": asked, "ts": "2030-01-01T07:12:00+00:00", "author": "operator",
         "text": "What is 6 x 7?"},
        {"id": "MSG-2", "epoch": asked + 1, "ts": "2030-01-01T07:12:00+00:00",
         "author": "hermes", "text": notice}]

    opened = asked + 60_000
    # The server's clock as its first answer gives it (the page reads it once): the page's.
    server_date = format_datetime(datetime.fromtimestamp(opened / 1000, timezone.utc),
                                  usegmt=True)

    def poll_answer(route):
        since = int(parse_qs(urlsplit(route.request.url).query).get("since", ["0"])[0])
        route.fulfill(status=200, content_type="application/json",
                      headers={"Date": server_date}, body=json.dumps({
                          "success": True, "thread": "0123456789abcdef", "awaiting": False,
                          "cursor": asked + 1,
                          "messages": [m for m in messages if m["epoch"] > since]}))

    with open_page(browser, site["url"], timezone_id="Asia/Kolkata", locale="en-US") as page:
        page.route("**/poll.php*", poll_answer)
        page.clock.install(time=datetime.fromtimestamp(opened / 1000, timezone.utc))
        page.reload()
        shown = page.locator("[data-kind=notice]")
        expect(shown).to_contain_text("K7Q2MZ4P", timeout=WAIT_MS)
        assert page.locator(".msg .who time").all_text_contents() == ["12:42 PM", "12:42 PM"]
        expect(shown.locator(".text time")).to_have_text("01:42 PM GMT+5:30")
        assert "UTC" not in shown.locator(".text").text_content()
        expect(page.get_by_role("status")).to_have_text(
            "Waiting for the host to let this conversation in (see above).")

        page.clock.fast_forward(3_600_000)  # past 08:12 UTC
        expect(shown.locator(".stamp")).to_have_text("This code has expired.", timeout=WAIT_MS)
        expect(page.get_by_role("status")).to_have_text(
            "The code above has expired: send a message to get a new one.")
