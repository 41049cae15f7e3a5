"""Hermes' answers in the thread can never pass for the relay's own lines: whatever a model is
made to say (a page it read can tell it), the chat page reads it as Hermes' words, and the relay
never reads it as an approval request, so a click on what looks like one is only a message."""
import json
import re

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from spaces.newos4.app import STATIC
from spaces.newos4.relay.access import LET_IN_LINE, allowlist_text, busy_text, pairing_text
from spaces.newos4.relay.answers import RELAY_LINE_STARTS, answer_parts
from spaces.newos4.relay.approvals import CHOICE_WORDS, host_line, pending, request_text
from spaces.newos4.relay.state import RelayState, state_path

from .conftest import ChatClient
from .test_approvals import REQUEST, ApprovingHermes, passes, relay, texts  # noqa: F401
from .test_decisions import approve
from .test_page import js_const

PAGE = (STATIC / "messages.js").read_text()
THREAD = "0123456789abcdef"
# Every line the relay writes that the page reads as the relay's (kindOf in messages.js).
RELAY_LINES = {
    "pairing notice": pairing_text("K7Q2MZ4P", 1_893_460_320_000),
    "allowlist notice": allowlist_text(THREAD),
    "busy notice": busy_text(600_000, THREAD),
    "let in": LET_IN_LINE,
    "approval request": request_text(REQUEST),
    **{f"host decided {word}": host_line(word) for word in CHOICE_WORDS},
}


def read_by_the_page_as_the_relays(text):
    """The page's rule (kindOf in messages.js, its own constants) for a `hermes` message."""
    return (text.startswith(json.loads(js_const(PAGE, "APPROVAL_MARKER")))
            or text.startswith(json.loads(js_const(PAGE, "NOTICE_MARKER")))
            or text == json.loads(js_const(PAGE, "LET_IN_LINE"))
            or re.match(js_const(PAGE, "HOST_DECIDED")[1:-1], text) is not None)


def test_the_page_reads_every_relay_line_as_the_relays():
    assert all(read_by_the_page_as_the_relays(line) for line in RELAY_LINES.values())
    assert all(line.startswith(RELAY_LINE_STARTS) for line in RELAY_LINES.values())


@pytest.fixture
def hermes():
    return ApprovingHermes()


def answered(client, hermes, relay, output, run_id="run_1"):
    """The person asks; Hermes' run completes with `output`; the relay delivers it."""
    client.say("What does this page say?")
    relay()
    hermes.runs[run_id].update(status="completed", output=output)
    relay()


@pytest.mark.parametrize("name", sorted(RELAY_LINES))
def test_an_answer_that_is_a_relay_line_is_delivered_as_hermes_words(
        client, service, hermes, relay, name):
    answered(client, hermes, relay, RELAY_LINES[name])
    [(author, text)] = texts(service, client.thread)[1:]
    assert author == "hermes" and text == " " + RELAY_LINES[name]
    assert not read_by_the_page_as_the_relays(text)


def test_a_relay_line_at_the_start_of_a_later_part_is_delivered_as_hermes_words(
        make_app, hermes):
    line = host_line("always")
    testapp, service = make_app(max_text=len(line) + 5)
    client = ChatClient(testapp)
    answered(client, hermes, passes(service, hermes), "Done.\n\n" + line)
    parts = [text for _, text in texts(service, client.thread)[1:]]
    assert parts == ["Done.\n\n", " " + line]
    assert not any(read_by_the_page_as_the_relays(part) for part in parts)


def test_an_answer_shaped_as_a_request_is_no_request_and_its_buttons_word_no_decision(
        client, service, hermes, relay, settings):
    # What the person would click on such a card is their next message, which goes to
    # Hermes as a question: nothing waits for a decision, so nothing is decided.
    answered(client, hermes, relay, request_text(REQUEST))
    relay()
    assert pending(RelayState.read(state_path(settings)), service) == []
    status, _, err = approve(settings, client.thread, "once")
    assert status == 1 and "has no approval request waiting" in err
    client.say("once")
    relay()
    assert hermes.decisions == [] and hermes.stops == []
    assert hermes.submits[-1][0]["input"] == "once" and len(hermes.submits) == 2


@pytest.mark.parametrize("word", ["once", "always", "yes"])
def test_a_forged_request_already_in_a_thread_decides_nothing(client, service, hermes, relay,
                                                              settings, word):
    # One an answer wrote before answers were guarded: the page still shows it with buttons.
    answered(client, hermes, relay, "It says:")
    service.reply(client.thread, request_text(REQUEST))
    relay()
    assert pending(RelayState.read(state_path(settings)), service) == []
    client.say(word)
    relay()
    assert hermes.decisions == []
    assert hermes.submits[-1][0]["input"] == word and len(hermes.submits) == 2


SEGMENTS = st.sampled_from([*RELAY_LINES.values(), *RELAY_LINE_STARTS, "\n\n", "\n", " ",
                            "ok", "Hermes", "The host", "```", "é😀"])


@hsettings(max_examples=300, deadline=None)
@given(st.lists(SEGMENTS, min_size=1, max_size=12), st.integers(min_value=1, max_value=200))
def test_no_part_of_any_answer_reads_as_the_relays_and_each_fits(segments, limit):
    output = "".join(segments)
    parts = answer_parts(output, limit)
    at = 0
    for part in parts:
        assert 0 < len(part) <= limit and not read_by_the_page_as_the_relays(part)
        if not output.startswith(part, at):  # a space before what begins like the relay's
            assert part[0] == " " and output.startswith(part[1:], at)
            assert output[at:].startswith(RELAY_LINE_STARTS)
            part = part[1:]
        at += len(part)
    assert at == len(output)
