"""Chat rules: identity, limits, epochs, retention. Shared by the app, scripts/ and cron/."""
import bisect
import functools
import hashlib
import ipaddress
import logging
import random
import re
import time

from . import errors
from .clock import SystemClock
from .ratelimit import IpWindows, describe_window, retry_after_s
from .store import ThreadStore, is_thread_name

log = logging.getLogger(__name__)
TOKEN_RE = re.compile(r"\A[0-9a-f]{64}\Z")
DAY_MS = 86_400_000
# Temporary files and orphan lock files untouched this long are leftovers the sweep deletes.
STALE_FILE_S = 3600
# What a host-side loop catches per thread: the thread is reported and skipped, the loop goes on.
THREAD_FAULTS = (errors.ChatError, OSError)


def thread_of(token):
    """The thread a browser token owns: substr(sha256(token), 0, 16); TokenRejected if malformed."""
    if not isinstance(token, str) or not TOKEN_RE.match(token):
        raise errors.TokenRejected()
    return hashlib.sha256(token.encode("ascii")).hexdigest()[:16]


def client_address(peer, forwarded_for, trusted_networks):
    """The client's IP: the peer, or behind trusted proxies the right-most untrusted hop."""
    if not _is_trusted(peer, trusted_networks) or not forwarded_for:
        return peer or "unknown"
    for hop in reversed([h.strip() for h in forwarded_for.split(",")]):
        if hop and not _is_trusted(hop, trusted_networks):
            return hop
    return peer


@functools.lru_cache(maxsize=4096)
def _is_trusted(address, networks):
    """Parsing an address costs more than the rest of the check: every post asks twice."""
    try:
        ip = ipaddress.ip_address((address or "").strip().strip("[]"))
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip in net for net in networks if net.version == ip.version)


def iso_ts(epoch_ms):
    """UTC, whole seconds, `+00:00`: the contract's `ts`."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(epoch_ms // 1000))


class ChatService:
    """The newOS4 chat: one thread per token, epochs strictly increasing, retention on append."""

    def __init__(self, settings, *, clock=None, random_hex=None):
        self.settings = settings
        self.clock = clock or SystemClock()
        # Ids need to differ, not to be unguessable (the token guards the thread): Python's
        # generator, reseeded in every gunicorn worker, costs no system call per post.
        self._random_hex = random_hex or (lambda: f"{random.getrandbits(24):06x}")
        self.store = ThreadStore(settings.chat_dir,
                                 create_lock_path=settings.data_dir / "chat-create.lock")
        self.ip_windows = IpWindows(settings.data_dir / "ratelimit" / "ip",
                                    limit=settings.rate_ip,
                                    window_ms=settings.rate_window_s * 1000)

    def health(self):
        """Prove the data directory readable and writable (a probe file written and removed);
        Unavailable otherwise, with the details in the log only."""
        try:
            self.settings.check_data_dir()
        except ValueError as exc:
            log.error("health: %s", exc)
            raise errors.Unavailable("data directory not usable")
        return {"success": True, "status": "ok"}

    def check_text(self, text):
        """Non-empty string within the limit (code points); rejected, never trimmed or cut."""
        if not isinstance(text, str) or text == "":
            raise errors.BadRequest("text must be a non-empty string")
        if len(text) > self.settings.max_text:
            raise errors.TooLarge(self.settings.max_text)

    def post(self, thread, text, kind, address):
        """Append a browser message (author operator|agent) under both rate windows; a 507
        counts against the client's IP window like an accepted message."""
        self.check_text(text)
        now = self.clock.now_ms()
        with self.ip_windows.hold(address, now) as record_ip_hit:
            try:
                message = self._append(thread, text, kind, now, rate_limited=True)
            except errors.ThreadLimitReached:
                record_ip_hit()  # else one client could ask for 507s without end
                raise
            record_ip_hit()
        return message

    def check_unicode(self, text):
        """Refuse text no UTF-8 file can hold (lone surrogates): it would poison the thread."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise errors.BadRequest(
                f"text is not valid Unicode (lone surrogate U+{ord(text[exc.start]):04X} at "
                f"position {exc.start})")

    def reply(self, thread, text):
        """Append a `hermes` message to an existing thread (the host side; not rate limited)."""
        if not is_thread_name(thread):
            raise errors.BadRequest("thread must be 16 lowercase hex digits")
        self.check_text(text)
        self.check_unicode(text)
        if self.store.read(thread) is None:  # before locking: no lock file for a mistyped name
            raise errors.ThreadNotFound(f"no such thread: {thread}")
        return self._append(thread, text, "hermes", self.clock.now_ms(), rate_limited=False,
                            must_exist=True)

    def _append(self, thread, text, author, now, *, rate_limited, must_exist=False):
        appended = {}

        def change(doc):
            messages = doc["messages"]
            if must_exist and not messages:
                raise errors.ThreadNotFound(f"no such thread: {thread}")
            if rate_limited:
                self._check_thread_window(messages, now)
            appended.update(self._new_message(messages, text, author, now))
            doc["messages"] = self._retain(messages + [appended], now)
            return doc

        self.store.update(thread, change, max_threads=self.settings.max_threads)
        return appended

    def _new_message(self, messages, text, author, now):
        """A message whose epoch is strictly after every message before it."""
        epoch = max(now, messages[-1]["epoch"] + 1) if messages else now
        return {"id": self._message_id(epoch), "epoch": epoch, "ts": iso_ts(epoch),
                "author": author, "text": text}

    def deliver(self, thread, question_id, parts):
        """Append Hermes' answer to `question_id` as `parts`, all in one write, exactly once.

        Returns "delivered", "already delivered" (a retry after a crash), "superseded" (a newer
        browser message came after the question, or the question is gone) or "answered"
        (somebody else replied as hermes first). Only "delivered" writes.
        """
        for part in parts:
            self.check_text(part)
            self.check_unicode(part)
        now = self.clock.now_ms()
        outcome = []

        def change(doc):
            messages = doc["messages"]
            ids = [m["id"] for m in messages]
            if question_id not in ids:
                outcome.append("superseded")
                return None
            after = messages[ids.index(question_id) + 1:]
            if any(m["author"] != "hermes" for m in after):
                outcome.append("superseded")
                return None
            delivered = [m["text"] for m in after]
            if delivered != list(parts[:len(delivered)]):
                outcome.append("answered")
                return None
            if len(delivered) == len(parts):
                outcome.append("already delivered")
                return None
            for part in parts[len(delivered):]:
                messages = messages + [self._new_message(messages, part, "hermes", now)]
            outcome.append("delivered")
            return {**doc, "messages": self._retain(messages, now)}

        self.store.update(thread, change)
        return outcome[0]

    def announce(self, thread, after_id, text):
        """Append `text` as a `hermes` message, once: unless a `hermes` message with that text
        already follows `after_id` (a retry after a crash). Returns the message's id, or None
        when `after_id` is gone from the thread (nothing is written then)."""
        self.check_text(text)
        found = []

        def change(doc):
            messages = doc["messages"]
            ids = [m["id"] for m in messages]
            if after_id not in ids:
                return None
            same = [m for m in messages[ids.index(after_id) + 1:]
                    if m["author"] == "hermes" and m["text"] == text]
            if same:
                found.append(same[0]["id"])
                return None
            now = self.clock.now_ms()
            message = self._new_message(messages, text, "hermes", now)
            found.append(message["id"])
            return {**doc, "messages": self._retain(messages + [message], now)}

        self.store.update(thread, change)
        return found[0] if found else None

    def _check_thread_window(self, messages, now):
        """Per-thread window, counted from the thread under its lock: exact across workers."""
        window_ms = self.settings.rate_window_s * 1000
        hits = [m["epoch"] for m in messages if m["author"] != "hermes"]
        wait = retry_after_s(hits, now, self.settings.rate_thread, window_ms)
        if wait is not None:
            raise errors.RateLimited(
                f"rate limit: at most {self.settings.rate_thread} messages per thread per "
                f"{describe_window(window_ms)}", wait)

    def _retain(self, messages, now):
        """The messages retention keeps: none older than KEEP_DAYS, the newest KEEP_MESSAGES, and
        every message the per-thread window still counts, so the limit stays exact whatever
        KEEP_MESSAGES is (or however many parts long answers took)."""
        cutoff = now - self.settings.keep_days * DAY_MS
        kept = [m for m in messages if m["epoch"] >= cutoff]
        start = len(kept) - self.settings.keep_messages
        if start <= 0:
            return kept
        window_start = now - self.settings.rate_window_s * 1000
        uncounted = self.settings.rate_thread
        for index in range(len(kept) - 1, -1, -1):
            if uncounted == 0 or kept[index]["epoch"] <= window_start:
                break
            if kept[index]["author"] != "hermes":
                uncounted -= 1
                start = min(start, index)
        return kept[start:]

    def _message_id(self, epoch):
        moment = time.strftime("%Y%m%d-%H%M%S", time.gmtime(epoch // 1000))
        return f"MSG-{moment}-{self._random_hex()}"

    def poll(self, thread, since=0):
        """Messages newer than `since` (0: all), at most the newest `poll_limit`, oldest first."""
        doc = self.store.read(thread)
        messages = doc["messages"] if doc else []
        return {
            "success": True,
            "thread": thread,
            "messages": _newer(messages, since)[-self.settings.poll_limit:],
            "awaiting": bool(messages) and messages[-1]["author"] != "hermes",
            "cursor": messages[-1]["epoch"] if messages else 0,
        }

    def history(self, thread, since=0):
        """Every stored message newer than `since` of an existing thread (the host's view)."""
        if not is_thread_name(thread):
            raise errors.BadRequest("thread must be 16 lowercase hex digits")
        doc = self.store.read(thread)
        if doc is None:
            raise errors.ThreadNotFound(f"no such thread: {thread}")
        return _newer(doc["messages"], since)

    def summaries(self, *, awaiting_only=False):
        """One row of facts per thread, for `scripts/chat.py list` and the relay.

        Returns (rows, skipped): a thread that cannot be read is a (thread, why) pair in
        `skipped`, and every other thread is still listed.
        """
        rows, skipped = [], []
        for thread in self.store.threads():
            try:
                doc = self.store.read(thread)
            except THREAD_FAULTS as exc:
                skipped.append((thread, str(exc)))
                continue
            if not doc or not doc["messages"]:
                continue
            last = doc["messages"][-1]
            row = {"thread": thread, "messages": len(doc["messages"]), "last_id": last["id"],
                   "awaiting": last["author"] != "hermes", "last_epoch": last["epoch"],
                   "last_ts": last["ts"], "last_author": last["author"]}
            if row["awaiting"] or not awaiting_only:
                rows.append(row)
        return rows, skipped

    def delete(self, thread, *, force=False):
        """Delete a thread and its lock; `force` also deletes a thread file that is corrupt."""
        if not is_thread_name(thread):
            raise errors.BadRequest("thread must be 16 lowercase hex digits")
        return self.store.delete(thread, force=force)

    def clear_ip_window(self, address):
        """Forget one client address's per-IP window; True when it had hits."""
        try:
            normal = str(ipaddress.ip_address(address.strip().strip("[]")))
        except ValueError:
            raise errors.BadRequest(f"not an IP address: {address!r}")
        cleared = [self.ip_windows.clear(a) for a in dict.fromkeys((address, normal))]
        return any(cleared)

    def sweep(self):
        """Apply retention to every thread; delete emptied threads, stale temporary and orphan
        lock files, idle windows. A thread that cannot be swept is listed in `skipped` as
        (thread, why), a housekeeping step that failed in `problems`; the rest is done."""
        now = self.clock.now_ms()
        outcome = {"threads_trimmed": 0, "threads_removed": 0, "skipped": [], "problems": []}

        def change(doc):
            kept = self._retain(doc["messages"], now)
            if len(kept) == len(doc["messages"]):
                return None
            outcome["threads_trimmed" if kept else "threads_removed"] += 1
            return {**doc, "messages": kept}

        for thread in self.store.threads():
            try:
                self.store.update(thread, change)
            except THREAD_FAULTS as exc:
                outcome["skipped"].append((thread, str(exc)))
        housekeeping = {"threads_counted": self.store.recount,
                        "tmp_removed": lambda: self.store.remove_stale_tmp(STALE_FILE_S),
                        "locks_removed": lambda: self.store.remove_orphan_locks(STALE_FILE_S),
                        "ip_windows_removed": lambda: self.ip_windows.sweep(now)}
        for name, step in housekeeping.items():
            try:
                outcome[name] = step()
            except THREAD_FAULTS as exc:  # a folder replaced by a file, a lock held: say so
                outcome["problems"].append(f"{name.rsplit('_', 1)[0]}: {exc}")
        return outcome


def _newer(messages, since):
    """The messages with epoch > since; epochs are strictly increasing, so bisect."""
    if not since:
        return messages
    return messages[bisect.bisect_right(messages, since, key=lambda m: m["epoch"]):]
