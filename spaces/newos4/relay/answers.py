"""What a thread becomes for Hermes (a run request) and what a run's output becomes in the
thread: valid Unicode, in parts that fit a message, none of which can pass for the relay's own."""
from .access import LET_IN_LINE, NOTICE_MARKER, is_let_in, is_notice
from .approvals import HOST_LINE_START, REQUEST_MARKER

# How the relay's own `hermes` lines begin: the chat page (and the relay) read a `hermes`
# message that begins so as the relay's (a pairing notice, the host letting the conversation
# in, an approval request, the host's decision). Hermes' output may begin so too, since a page
# it read can make it say anything: a part of it that would is delivered after one space,
# which Markdown does not show, and then it is only Hermes' words.
RELAY_LINE_STARTS = (NOTICE_MARKER, LET_IN_LINE, REQUEST_MARKER, HOST_LINE_START)


def run_request(thread, messages, question_id, history):
    """(the runs API request, the question's epoch) for message `question_id` of `messages`
    (the thread, oldest first): the question as input, up to `history` earlier messages as
    conversation history, one Hermes session per thread. None when the question is gone."""
    ids = [m["id"] for m in messages]
    if question_id not in ids:
        return None
    at = ids.index(question_id)
    earlier = messages[max(0, at - history):at] if history else []
    # How it got in is not Hermes' to see: the relay's own lines, never the person's words.
    earlier = [m for m in earlier if not (is_notice(m) or is_let_in(m))]
    return {
        "input": messages[at]["text"],
        "conversation_history": [
            {"role": "assistant" if m["author"] == "hermes" else "user",
             "content": m["text"]} for m in earlier],
        "session_id": f"newos4-{thread}",
    }, messages[at]["epoch"]


def answer_parts(output, limit):
    """Hermes' `output` as the messages that deliver it, each of at most `limit` code points:
    cut after a paragraph break, else a line break, else a space, else hard at the limit.
    Read in order they are `output`, but that a part which would begin like one of the relay's
    own lines (RELAY_LINE_STARTS) begins with a space."""
    parts = []
    while output:
        guard = ""
        cut = _cut(output, limit)
        if output[:cut].startswith(RELAY_LINE_STARTS):
            guard = " "  # which takes one code point of the part's room
            cut = _cut(output, limit - len(guard))
        parts.append(guard + output[:cut])
        output = output[cut:]
    return parts


def _cut(text, limit):
    """How long the first part of `text` is, at most `limit` code points (see answer_parts)."""
    if len(text) <= limit:
        return len(text)
    window = text[:limit]
    for separator in ("\n\n", "\n", " "):
        position = window.rfind(separator)
        if position > 0:
            return position + len(separator)
    return limit


def repair_unicode(text):
    """`text` with each lone surrogate (which a run's JSON output can carry, but no UTF-8 file
    can hold) replaced by U+FFFD, and how many were replaced."""
    try:
        text.encode("utf-8")
        return text, 0
    except UnicodeEncodeError:
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed, fixed.count("\ufffd") - text.count("\ufffd")
