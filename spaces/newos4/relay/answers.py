"""What a run's output becomes in the thread: valid Unicode, in parts that fit a message."""


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
