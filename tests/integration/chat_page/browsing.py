"""What the chat page tests share: Debian's chromium under Playwright, the site (real gunicorn
serving the chat and the mounted Hermes emulator, with the watching relay), a page per test,
and helpers that read the page and write as the host or a browser would.

The browser is Debian's `chromium`, driven by Playwright with `executable_path` (no browser
download is possible here). Outside CI a missing browser skips with the reason; in CI
(`CI=true`) it fails, so the browser test cannot silently stop running.
"""
import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
import requests

try:
    from playwright.sync_api import expect
except ImportError:  # the `browser` fixture says why and skips (or fails in CI)
    expect = None

from spaces.newos4.app import POLL_PATH, POST_PATH
from spaces.newos4.service import ChatService
from spaces.newos4.settings import Settings
from testkit.hermes.driver import HermesDriver
from testkit.hermes.oracle import real_hermes
from testkit.servers import Watcher, gunicorn

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


@pytest.fixture(scope="package")
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


@pytest.fixture(scope="package")
def site(tmp_path_factory):
    # `always` allowed: the relay then asks with every choice the page has a button for.
    with serve_site(tmp_path_factory.mktemp("chat-page"), NEWOS4_RATE_THREAD=str(RATE_THREAD),
                    NEWOS4_RELAY_ALLOW_ALWAYS="1") as served:
        yield served


@contextlib.contextmanager
def serve_site(root, *, relay=True, **env):
    """The chat and the Hermes emulator under real gunicorn, data in `root`, with the watching
    relay (its access as the tests' environment says) unless `relay` is False."""
    env = {"NEWOS4_DATA_DIR": str(root / "data"), "EMULATORS_DB": str(root / "emu.sqlite3"),
           **env}
    with gunicorn(env=env, workers=2, threads=4) as url:
        hermes = url + "/emulators/hermes"
        watcher = Watcher({**os.environ, **env, "HERMES_API_URL": hermes}, root) \
            if relay else None
        try:
            yield {"url": url, "data": root / "data", "hermes": hermes}
        finally:
            if watcher:
                watcher.kill()


# The sizes the page is tried at: a desktop, and a phone (touch: the button sends).
SIZES = {"desktop": {"viewport": {"width": 1280, "height": 800}},
         "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True,
                   "has_touch": True}}


@contextlib.contextmanager
def open_page(browser, url, size=None, **options):
    """The chat page in a fresh browser profile (so a new token), at `size` (a key of SIZES,
    else 1024x768), with Playwright's other context `options`; fails on any script error and
    on anything the Content-Security-Policy refused (the page must need nothing it forbids)."""
    context = browser.new_context(**(SIZES[size] if size else
                                     {"viewport": {"width": 1024, "height": 768}}), **options)
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


def hermes_asks(site, run_id, command):
    """The emulated Hermes stops `run_id` before `command`, as its guard does."""
    asked = requests.post(f"{site['hermes']}/__admin/hermes/runs/{run_id}/observe", json={
        "status": "waiting_for_approval",
        "events": [{"event": "tool.started", "tool": "terminal", "preview": command}],
        "approval": {"command": command, "description": "world/other-writable permissions"}},
        timeout=10)
    assert asked.status_code < 300, asked.text


def run_status(site, run_id):
    return requests.get(f"{site['hermes']}/v1/runs/{run_id}", timeout=10).json()["status"]


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


# Records, beside each poll's start, every text the status line shows, with how many polls had
# started when it changed (so a test can tell which poll showed it).
RECORD_STATUS = RECORD_POLLS + """
window.__statuses = [];
document.addEventListener("DOMContentLoaded", () => {
  const status = document.getElementById("status");
  new MutationObserver(() => window.__statuses.push([status.textContent, window.__polls.length]))
    .observe(status, {childList: true, characterData: true, subtree: true});
});
"""


def gaps_ms(polls):
    return [b - a for a, b in zip(polls, polls[1:])]


def no_sideways_scroll(page):
    """The page, and every message in it, fits its width: nothing to scroll sideways."""
    wide = page.evaluate("""() => [document.scrollingElement, ...document.querySelectorAll(
        '.msg, .msg pre, .msg .text')].filter(e => e.scrollWidth > e.clientWidth).map(
        e => e.className || e.tagName)""")
    assert wide == []
    assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth")


def shows_something(locator):
    expect(locator).to_have_text(re.compile(r"\S"), timeout=WAIT_MS)


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


RECORDED = json.loads((Path(__file__).resolve().parents[2] / "fixtures"
                       / "hermes_approval_exchanges.json").read_text())
OUTPUTS = {name: RECORDED[name]["run"]["output"] for name in ("approved", "denied", "timed_out")}
@contextlib.contextmanager
def hermes_behind(kind, url):
    """(Hermes URL, key, driver or None): the emulator mounted at `url`, played as the real
    server behaves, or (opt-in, HERMES_ORACLE_URL) a real Hermes 0.19.0 with its terminal
    toolset."""
    if kind == "real":
        yield *real_hermes(), None
        return
    with HermesDriver(url + "/emulators/hermes", OUTPUTS) as driver:
        yield url + "/emulators/hermes", "", driver


MARKDOWN = """6 x 7 = **42**.

Steps:
1. open a *terminal*
2. run `ls -l`

- see [the docs](https://example.com/docs?a=1&b=2)
- ~~old~~ new

```python
print("<b>not bold</b>")
```"""
