"""The typed values the http layer hands the rules, and what a listing hands back.

Plain Python: the schemas (schemas/) make them from a request, the rules (models/) read them; a
GraphQL resolver or a test makes them by hand.
"""
from dataclasses import dataclass
from typing import NamedTuple

#: the value of an update's field the request did not name (the rules keep the stored one)
UNCHANGED = type("Unchanged", (), {"__repr__": lambda self: "UNCHANGED",
                                   "__bool__": lambda self: False})()


@dataclass(frozen=True)
class Page:
    """Which page of a listing a request asks for: its number (from 1) and its size."""

    number: int = 1
    size: int = 30

    @property
    def offset(self):
        return (self.number - 1) * self.size

    def of(self, items):
        """The items of this page among all of `items`."""
        return items[self.offset:self.offset + self.size]

    def last(self, total):
        """The number of the last page of `total` items (0 when there are none)."""
        return -(-total // self.size)


class Listing(NamedTuple):
    """A page of a listing: its items and how many there are in all (for `Link`)."""

    items: list
    total: int
