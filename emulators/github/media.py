"""GitHub's custom media types: which pull request body fields an answer carries.

`Accept: application/vnd.github[.v3].{raw,text,html,full}+json` selects `body` (raw, the default),
`body_text`, `body_html`, or all three; `X-GitHub-Media-Type` names what was served
(`github.v3; param=full; format=json`). The text and HTML renderings are deliberately simple,
not GitHub's Markdown: paragraphs are split on blank lines; HTML escapes the text, wraps each
paragraph in `<p dir="auto">` and turns line breaks into `<br>`; text keeps the paragraphs'
lines as written, one per line.
"""
import html
import re

from . import errors

_VND = re.compile(r"application/vnd\.github(?:\.v3)?(?:\.([a-z-]+))?(?:\+json)?\Z")
BODY_FIELDS = {"raw": ("body",), "text": ("body_text",), "html": ("body_html",),
               "full": ("body", "body_text", "body_html")}
# GitHub's other pull request media types return Git data the emulator does not keep.
_UNMODELLED = ("diff", "patch", "sha")


def requested(accept):
    """Return the body param an `Accept` header names (None: the default, the raw body)."""
    for item in (accept or "").split(","):
        match = _VND.match(item.split(";", 1)[0].strip().lower())
        if match and match.group(1):
            param = match.group(1)
            if param in _UNMODELLED:
                raise errors.Unsupported(f"Mockingbird does not model the {param} media type")
            if param in BODY_FIELDS:
                return param
    return None


def served(param):
    """Return the `X-GitHub-Media-Type` value for an answer in `param` (echoed when named)."""
    return f"github.v3; param={param}; format=json" if param else "github.v3; format=json"


def _paragraphs(body):
    text = body.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    return [block.split("\n") for block in re.split(r"\n[ \t]*\n+", text) if block.strip()]


def as_html(body):
    """Render a Markdown body the simple way documented above (None stays None)."""
    if body is None:
        return None
    return "\n".join('<p dir="auto">' + "<br>\n".join(html.escape(line) for line in lines)
                     + "</p>" for lines in _paragraphs(body))


def as_text(body):
    """Return a body's plain text: its paragraphs' lines, one per line (None stays None)."""
    if body is None:
        return None
    return "\n".join(line for lines in _paragraphs(body) for line in lines)


def with_bodies(pull, param):
    """Return a copy of the pull request with exactly the body fields `param` selects."""
    body = pull.pop("body")
    renderings = {"body": body, "body_text": as_text(body), "body_html": as_html(body)}
    fields = BODY_FIELDS[param or "raw"]
    # keep GitHub's place for the fields: where `body` was, after `title`
    ordered = {}
    for key, value in pull.items():
        ordered[key] = value
        if key == "title":
            ordered.update((name, renderings[name]) for name in fields)
    return ordered
