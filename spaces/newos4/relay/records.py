"""What the host side keeps on disk, as typed records: the relay's per-thread record
(`relay/state.json`), the access state (`relay/access.json`) and the relays' modes
(`relay/modes.json`). schemas.py reads and writes them; nothing here touches a file.

A relay record changes field by field within a pass (under the state lock) and is saved after
each step, so it is a mutable record with slots: a field nobody declared cannot be written. The
access state's leaves are values, replaced whole, and so frozen.
"""
import dataclasses

# What a person or the host may answer an approval request with, in Hermes' order.
CHOICE_WORDS = {
    "once": "allow it this time",
    "session": "allow commands like it for the rest of this conversation",
    "always": "always allow commands like it",
    "deny": "refuse it",
}
# A pairing code: 8 characters of an alphabet with no 0/O, no 1/I.
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
RELAY_KINDS = ("cron", "watch")


@dataclasses.dataclass(frozen=True)
class HostDecision:
    """A decision the host recorded (`scripts/chat.py approve`) for the request `request`."""
    choice: str
    request: str
    ms: int


@dataclasses.dataclass(slots=True)
class RelayRecord:
    """The relay's record of one thread's question, from its first submission until it is
    answered, superseded or given up on."""
    question: str  # the message id the answer follows (the notice, for a released question)
    generation: int = 0  # of the Idempotency-Key; a failed run or a conflict moves it on
    attempts: int = 0  # failed runs so far
    next_ms: int = 0  # no submission before this (backoff)
    run_id: str | None = None
    submitted_ms: int | None = None  # when the run was confirmed (or a decision restarted it)
    key: str | None = None  # the Idempotency-Key last sent
    # A submission sent and not confirmed yet: its key, and when it was sent (for a question
    # a lost state may have submitted, when the question was written: the earliest it can have
    # been). lost_ms: when the relay first knew its answer lost (or its state lost).
    submitting: str | None = None
    submitting_ms: int | None = None
    lost_ms: int | None = None
    events: str | None = None  # who read the run's event stream: "watch" or "cron"
    # The approval request the person was asked (a message id), what it offered them
    # (choices), what Hermes offered (offered), how many requests this run made (approvals),
    # the command and Hermes' reason.
    asked: str | None = None
    choices: list | None = None
    offered: list | None = None
    approvals: int = 0
    command: str | None = None
    reason: str | None = None
    not_decisions: list | None = None  # agent messages already said not to decide
    deciding: str | None = None  # a decision being sent (its answer may be lost)
    host: HostDecision | None = None
    by_host: bool = False  # the host decided: the thread ends with the line that says so


@dataclasses.dataclass(frozen=True)
class PendingCode:
    """A pairing code given to a thread: a salted SHA-256 of it, and the code itself only
    until the thread shows it (`told`)."""
    salt: str
    hash: str
    created_ms: int
    told: bool
    code: str | None = None


@dataclasses.dataclass(frozen=True)
class LetIn:
    """A thread let in: since when, how (`code` or `allow`), and whether its waiting question
    is still to be released to Hermes."""
    since_ms: int
    by: str
    release: bool


@dataclasses.dataclass(slots=True)
class AccessState:
    """Who is let in (allowed), who holds a code (pending), who was told they are not let in
    (refused: when), and the wrong codes in a row and the lockout they caused."""
    pending: dict = dataclasses.field(default_factory=dict)
    allowed: dict = dataclasses.field(default_factory=dict)
    refused: dict = dataclasses.field(default_factory=dict)
    failures: int = 0
    locked_until_ms: int = 0


@dataclasses.dataclass(frozen=True)
class ModeRecord:
    """The NEWOS4_RELAY_ACCESS a kind of relay (cron or the watcher) relays with, and when it
    last said so."""
    mode: str
    ms: int
