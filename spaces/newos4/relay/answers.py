"""What a thread becomes for Hermes (a run request) and what a run's output becomes in the
thread: valid Unicode, in parts that fit a message."""
from .access import is_let_in, is_notice


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


def split_text(text, limit):
    """Cut `text` into parts of at most `limit` code points whose concatenation is `text`.

    Cuts after a paragraph break, else a line break, else a space, else hard at the limit.
    """
    parts = []
    while len(text) > limit:
        window = text[:limit]
        cut = 0
        for separator in ("\n\n", "\n", " "):
            position = window.rfind(separator)
            if position > 0:
                cut = position + len(separator)
                break
        cut = cut or limit
        parts.append(text[:cut])
        text = text[cut:]
    if text:
        parts.append(text)
    return parts


def repair_unicode(text):
    """`text` with each lone surrogate (which a run's JSON output can carry, but no UTF-8 file
    can hold) replaced by U+FFFD, and how many were replaced."""
    try:
        text.encode("utf-8")
        return text, 0
    except UnicodeEncodeError:
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed, fixed.count("\ufffd") - text.count("\ufffd")
