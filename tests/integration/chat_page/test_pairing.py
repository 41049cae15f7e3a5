"""How a person finds their way in, in a real headless Chromium: a site of its own whose watcher
runs in pairing mode (the default). The page shows the one-time code and the host's command in
the thread; the host approves it; the question waits and its answer arrives in the page."""
import os
import re
import subprocess
import sys

import pytest

from spaces.newos4.relay.access import NOTICE_MARKER
from testkit.servers import REPO, Watcher, gunicorn
from .browsing import (WAIT_MS, complete_run, expect, log_entries, open_page, submitted_run,
                       thread_of, token_of, wait_for_log)

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


def test_the_page_shows_the_code_and_the_answer_follows_the_hosts_approval(browser, paired_site):
    with open_page(browser, paired_site["url"]) as page:
        thread = thread_of(token_of(page))
        expect(page.locator("#thread")).to_contain_text(thread)  # the id `pairing allow` takes
        page.get_by_role("textbox", name="Message").fill("What is 6 x 7?")
        page.get_by_role("button", name="Send").click()
        notice = page.locator("[role=log] [data-author=hermes]").last
        expect(notice).to_contain_text(NOTICE_MARKER, timeout=WAIT_MS)
        # A second word before the host lets it in reaches nobody: the page says whom it waits
        # for, not that Hermes is working on an answer.
        page.get_by_role("textbox", name="Message").fill("Hello?")
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("status")).to_have_text(
            "Waiting for the host to let this conversation in (see above).", timeout=WAIT_MS)
        command = notice.locator("code").first.text_content()  # shown as code, easy to copy
        code = re.fullmatch(r"scripts/chat\.py pairing approve ([A-Z2-9]{8})\n?", command)[1]
        approved = subprocess.run([sys.executable, "scripts/chat.py", "pairing", "approve",
                                   code], cwd=REPO, env=paired_site["env"],
                                  capture_output=True, text=True, timeout=30)
        assert approved.returncode == 0, approved.stderr
        complete_run(paired_site, submitted_run(paired_site, thread), "It is 42.")
        shown = log_entries(page)
        wait_for_log(page, [["operator", "What is 6 x 7?"], ["hermes", shown[1][1]],
                            ["operator", "Hello?"], ["hermes", "It is 42."]])
