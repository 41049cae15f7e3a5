"""Expectations with matchers for answers compared with the real server, and the one comparison
the real-server tests share: key order counts, ids and times are matched by kind or pattern."""
import re


class Like:
    """A string matching a regular expression (ids, model text)."""

    def __init__(self, pattern):
        self.pattern = re.compile(pattern + r"\Z", re.S)

    def __repr__(self):
        return f"Like({self.pattern.pattern!r})"


class AnyInt:
    def __repr__(self):
        return "AnyInt"


class AnyFloat:
    def __repr__(self):
        return "AnyFloat"


class AnyOf:
    """One of several expectations (a value 0.19.0 computes from its LLM's config)."""

    def __init__(self, *options):
        self.options = options

    def __repr__(self):
        return f"AnyOf{self.options!r}"


INT = AnyInt()
FLOAT = AnyFloat()
TEXT = Like(r".+")
ABSENT = object()  # a header that must not be sent


def mismatches(expected, actual, where="body"):
    """Every difference between an expectation (with matchers) and a value, as strings."""
    if isinstance(expected, Like):
        ok = isinstance(actual, str) and expected.pattern.match(actual)
        return [] if ok else [f"{where}: {actual!r} does not match {expected!r}"]
    if expected is INT:
        ok = isinstance(actual, int) and not isinstance(actual, bool)
        return [] if ok else [f"{where}: {actual!r} is not an integer"]
    if expected is FLOAT:
        return [] if isinstance(actual, float) else [f"{where}: {actual!r} is not a float"]
    if isinstance(expected, AnyOf):
        if any(not mismatches(option, actual, where) for option in expected.options):
            return []
        return [f"{where}: {actual!r} matches none of {expected!r}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or list(actual) != list(expected):
            return [f"{where}: keys {list(actual) if isinstance(actual, dict) else actual!r}"
                    f" != {list(expected)}"]
        return [m for key in expected for m in mismatches(expected[key], actual[key],
                                                          f"{where}.{key}")]
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return [f"{where}: {actual!r} != {expected!r}"]
        return [m for i, item in enumerate(expected)
                for m in mismatches(item, actual[i], f"{where}[{i}]")]
    return [] if expected == actual else [f"{where}: {actual!r} != {expected!r}"]
