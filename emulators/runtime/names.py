"""The one pattern of namespace and branch names, and the messages that quote it."""
import re

SHOWN = "^[A-Za-z0-9_.-]{1,64}$"  # as the reference's messages quote it
# \Z, not $: `$` also matches before a trailing newline, which would let "w1\n" through.
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")

NAMESPACE_ENVIRON = "HTTP_X_MOCKINGBIRD_NAMESPACE"  # the header, as WSGI names it
NAMESPACE_HEADER = f"x-mockingbird-namespace must match /{SHOWN}/"
BRANCH_HEADER = f"x-mockingbird-branch must match /{SHOWN}/"
NAMESPACE_PARAM = f"invalid namespace: it must match /{SHOWN}/"


def valid(name):
    """Whether `name` is a usable namespace or branch name (a str of the pattern)."""
    return isinstance(name, str) and NAME.match(name) is not None
