"""Who reaches Hermes through the relay: the access policy (NEWOS4_RELAY_ACCESS) and pairing.

A relay pass asks `admits(thread)` before anything of a thread goes to Hermes, and
`pairing_message(thread)` for the one message a thread not let in is told; the host lets threads
in with `scripts/chat.py pairing ...`. Pairing is as strong as Hermes' own DM pairing: codes of 8
characters from an unambiguous alphabet, drawn with `secrets`, valid for an hour and used once;
at most 3 pending; 5 wrong codes in a row lock approval for an hour; once the thread shows its
code only a salted hash of it is kept, in `relay/access.json` (mode 0600, replaced atomically
under its lock); no code is ever logged.
"""
import contextlib
import dataclasses
import hashlib
import hmac
import os
import re
import secrets
import stat
import time
from pathlib import Path

from ..files import LockTimeout, Locks, discard, fsync_dir, replace, write_tmp
from ..store import is_thread_name
from .records import ALPHABET, CODE_LENGTH, AccessState, LetIn, PendingCode
from .schemas import Unfit, dump_access, load_access

CODE_RE = re.compile(rf"\A[{ALPHABET}]{{{CODE_LENGTH}}}\Z")
CODE_TTL_MS = 3_600_000
MAX_PENDING = 3
MAX_FAILURES = 5
LOCKOUT_MS = 3_600_000
# A thread told it cannot get in (allowlist, or no code free) is told again after this long.
TOLD_AGAIN_MS = CODE_TTL_MS
LOCK_WAIT_S = 10
# Every message a thread not let in gets starts so: how the relay knows the question before it
# still waits (only the host writes `hermes` messages, so a browser cannot forge one).
NOTICE_MARKER = "This conversation cannot reach Hermes yet."
# The one line a thread told so gets when the host lets it in: the page shows from it that an
# answer is on its way. Like the notice it is the relay's, never Hermes' to see (passes.py).
LET_IN_LINE = "The host let this conversation in: your message is on its way to Hermes."
APPROVE_COMMAND = "scripts/chat.py pairing approve"
ALLOW_COMMAND = "scripts/chat.py pairing allow"
BAD_THREAD = "THREAD must be 16 lowercase hex digits (the page shows it: \"Conversation …\")"
# How the host repairs an access state that cannot be read: its content, or the file itself.
START_OVER = "or remove the file to start over (every conversation must then be let in again)"
FIX_FIELD = f"fix that field as the relay's user, {START_OVER}"
FIX_FILE = f"make it a file the relay's user can read and write, {START_OVER}"


class AccessRefused(Exception):
    """A pairing command the rules refuse; the message is the one line to print."""


class AccessUnreadable(AccessRefused):
    """The access state cannot be read: nothing is let in until it is fixed."""


def new_code():
    """A fresh pairing code."""
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def is_notice(message):
    """True for the message a thread not let in was told (see NOTICE_MARKER)."""
    return message["author"] == "hermes" and message["text"].startswith(NOTICE_MARKER)


def is_let_in(message):
    """True for the line the relay wrote when the host let a told thread in (LET_IN_LINE)."""
    return message["author"] == "hermes" and message["text"] == LET_IN_LINE


def waits_behind_notice(messages):
    """True when the thread's newest notice (access.py) ends it, right after a question, or is
    followed by questions only: what it asked waits for the line saying it is let in."""
    told = [i for i, m in enumerate(messages) if is_notice(m)]
    if not told:
        return False
    after = messages[told[-1] + 1:]
    if after:
        return all(m["author"] != "hermes" for m in after)
    return told[-1] > 0 and messages[told[-1] - 1]["author"] != "hermes"


def _digest(code, salt_hex):
    return hashlib.sha256(bytes.fromhex(salt_hex) + code.encode("ascii")).hexdigest()


def _clock_time(ms):
    return time.strftime("%H:%M UTC", time.gmtime(ms // 1000))


def _minutes(ms):
    return max(1, -(-ms // 60_000))


class Access:
    """The access policy over `relay/access.json`: pending codes, threads let in, lockout.

    Readers (`admits`, `listing`) read the file as it is (it is only ever replaced whole);
    every change reads, changes and replaces it under `access.json.lock`.
    """

    def __init__(self, path, *, mode, clock, max_text=None, new_code=new_code):
        self.path = Path(path)
        self.lock_path = f"{self.path}.lock"
        self.mode = mode
        self.clock = clock
        self.max_text = max_text  # a message longer than a thread takes is said shorter
        self._new_code = new_code
        self._locks = Locks(LOCK_WAIT_S)
        self._cached = (None, None)  # (stat of the file read, its state)
        self._notes = []

    @classmethod
    def for_settings(cls, settings, clock):
        """The access of the relay configured by `settings`."""
        return cls(settings.data_dir / "relay" / "access.json", mode=settings.relay_access,
                   clock=clock, max_text=settings.max_text)

    # -- what a relay pass asks -----------------------------------------------------------

    def problem(self):
        """Why the state cannot be read (then nothing is let in), or None."""
        if self.mode == "open":
            return None
        try:
            self._read()
        except AccessUnreadable as exc:
            return str(exc)
        return None

    def admits(self, thread):
        """True when anything of `thread` may go to Hermes."""
        if self.mode == "open":
            return True
        try:
            return thread in self._read().allowed
        except AccessUnreadable:
            return False

    def pairing_message(self, thread):
        """The one message to write into `thread`, which is not let in, or None when it was
        told already. In pairing mode that issues its code; the pass calls `told(thread)` once
        the message is in the thread. Until then the code is kept as it is, so a pass that
        could not write the message writes the same one next time (nothing else changes)."""
        if self.mode == "open" or not self._may_tell(thread):
            return None
        if self.mode == "allowlist":
            return self._fit(allowlist_text(thread), f"{ALLOW_COMMAND} {thread}")
        with self._changing() as state:
            now = self.clock.now_ms()
            pending = state.pending.get(thread)
            if thread in state.allowed or pending and pending.told:
                return None
            if pending is None:
                free_at = _code_free_at(state, thread, now)
                if free_at is not None:
                    return None if thread in state.refused else \
                        self._fit(busy_text(free_at - now, thread), f"{ALLOW_COMMAND} {thread}")
                code, salt = self._new_code(), secrets.token_hex(16)
                pending = state.pending[thread] = PendingCode(
                    salt=salt, hash=_digest(code, salt), created_ms=now, told=False, code=code)
            return self._fit(pairing_text(pending.code, pending.created_ms + CODE_TTL_MS),
                             f"{APPROVE_COMMAND} {pending.code}")

    def told(self, thread):
        """`thread` now holds the message `pairing_message` gave: tell it nothing more."""
        with self._changing() as state:
            pending = state.pending.get(thread)
            if pending is not None:  # from now on only its hash is kept
                state.pending[thread] = dataclasses.replace(pending, told=True, code=None)
            elif thread not in state.allowed:
                state.refused[thread] = self.clock.now_ms()

    def releases(self):
        """Threads let in since the relay last looked: their waiting question goes to Hermes."""
        if self.mode == "open":
            return []
        try:
            allowed = self._read().allowed
        except AccessUnreadable:
            return []
        return sorted(t for t, entry in allowed.items() if entry.release)

    def released(self, thread):
        """The relay has seen that `thread` holds no question waiting behind a notice."""
        with self._changing() as state:
            if thread in state.allowed:
                state.allowed[thread] = dataclasses.replace(state.allowed[thread],
                                                            release=False)

    # -- what the host does ---------------------------------------------------------------

    def approve(self, code):
        """Let in the thread holding `code`; return the thread. AccessRefused otherwise."""
        code = code.strip().upper()
        with self._changing() as state:
            now = self.clock.now_ms()
            if state.locked_until_ms > now:
                raise AccessRefused(
                    f"approval is locked until {_clock_time(state.locked_until_ms)} after "
                    f"{MAX_FAILURES} wrong codes in a row; `{ALLOW_COMMAND} THREAD` lets a "
                    "thread in by name")
            if not CODE_RE.match(code):
                raise AccessRefused(f"not a pairing code: a code is {CODE_LENGTH} characters "
                                    f"of {ALPHABET}")
            found = [t for t, p in sorted(state.pending.items())
                     if hmac.compare_digest(_digest(code, p.salt), p.hash)]
            if not found:
                state.failures += 1  # saved with the refusal (see _changing)
                if state.failures >= MAX_FAILURES:
                    state.failures = 0
                    state.locked_until_ms = now + LOCKOUT_MS
                    then = f"approval is now locked until {_clock_time(now + LOCKOUT_MS)}"
                else:
                    left = MAX_FAILURES - state.failures
                    then = f"{left} more wrong code(s) in a row lock approval for an hour"
                raise AccessRefused(
                    "wrong code: no pending code matches (a code is valid for an hour and "
                    f"works once; `scripts/chat.py pairing list` shows the pending ones); {then}")
            thread = found[0]
            del state.pending[thread]
            state.failures = 0
            self._let_in(state, thread, "code", now)
        return thread

    def allow(self, thread):
        """Let `thread` in by name, whatever is pending; False when it already was."""
        if not is_thread_name(thread):
            raise AccessRefused(BAD_THREAD)
        with self._changing() as state:
            if thread in state.allowed:
                return False
            state.pending.pop(thread, None)
            self._let_in(state, thread, "allow", self.clock.now_ms())
        return True

    def revoke(self, thread):
        """Let `thread` in no more (and cancel its code): (was let in, had a pending code)."""
        if not is_thread_name(thread):
            raise AccessRefused(BAD_THREAD)
        with self._changing() as state:
            was_in = state.allowed.pop(thread, None) is not None
            had_code = state.pending.pop(thread, None) is not None
            if not (was_in or had_code):
                raise AccessRefused(f"thread {thread} is not let in and holds no pending code; "
                                    "nothing to revoke")
        return was_in, had_code

    def listing(self):
        """What `pairing list` shows: pending codes' threads and ages, the threads let in."""
        now = self.clock.now_ms()
        state = self._pruned(self._read(), now)
        return {
            "mode": self.mode,
            "pending": [{"thread": t, "age_s": (now - p.created_ms) // 1000,
                         "expires_in_s": (p.created_ms + CODE_TTL_MS - now) // 1000,
                         "shown": p.told}
                        for t, p in sorted(state.pending.items(),
                                           key=lambda item: item[1].created_ms)],
            "allowed": [{"thread": t, "since_ms": a.since_ms, "by": a.by}
                        for t, a in sorted(state.allowed.items(),
                                           key=lambda item: item[1].since_ms)],
            "wrong_codes": state.failures,
            "locked_until_ms": state.locked_until_ms if state.locked_until_ms > now
            else 0,  # a lockout past is shown as none
        }

    # -- the state file -------------------------------------------------------------------

    def _fit(self, text, command):
        """`text`, or only the marker and `command` when `text` is longer than a thread's
        message may be (NEWOS4_MAX_TEXT)."""
        if self.max_text is None or len(text) <= self.max_text:
            return text
        return f"{NOTICE_MARKER}\n\n{command}".rstrip()

    def _may_tell(self, thread):
        """False when `thread` has nothing new to be told (read without the lock: most passes
        ask about threads told long ago, and a wrong True only costs a look under the lock)."""
        now = self.clock.now_ms()
        try:
            state = self._read()
        except AccessUnreadable:
            return False
        pending = state.pending.get(thread)
        live = pending is not None and pending.created_ms + CODE_TTL_MS > now
        if thread in state.allowed or live and pending.told:
            return False
        told_at = state.refused.get(thread)
        if told_at is not None and told_at + TOLD_AGAIN_MS > now and not live:
            # Told no code was free: a code as soon as one is, else nothing more.
            live_codes = dataclasses.replace(state, pending=_live(state.pending, now))
            return self.mode == "pairing" and _code_free_at(live_codes, thread, now) is None
        return True

    @staticmethod
    def _let_in(state, thread, how, now):
        state.refused.pop(thread, None)
        state.allowed[thread] = LetIn(since_ms=now, by=how, release=True)

    @contextlib.contextmanager
    def _changing(self):
        """`with self._changing() as state:` the state read under the lock, saved when the
        block changed it: when it ends, or refuses (a wrong code's count must stick)."""
        folder = self.path.parent
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            self._hand_over(folder)
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(self._locks(self.lock_path))
            except LockTimeout:
                raise AccessRefused(f"another pairing command or relay pass held "
                                    f"{self.lock_path} for {LOCK_WAIT_S}s; try again")
            self._hand_over(self.lock_path)
            state = self._pruned(self._load(), self.clock.now_ms())
            before = dump_access(state)
            try:
                yield state
            except AccessRefused:
                self._save(state, before)
                raise
            self._save(state, before)

    def take_notes(self):
        """What reading the state put right since last asked (a mode narrowed), as lines."""
        notes, self._notes = self._notes, []
        return notes

    def _read(self):
        """The state as the file holds it now (read again only when the file changed)."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return AccessState()
        except OSError as exc:
            raise self._unreadable(exc.strerror or exc, FIX_FILE)
        key = (status.st_ino, status.st_mtime_ns, status.st_size, status.st_mode)
        if self._cached[0] != key:
            self._cached = (key, self._load())
        return self._cached[1]

    def _load(self):
        """The state in the file (empty when there is none), read through its schema."""
        try:  # never through a link: a narrowed mode must be the state's own
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return AccessState()
        except OSError as exc:
            raise self._unreadable(exc.strerror or exc, FIX_FILE)
        try:
            self._narrow(os.fstat(fd), fd)
            with open(fd, "rb", closefd=False) as file:
                raw = file.read()
        except OSError as exc:
            raise self._unreadable(exc.strerror or exc, FIX_FILE)
        finally:
            os.close(fd)
        try:
            return load_access(raw)
        except Unfit as exc:
            raise self._unreadable(exc, FIX_FIELD)

    def _narrow(self, status, fd):
        """The README promises 0600: a state other users may read (pending codes' hashes) or
        change (who is let in) is narrowed to the owner's bits, never widened, and said."""
        if not stat.S_ISREG(status.st_mode):
            raise self._unreadable("it is a folder, not a file" if stat.S_ISDIR(status.st_mode)
                                   else "it is not a regular file", FIX_FILE)
        mode = stat.S_IMODE(status.st_mode)
        if not mode & ~0o600:
            return
        try:
            os.fchmod(fd, mode & 0o600)
        except OSError as exc:
            raise self._unreadable(f"its mode {mode:04o} lets other users read or change it, "
                                   f"and it cannot be narrowed ({exc.strerror})",
                                   f"`chmod 600 {self.path}` as its owner")
        self._notes.append(f"access state {self.path} had mode {mode:04o}, which lets other "
                           f"users read or change it: narrowed to {mode & 0o600:04o}; check "
                           "who is let in (scripts/chat.py pairing list)")

    def _unreadable(self, why, repair):
        return AccessUnreadable(f"access state {self.path} cannot be read: {why}; no "
                                f"conversation reaches Hermes until it is repaired: {repair}")

    @staticmethod
    def _pruned(state, now):
        """`state` without expired codes and refusals told long enough ago (a new top level
        over the same records: a change reads its own copy from the file)."""
        return dataclasses.replace(
            state, pending=_live(state.pending, now),
            refused={t: ms for t, ms in state.refused.items() if ms + TOLD_AGAIN_MS > now})

    def _save(self, state, before):
        """Replace the file with `state` when it differs from `before` (the file's dump)."""
        data = dump_access(state)
        if data == before:
            return
        tmp = write_tmp(self.path, data, mode=0o600)
        try:
            self._hand_over(tmp)
        except BaseException:
            discard(tmp)
            raise
        replace(tmp, self.path)
        fsync_dir(self.path.parent)

    def _hand_over(self, path):
        """As root, give `path` to the data folder's owner: a pairing command run with sudo
        must leave a state (0600) the relay's user can still read, a lock it can still take."""
        if os.geteuid() == 0:
            owner = os.stat(self.path.parent.parent)
            os.chown(path, owner.st_uid, owner.st_gid)


def _live(pending, now):
    """The pending codes not expired at `now`."""
    return {t: p for t, p in pending.items() if p.created_ms + CODE_TTL_MS > now}


def _code_free_at(state, thread, now):
    """None when `thread` may be given a code now; else when one may be (epoch ms)."""
    if thread in state.pending:
        return None  # its own code, not shown yet: a fresh one replaces it
    if state.locked_until_ms > now:
        return state.locked_until_ms
    if len(state.pending) >= MAX_PENDING:
        return min(p.created_ms for p in state.pending.values()) + CODE_TTL_MS
    return None


def pairing_text(code, expires_ms):
    """The message a thread not let in gets in pairing mode: its code and the host command."""
    return "\n".join([
        NOTICE_MARKER, "",
        "The host's owner lets it in by running this command on the host:", "",
        "```", f"{APPROVE_COMMAND} {code}", "```", "",
        f"Give them the code `{code}`: it is valid for one hour (until {_clock_time(expires_ms)})"
        " and works once. Your message waits here and goes to Hermes as soon as this "
        "conversation is let in: there is no need to send it again."])


def allowlist_text(thread):
    """The message a thread not let in gets in allowlist mode (no code: the host names it)."""
    return "\n".join([
        NOTICE_MARKER, "",
        "Only conversations the host's owner has let in reach Hermes here. To let this one in, "
        "they run this command on the host:", "",
        "```", f"{ALLOW_COMMAND} {thread}", "```", "",
        "Your message waits here and goes to Hermes as soon as this conversation is let in."])


def busy_text(wait_ms, thread):
    """The message a thread gets when no code can be issued now (all pending, or a lockout):
    when to write again, and how the host lets it in by name meanwhile."""
    return "\n".join([
        NOTICE_MARKER, "",
        "Too many conversations are waiting for the host's owner to let them in. Please write "
        f"again in about {_minutes(wait_ms)} minute(s) to get a pairing code; nothing you wrote "
        "here was sent to Hermes. The host's owner can also let this conversation in by name:",
        "", "```", f"{ALLOW_COMMAND} {thread}", "```"])
