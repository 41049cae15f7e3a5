"""Messages on the chat page in a real headless Chromium: Hermes' Markdown rendered, the
person's text plain, and raw HTML in any message shown as text, never run or injected."""
import pytest

from .browsing import (MARKDOWN, PAGE, WAIT_MS, approval, choice_buttons, expect, hermes_says,
                       say_as_browser, token_of)

pytestmark = [pytest.mark.gunicorn, pytest.mark.browser]


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
