"""The relay's state: per-thread records in `relay/state.json`, replaced atomically.

Only a relay pass holding `relay/state.json.lock` reads and writes it (see passes.py), and the
host's `scripts/chat.py approve`, which records a decision there under the same lock.
"""
import json
import os
import shutil

from ..files import atomic_write
from ..store import is_thread_name


class RelayState:
    """Per-thread relay records in one JSON file, replaced atomically after every change.

    A file that cannot be used, or records that are not ours, are set aside (the file is kept
    as `state.json.corrupt-<ms>`) and reported in `problems`: a damaged state never stops the
    relay, and replaying a question with a fresh record reuses its generation-0 key.
    """

    def __init__(self, path, *, now_ms):
        self.path = path
        self.problems = []
        try:
            doc = json.loads(path.read_bytes())
            threads = doc["threads"]
            if not isinstance(threads, dict):
                raise TypeError("threads is not an object")
        except FileNotFoundError:
            self.threads = {}
            return
        except (ValueError, KeyError, TypeError, RecursionError, OSError) as exc:
            self.threads = {}
            self._set_aside(now_ms, f"cannot be read ({exc.__class__.__name__}: "
                                    f"{str(exc)[:120]})")
            return
        self.threads = {t: e for t, e in threads.items() if _valid_entry(t, e)}
        bad = sorted(set(threads) - set(self.threads))
        if bad:
            self._set_aside(now_ms, f"has {len(bad)} malformed record(s) "
                                    f"({', '.join(map(str, bad[:5]))}); they start over", copy=True)

    def _set_aside(self, now_ms, why, *, copy=False):
        """Keep the damaged file under a new name (an OSError here stops the relay: better
        than writing over the only copy), then start from what could be read."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{now_ms}")
        if copy:
            shutil.copy2(self.path, aside)
            self.save()
        else:
            os.replace(self.path, aside)
        self.problems.append(f"relay state {self.path} {why}; kept as {aside.name}")

    def save(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps({"threads": self.threads}, indent=1,
                                           sort_keys=True).encode())


ENTRY_FIELDS = {"question": (str,), "generation": (int,), "attempts": (int,), "next_ms": (int,),
                "run_id": (str, type(None)), "submitted_ms": (int, type(None))}


def _valid_entry(thread, entry):
    return is_thread_name(thread) and isinstance(entry, dict) and all(
        type(entry.get(name)) in kinds for name, kinds in ENTRY_FIELDS.items())


def state_path(settings):
    """Where the relay keeps its state."""
    return settings.data_dir / "relay" / "state.json"


def pass_lock_wait_s(settings):
    """How long to wait for the state lock: another pass may hold it for its whole budget."""
    return settings.relay_budget_s + 2 * settings.relay_http_timeout_s
