"""The chat page in a real headless Chromium, against real gunicorn serving the chat and the
mounted Hermes emulator, with the watching relay (`cron/relay.py --watch`) as a real process:
the journey a person takes, answers arriving as they would in production.

The browser is Debian's `chromium`, driven by Playwright with `executable_path` (no browser
download is possible here). Outside CI a missing browser skips with the reason; in CI
(`CI=true`) it fails, so the browser test cannot silently stop running.
"""
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import time
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture says why and skips (or fails in CI)
    expect = None

from spaces.newos4.app import POLL_PATH, POST_PATH
from testkit.servers import Watcher, gunicorn

pytestmark = [pytest.mark.gunicorn, pytest.mark.browser]

PAGE = "/spaces/newos4/"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
RATE_THREAD = 3  # small, so the 429 test needs only a few posts
T_PAGE = 1_893_456_000_000  # 2030-01-01T00:00:00Z: the paused page clock's start
WAIT_MS = 15000  # generous: the machine is shared, and an answer arrives within a few polls


def _unavailable(reason):
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(f"CI must run the browser test: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium under Playwright; skipped (failed in CI) if either is missing."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        _unavailable("no chromium on PATH (as root, `make test` installs Debian's package)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (it is in the [test] extras of setup.cfg)")
    with sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(executable_path=executable,
                                                  args=CHROMIUM_FLAGS)
        except Exception as exc:  # the browser's own words say what is missing
            _unavailable(f"{executable} did not start under Playwright: {exc}")
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("chat-page")
    env = {"NEWOS4_DATA_DIR": str(root / "data"), "EMULATORS_DB": str(root / "emu.sqlite3"),
           "NEWOS4_RATE_THREAD": str(RATE_THREAD)}
    with gunicorn(env=env, workers=2, threads=4) as url:
        hermes = url + "/emulators/hermes"
        watcher = Watcher({**os.environ, **env, "HERMES_API_URL": hermes}, root)
        try:
            yield {"url": url, "data": root / "data", "hermes": hermes}
        finally:
            watcher.kill()


@contextlib.contextmanager
def open_page(browser, url):
    """The chat page in a fresh browser profile (so a new token); fails on any script error."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(exc))
    page.goto(url + PAGE)
    yield page
    context.close()
    assert errors == []


@pytest.fixture
def page(browser, site):
    with open_page(browser, site["url"]) as page:
        yield page


def submitted_run(site, thread):
    """The id of the Hermes run the watching relay submitted for `thread` (waits for it)."""
    path = site["data"] / "relay" / "state.json"
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        entry = json.loads(path.read_text())["threads"].get(thread) if path.exists() else None
        if entry and entry.get("run_id"):
            return entry["run_id"]
        time.sleep(0.1)
    raise AssertionError(f"no run submitted for thread {thread}")


def token_of(page):
    return page.evaluate("localStorage.getItem('newos4.chat.token')")


def thread_of(token):
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def log_entries(page):
    """(author, text) of every message element in the log, in order."""
    return page.eval_on_selector_all(
        "[role=log] [data-author]",
        "items => items.map(m => [m.dataset.author, m.querySelector('.text').textContent])")


def wait_until(condition, page):
    """Poll `condition` from here while the page runs. (Not `wait_for_function`: the page's CSP
    forbids the eval behind a string predicate, and the test keeps that CSP on.)"""
    deadline = time.monotonic() + WAIT_MS / 1000
    while not condition() and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    return condition()


def wait_for_log(page, expected):
    wait_until(lambda: log_entries(page) == expected, page)
    assert log_entries(page) == expected


def epochs(site, token):
    body = requests.get(site["url"] + POLL_PATH, headers={"X-Chat-Token": token}, timeout=10)
    return [m["epoch"] for m in body.json()["messages"]]


def shows_something(locator):
    expect(locator).to_have_text(re.compile(r"\S"), timeout=WAIT_MS)


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

    run_id = submitted_run(site, thread_of(token))
    observed = requests.post(f"{site['hermes']}/__admin/hermes/runs/{run_id}/observe",
                             json={"status": "completed", "output": "42, of course."},
                             timeout=10)
    assert observed.status_code < 300, observed.text

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


# Records, on the page's own clock, when each poll starts (an init script: it runs before the
# page's script, whatever the Content-Security-Policy says).
RECORD_POLLS = """
window.__polls = [];
const fetchFirst = window.fetch;
window.fetch = function (resource, options) {
  if (String(resource).includes("poll.php")) window.__polls.push(Date.now());
  return fetchFirst.call(this, resource, options);
};
"""
STEP_MS = 250


def advance(page, ms):
    """Move the page's paused clock on by `ms`, a step at a time, with a moment of real time
    after each step for a poll it started to be answered before the clock moves on (so a delay
    measured on that clock is at most one step long)."""
    for _ in range(ms // STEP_MS):
        page.clock.run_for(STEP_MS)
        page.wait_for_timeout(25)


def gaps_ms(polls):
    return [b - a for a, b in zip(polls, polls[1:])]


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
