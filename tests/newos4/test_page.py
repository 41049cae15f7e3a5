"""The chat page's files over HTTP: what is served, how it is cached, and what never is.
(What the page does in a browser: tests/integration/chat_page/.)"""
import configparser
import json
import hashlib
import re
from pathlib import Path

import pytest

from spaces.newos4.app import PAGE_FILES, PAGE_PATH, STATIC

ASSETS = [("/spaces/newos4/chat.js", "text/javascript"),
          ("/spaces/newos4/messages.js", "text/javascript"), ("/spaces/newos4/chat.css", "text/css"),
          ("/spaces/newos4/vendor/marked.umd.js", "text/javascript"),
          ("/spaces/newos4/vendor/purify.min.js", "text/javascript")]
REPO = Path(__file__).resolve().parents[2]


def test_the_page_is_html_that_loads_only_its_own_files(testapp):
    page = testapp.get(PAGE_PATH)
    assert page.content_type == "text/html" and page.charset == "utf-8"
    html = page.text
    assert '<script src="chat.js" defer></script>' in html
    assert '<link rel="stylesheet" href="chat.css">' in html
    # Relative URLs, so the page works wherever /spaces/newos4/ is mounted; no inline code,
    # which the Content-Security-Policy would refuse anyway.
    assert re.findall(r'(?:src|href)="([^"]+)"', html) == [
        "data:,", "chat.css", "vendor/marked.umd.js", "vendor/purify.min.js", "messages.js",
        "chat.js"]
    assert "<script>" not in html and " style=" not in html
    csp = page.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["X-Content-Type-Options"] == "nosniff"


def test_the_page_names_the_controls_the_contract_promises(testapp):
    html = testapp.get(PAGE_PATH).text
    assert '<label class="visually-hidden" for="message">Message</label>' in html
    assert '<textarea id="message"' in html
    assert '<button type="submit" id="send">Send</button>' in html
    for role in ("log", "status", "alert"):
        assert f'role="{role}"' in html
    assert "maxlength" not in html  # over-long text is refused by the server, never cut


@pytest.mark.parametrize("path, content_type", ASSETS)
def test_assets_are_served_with_their_types(testapp, path, content_type):
    answer = testapp.get(path)
    assert answer.content_type == content_type and answer.charset == "utf-8"
    name = PAGE_FILES[path][0]
    assert answer.body == (STATIC / name).read_bytes()


@pytest.mark.parametrize("path", [PAGE_PATH] + [path for path, _ in ASSETS])
def test_files_revalidate_by_etag_and_answer_head(testapp, path):
    first = testapp.get(path)
    assert first.headers["Cache-Control"] == "no-cache" and first.headers["ETag"]
    again = testapp.get(path, headers={"If-None-Match": first.headers["ETag"]}, status=304)
    assert again.body == b"" and again.headers["ETag"] == first.headers["ETag"]
    changed = testapp.get(path, headers={"If-None-Match": '"something-else"'}, status=200)
    assert changed.body == first.body
    head = testapp.head(path)
    assert head.body == b"" and head.headers["Content-Length"] == str(len(first.body))


def test_the_folder_without_its_slash_redirects_to_the_page(testapp):
    answer = testapp.get("/spaces/newos4", status=301)
    assert answer.headers["Location"].endswith(PAGE_PATH)


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_the_page_is_read_only(testapp, method):
    answer = getattr(testapp, method)(PAGE_PATH, status=405)
    assert answer.json == {"success": False, "error": "Method not allowed"}
    assert answer.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", [
    "/spaces/newos4/index.html", "/spaces/newos4/static/chat.js", "/spaces/newos4/chat.js/",
    "/spaces/newos4//", "/spaces/newos4/static/", "/spaces/newos4/../newos4/app.py",
    "/spaces/newos4/data/", "/spaces/newos4/data/chat/"])
def test_nothing_but_the_listed_files_is_served(client, testapp, path):
    client.say("secret")
    answer = testapp.get(path, status=404)
    assert answer.json == {"success": False, "error": "not found"}
    assert b"secret" not in answer.body


def test_every_page_file_exists_and_every_served_kind_of_file_is_served(testapp):
    # A file listed but missing would break the page in every browser, and start-up too; a
    # script or style sheet on disk but not listed is one the page cannot load.
    served = sorted(name for name, _ in PAGE_FILES.values())
    on_disk = sorted(str(p.relative_to(STATIC)) for p in STATIC.rglob("*")
                     if p.suffix in (".html", ".js", ".css"))
    assert served == on_disk


def test_every_page_file_ships_in_the_package():
    # setuptools globs package_data patterns, and `static/*` does not reach into a subfolder.
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    patterns = config["options.package_data"]["spaces.newos4"].replace(",", " ").split()
    package = STATIC.parent
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    needed = {STATIC / name for name, _ in PAGE_FILES.values()}
    needed |= set((STATIC / "vendor").glob("LICENSE*"))
    assert needed - shipped == set()


def test_the_vendored_libraries_are_the_unchanged_releases_the_notes_name():
    notes = (STATIC / "vendor" / "README.md").read_text()
    for name, header in [("marked.umd.js", r"marked v(\S+) - a markdown parser"),
                         ("purify.min.js", r"@license DOMPurify (\S+) \|")]:
        body = (STATIC / "vendor" / name).read_bytes()
        version = re.search(header, body[:400].decode()).group(1)
        row = re.search(rf"^\| `{re.escape(name)}` \|.*$", notes, re.MULTILINE).group(0)
        assert f"| {version} |" in row, (name, version, row)
        assert f"`{hashlib.sha256(body).hexdigest()}`" in row, (name, "edited since the release?")


def js_strings(source, name):
    """{key: text} of the object literal `const NAME = {key: "…" + "…", …};` in `source`."""
    block = re.search(rf"const {name} = \{{(.*?)\}};", source, re.DOTALL).group(1)
    return {key: "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', value))
            for key, value in re.findall(r'(\w+): ((?:"(?:[^"\\]|\\.)*"\s*\+?\s*)+),?', block)}


def js_const(source, name):
    """The value of `const NAME = "…";` or `const NAME = /…/flags;` in `source`."""
    return re.search(rf'const {name} = ("(?:[^"\\]|\\.)*"|/.+?/\w*);', source).group(1)


def test_the_chat_manual_lists_every_status_the_page_shows():
    page = (STATIC / "messages.js").read_text()
    shown = js_strings(page, "STATUS")
    manual = (REPO / "spaces" / "newos4" / "README.md").read_text()
    table = manual[manual.index("**What the page says while you wait.**"):]
    table = table[:table.index("\n\n", table.index("| status | when |"))]
    listed = re.findall(r'^\| "([^"]+)" \|', table, re.MULTILINE)
    assert len(shown) == 5 and sorted(listed) == sorted(shown.values())


def test_the_page_reads_the_relays_lines_as_the_relay_writes_them():
    from spaces.newos4.relay import access, approvals
    page = (STATIC / "messages.js").read_text()
    assert json.loads(js_const(page, "NOTICE_MARKER")) == access.NOTICE_MARKER
    assert json.loads(js_const(page, "LET_IN_LINE")) == access.LET_IN_LINE
    assert json.loads(js_const(page, "APPROVAL_MARKER")) == approvals.REQUEST_MARKER
    assert js_const(page, "CHOICE_LINE") == f"/{approvals.CHOICE_LINE.pattern}/gm"
    decided = re.compile(js_const(page, "HOST_DECIDED")[1:-1])
    for word in approvals.CHOICE_WORDS:
        assert decided.match(approvals.host_line(word)).group(1) == word
    assert js_strings(page, "ALIASES") == approvals.ALIASES
    request = approvals.request_text({"command": "ls", "description": "why",
                                      "choices": ["once", "deny"]})
    invitation = json.loads(js_const(page, "INVITATION"))
    assert request.count(invitation) == 1 and "- `deny`: " in request.split(invitation)[1]
    deadline = re.compile(js_const(page, "CODE_DEADLINE")[1:-1])
    assert deadline.search(access.pairing_text("K7Q2MZ4P", 1_893_460_320_000)).groups() == (
        "01", "12")
