"""The chat page in a real headless Chromium, against real gunicorn serving the chat and the
mounted Hermes emulator, with the watching relay (`cron/relay.py --watch`) as a real process:
the journey a person takes, answers arriving as they would in production.

The approval journey also runs, opt-in, against a real Hermes 0.19.0 server with its terminal
toolset (HERMES_ORACLE_URL, HERMES_ORACLE_KEY if not the oracle's default; see
tests/integration/test_relay_approvals.py for how to start one).

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
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture says why and skips (or fails in CI)
    expect = None

from spaces.newos4.app import POLL_PATH, POST_PATH
from spaces.newos4.service import ChatService
from spaces.newos4.settings import Settings
from testkit.hermes_driver import HermesDriver
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
    """The chat page in a fresh browser profile (so a new token); fails on any script error and
    on anything the Content-Security-Policy refused (the page must need nothing it forbids)."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(exc))
    page.on("console", lambda message: errors.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.goto(url + PAGE)
    yield page
    context.close()
    assert errors == []


@pytest.fixture
def page(browser, site):
    with open_page(browser, site["url"]) as page:
        yield page


def submitted_run(site, thread, other_than=()):
    """The id of the Hermes run the watching relay submitted for `thread` (waits for it); not
    one of `other_than` (runs already answered)."""
    path = site["data"] / "relay" / "state.json"
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        entry = json.loads(path.read_text())["threads"].get(thread) if path.exists() else None
        if entry and entry.get("run_id") and entry["run_id"] not in other_than:
            return entry["run_id"]
        time.sleep(0.1)
    raise AssertionError(f"no run submitted for thread {thread}")


def complete_run(site, run_id, output):
    """Let the emulated Hermes finish `run_id` with `output`, as a model would."""
    observed = requests.post(f"{site['hermes']}/__admin/hermes/runs/{run_id}/observe",
                             json={"status": "completed", "output": output}, timeout=10)
    assert observed.status_code < 300, observed.text


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


# --- approvals, Markdown, a new conversation ----------------------------------------------------

APPROVAL = """Hermes asks before running a command:

````
chmod -R 777 /tmp/x && echo ```done```
````

Why: world/other-writable permissions

Reply with one of these words:
{choices}

Any other reply refuses the command and is sent to Hermes as your next message."""
EXPLAINED = {"once": "allow it this time",
             "session": "allow commands like it for the rest of this conversation",
             "always": "always allow commands like it", "deny": "refuse it"}
LABELS = {"once": "Allow once", "session": "Allow for this conversation",
          "always": "Always allow", "deny": "Deny"}


def approval(*choices):
    """An approval request in the relay's layout (README: the chat page)."""
    return APPROVAL.format(choices="\n".join(f"- `{c}`: {EXPLAINED[c]}" for c in choices))


def hermes_says(site, token, text):
    """Write `text` into the token's thread as Hermes, through the store as the host does."""
    service = ChatService(Settings.from_env({"NEWOS4_DATA_DIR": str(site["data"])}))
    service.reply(thread_of(token), text)


def say_as_browser(site, token, text, kind="operator"):
    answer = requests.post(site["url"] + POST_PATH, json={"text": text, "kind": kind},
                           headers={"X-Chat-Token": token}, timeout=10)
    assert answer.status_code == 201, answer.text


def polled(site, token):
    body = requests.get(site["url"] + POLL_PATH, headers={"X-Chat-Token": token}, timeout=10)
    return [(m["author"], m["text"]) for m in body.json()["messages"]]


def choice_buttons(page):
    return page.get_by_role("group", name="Your decision").get_by_role("button")


def test_an_approval_request_is_answered_with_a_click(page, site):
    # The request comes as a run's output here, so its layout can hold what a real command
    # rarely does (backticks); the relay's own asking is the end-to-end test further down.
    token = token_of(page)
    box = page.get_by_role("textbox", name="Message")
    box.fill("RUN: chmod -R 777 /tmp/x")
    page.get_by_role("button", name="Send").click()
    first = submitted_run(site, thread_of(token))
    request = approval("once", "session", "always", "deny")
    complete_run(site, first, request)

    expect(page.locator(".msg")).to_have_count(2, timeout=WAIT_MS)
    shown = page.locator(".msg.approval")
    expect(shown).to_contain_text("Why: world/other-writable permissions")
    assert shown.get_attribute("data-author") == "hermes"
    buttons = choice_buttons(page)
    expect(buttons).to_have_text([LABELS[c] for c in ("once", "session", "always", "deny")])
    # The command is shown whole, in its code block, backticks and all.
    command = page.locator(".msg.approval pre code")
    assert command.text_content() == "chmod -R 777 /tmp/x && echo ```done```\n"

    buttons.filter(has_text="Allow once").click()
    expect(page.locator(".msg")).to_have_count(3, timeout=WAIT_MS)
    assert log_entries(page)[-1] == ["operator", "once"]
    expect(buttons).to_have_count(0)
    # An ordinary post.php message: the bare word, from the person.
    assert polled(site, token)[-1] == ("operator", "once")
    assert page.evaluate("document.activeElement.id") == "message"  # typing can go on

    complete_run(site, submitted_run(site, thread_of(token), other_than={first}),
                 "Done: `chmod -R 777 /tmp/x` **ran**.")
    answer = page.locator("[role=log] [data-author=hermes]").last
    expect(answer.locator("strong")).to_have_text("ran", timeout=WAIT_MS)
    expect(answer.locator("code")).to_have_text("chmod -R 777 /tmp/x")
    expect(page.get_by_role("status")).to_have_text("", timeout=WAIT_MS)


def test_choices_are_the_offered_ones_only_on_the_latest_message_and_work_by_keyboard(page, site):
    token = token_of(page)
    say_as_browser(site, token, "RUN: chmod -R 777 /tmp/x")
    hermes_says(site, token, approval("once", "deny"))
    buttons = choice_buttons(page)
    expect(buttons).to_have_text(["Allow once", "Deny"], timeout=WAIT_MS)
    expect(page.get_by_role("status")).to_have_text("Hermes is waiting for your decision.")

    # Anything later (here the person's own words) answers the request: the buttons go.
    box = page.get_by_role("textbox", name="Message")
    box.fill("what would that do?")
    box.press("Enter")
    expect(buttons).to_have_count(0)
    expect(page.get_by_role("status")).to_have_text("Hermes is working on an answer…")
    hermes_says(site, token, approval("once", "session", "deny"))
    expect(buttons).to_have_text(["Allow once", "Allow for this conversation", "Deny"],
                                 timeout=WAIT_MS)
    page.reload()  # a fresh look offers them on the latest request only
    expect(buttons).to_have_count(3, timeout=WAIT_MS)
    assert page.locator(".choices").count() == 1
    assert page.locator(".msg").last.locator(".choices").count() == 1

    # From the keyboard: the choices come right before the message box.
    box.focus()
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.textContent") == "Deny"
    page.keyboard.press("Enter")
    expect(buttons).to_have_count(0, timeout=WAIT_MS)
    assert polled(site, token)[-1] == ("operator", "deny")


MARKDOWN = """6 x 7 = **42**.

Steps:
1. open a *terminal*
2. run `ls -l`

- see [the docs](https://example.com/docs?a=1&b=2)
- ~~old~~ new

```python
print("<b>not bold</b>")
```"""


def test_hermes_markdown_is_rendered_and_the_persons_text_stays_plain(page, site):
    token = token_of(page)
    mine = "**not bold** <b>not markup</b> [no link](https://example.com)\n  two spaces"
    say_as_browser(site, token, mine)
    hermes_says(site, token, MARKDOWN)
    answer = page.locator("[role=log] [data-author=hermes] .text")
    expect(answer.locator("strong")).to_have_text("42", timeout=WAIT_MS)
    expect(answer.locator("ol > li")).to_have_text(["open a terminal", "run ls -l"])
    expect(answer.locator("ol em")).to_have_text("terminal")
    expect(answer.locator("ul > li")).to_have_count(2)
    expect(answer.locator("del")).to_have_text("old")
    expect(answer.locator("pre > code")).to_have_text('print("<b>not bold</b>")\n')
    assert answer.locator("pre b").count() == 0
    link = answer.get_by_role("link", name="the docs")
    assert link.get_attribute("href") == "https://example.com/docs?a=1&b=2"
    assert link.get_attribute("target") == "_blank"
    assert link.get_attribute("rel") == "noopener noreferrer"
    assert "**" not in answer.text_content()

    operator = page.locator("[role=log] [data-author=operator] .text")
    assert operator.text_content() == mine  # exactly as typed, marks and blanks kept
    assert operator.evaluate("t => t.children.length") == 0

    # The in-page assistant's Markdown is rendered too; but only Hermes asks for approval: the
    # same words from anyone else offer no buttons.
    say_as_browser(site, token, approval("once", "deny"), kind="agent")
    agent = page.locator("[role=log] [data-author=agent] .text")
    expect(agent.locator("li code")).to_have_text(["once", "deny"], timeout=WAIT_MS)
    assert choice_buttons(page).count() == 0


HOSTILE = [
    "<script>window.pwned = 'script'</script>",
    "<img src=x onerror=\"window.pwned = 'img'\">",
    "<svg onload=\"window.pwned = 'svg'\"><circle r=9></circle></svg>",
    "<iframe src=\"javascript:window.pwned = 'iframe'\"></iframe>",
    "<iframe srcdoc=\"<script>parent.pwned = 'srcdoc'</script>\"></iframe>",
    "<details open ontoggle=\"window.pwned = 'details'\"><summary>x</summary></details>",
    "<p style=\"position:fixed;inset:0;background:red\">cover the page</p>",
    "<a href=\"javascript:window.pwned = 'html link'\">html link</a>",
    "[md link](javascript:window.pwned='md%20link')",
    "[spaced link](  JaVaScRiPt:window.pwned='spaced')",
    "[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[ref link][1]\n\n[1]: javascript:window.pwned='ref'",
    "![image link](javascript:window.pwned='image')",
    "![tracker](https://example.com/pixel.gif)",
    "<form action=\"https://example.com\"><input name=q><button>Go</button></form>",
    "<math><mtext><table><mglyph><style><img src=x onerror=\"window.pwned='mxss'\">",
    "<object data=\"javascript:window.pwned='object'\"></object><embed src=x>",
    "<base href=\"https://example.com/\"><meta http-equiv=refresh content=\"0;url=x\">",
    "`<img src=x onerror=\"window.pwned='code'\">` and **<i onmouseover=x>bold</i>**",
]


def test_raw_html_in_a_message_is_shown_never_run_or_injected(browser, site):
    # Without the page's CSP, so that only the page's own rendering stands in the way.
    context = browser.new_context(bypass_csp=True)
    page = context.new_page()
    page.goto(site["url"] + PAGE)
    token = token_of(page)
    say_as_browser(site, token, "show me some tricks")
    for text in HOSTILE:
        hermes_says(site, token, text)
    say_as_browser(site, token, "\n".join(HOSTILE[:3]), kind="agent")
    items = page.locator("[role=log] .msg")
    expect(items).to_have_count(len(HOSTILE) + 2, timeout=WAIT_MS)
    for link in page.locator("[role=log] a:not([href])").all():
        link.click()  # what is left of a refused link does nothing when clicked
    page.wait_for_timeout(500)  # time for any onerror/onload that slipped through

    assert page.evaluate("window.pwned") is None
    log = page.locator("[role=log]")
    injected = log.locator("script, img, svg, math, iframe, object, embed, form, input, button, "
                           "details, style, base, meta, b, i")
    assert injected.count() == 0, injected.evaluate_all("els => els.map(e => e.outerHTML)")
    attributes = log.evaluate("""log => [...log.querySelectorAll('*')].flatMap(
        el => [...el.attributes].map(a => a.name)).filter(
        n => n.startsWith('on') || n === 'style' || n === 'src' || n === 'srcdoc')""")
    assert attributes == []
    hrefs = log.locator("a[href]").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs == ["https://example.com/pixel.gif"]  # the image, as a link to follow or not
    shown = log.text_content()
    for words in ("<script>window.pwned = 'script'</script>", "<p style=", "<form action=",
                  "<img src=x onerror=\"window.pwned='code'\">"):
        assert words in shown  # raw HTML is text, there to read
    context.close()


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


def test_the_approval_request_reads_well_on_a_phone_and_a_desktop(browser, site, tmp_path):
    token = secrets.token_hex(32)
    say_as_browser(site, token, "What is 6 x 7?")
    hermes_says(site, token, MARKDOWN + "\n\n```\n" + "a-very-long-line " * 20 + "\n```")
    say_as_browser(site, token, "RUN: chmod -R 777 /tmp/x")
    hermes_says(site, token, approval("once", "session", "always", "deny").replace(
        "/tmp/x", "/tmp/" + "a-very-long-directory-name/" * 6))
    for width, height in [(390, 780), (1280, 800)]:
        context = browser.new_context(viewport={"width": width, "height": height},
                                      is_mobile=width < 500, has_touch=width < 500)
        context.add_init_script(f"localStorage.setItem('newos4.chat.token', '{token}')")
        page = context.new_page()
        page.goto(site["url"] + PAGE)
        buttons = choice_buttons(page)
        expect(buttons).to_have_count(4, timeout=WAIT_MS)
        page.wait_for_timeout(300)  # layout settles after the last message
        page.screenshot(path=tmp_path / f"approval-{width}.png")
        # Opened at the newest message: the choices are on screen, all of them, whole.
        for button in buttons.all():
            part = button.bounding_box()
            assert part["x"] >= 0 and part["x"] + part["width"] <= width, part
            assert part["y"] >= 0 and part["y"] + part["height"] <= height, part
            assert part["height"] >= 40  # a comfortable touch target
        overflow = page.evaluate("document.scrollingElement.scrollWidth - innerWidth")
        # The command wraps: all of it readable without scrolling sideways.
        command = page.locator(".msg.approval pre").evaluate("e => e.scrollWidth - e.clientWidth")
        restart = page.get_by_role("button", name="New conversation").bounding_box()
        context.close()
        assert overflow <= 0 and command <= 0
        assert restart["x"] + restart["width"] <= width and restart["height"] >= 36


RECORDED = json.loads((Path(__file__).resolve().parent.parent / "fixtures"
                       / "hermes_approval_exchanges.json").read_text())
OUTPUTS = {name: RECORDED[name]["run"]["output"] for name in ("approved", "denied", "timed_out")}
ORACLE_KEY = "oracle-test-key-0123456789abcdef"  # the oracle's default (HERMES_ORACLE_KEY)


@contextlib.contextmanager
def hermes_behind(kind, url):
    """(Hermes URL, key, driver or None): the emulator mounted at `url`, played as the real
    server behaves, or (opt-in, HERMES_ORACLE_URL) a real Hermes 0.19.0 with its terminal
    toolset."""
    if kind == "real":
        real = os.environ.get("HERMES_ORACLE_URL")
        if not real:
            pytest.skip("HERMES_ORACLE_URL is not set (a real Hermes server with its terminal "
                        "toolset, to run this against)")
        yield real.rstrip("/"), os.environ.get("HERMES_ORACLE_KEY", ORACLE_KEY), None
        return
    with HermesDriver(url + "/emulators/hermes", OUTPUTS) as driver:
        yield url + "/emulators/hermes", "", driver


@pytest.mark.parametrize("kind", ["emulator", "real"])
@pytest.mark.parametrize("label, choice, outcome", [("Allow once", "once", "approved"),
                                                    ("Deny", "deny", "denied")])
def test_hermes_asks_the_person_decides_with_a_click_and_hermes_answers(
        browser, tmp_path, kind, label, choice, outcome):
    # The whole path: the watching relay sees the run wait for approval and asks in the
    # thread; the click is an ordinary post.php message, which the relay sends to Hermes'
    # approval endpoint; the run's answer arrives as usual.
    env = {"NEWOS4_DATA_DIR": str(tmp_path / "data"), "EMULATORS_DB": str(tmp_path / "e.db")}
    target = tmp_path / "target"
    target.mkdir()
    with gunicorn(env=env, workers=2, threads=4) as url, \
            hermes_behind(kind, url) as (hermes, key, driver):
        watcher = Watcher({**os.environ, **env, "HERMES_API_URL": hermes, "HERMES_API_KEY": key},
                          tmp_path)
        try:
            with open_page(browser, url) as page:
                token = token_of(page)
                box = page.get_by_role("textbox", name="Message")
                box.fill(f"RUN: chmod -R 777 {target}")
                box.press("Enter")
                buttons = choice_buttons(page)
                expect(buttons).to_have_text([LABELS[c] for c in EXPLAINED], timeout=WAIT_MS)
                request = page.locator(".msg.approval")
                expect(request.locator("pre code")).to_have_text(f"chmod -R 777 {target}\n")
                expect(request).to_contain_text("Why: world/other-writable permissions")

                buttons.filter(has_text=label).click()
                expect(buttons).to_have_count(0)
                assert polled({"url": url}, token)[-1] == ("operator", choice)
                answer = page.locator("[role=log] .msg").nth(3)
                expect(answer).to_have_attribute("data-author", "hermes", timeout=WAIT_MS)
                assert answer.locator(".text").text_content() == OUTPUTS[outcome]
                if driver:
                    assert list(driver.settled.values()) == [outcome]
                expect(page.get_by_role("status")).to_have_text("")
                if driver is None:  # a real chmod ran, or did not: the decision reached Hermes
                    assert (target.stat().st_mode & 0o777 == 0o777) == (outcome == "approved")
        finally:
            watcher.kill()
        assert "PROBLEM" not in watcher.stdout() + watcher.stderr(), watcher.stdout()
