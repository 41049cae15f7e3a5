#!/usr/bin/env python3
"""The newOS4 chat cron job: retention sweep, then relay waiting threads to Hermes.

Thin: parse argv, call spaces.newos4.relay (or .watch for --watch), print one line per action.
Install with cron/crontab; the watcher with deploy/newos4-relay-watch.service.
"""
import argparse
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

try:
    from spaces.newos4 import errors  # noqa: E402
    from spaces.newos4.hermes_client import HermesClient  # noqa: E402
    from spaces.newos4.relay import RelayBusy, cron_tick  # noqa: E402
    from spaces.newos4.service import ChatService  # noqa: E402
    from spaces.newos4.settings import Settings, SettingsError  # noqa: E402
    from spaces.newos4.watch import Watcher, WatcherBusy  # noqa: E402
except ModuleNotFoundError as missing:  # e.g. ./cron/relay.py under the system python3
    sys.exit(f"relay.py: {missing}; run it with the repo's .venv/bin/python "
             "(make serve creates it)")

EPILOG = """Each run: sweep retention (30 days, newest 200 messages; emptied threads, stale
temporary files and idle rate windows are deleted), then, when HERMES_API_URL is set, poll the
runs in flight, write finished answers back as hermes messages, and submit threads that wait
(one run per question, Idempotency-Key per question, backoff on 429/503 and failed runs).

environment:
  HERMES_API_URL                 e.g. http://127.0.0.1:8642 (unset: sweep only)
  HERMES_API_KEY                 bearer token of the Hermes API server (API_SERVER_KEY)
  NEWOS4_RELAY_BUDGET_S=45       stop starting work after this many seconds
  NEWOS4_RELAY_MAX_IN_FLIGHT=4   runs pending at once
  NEWOS4_RELAY_MAX_ATTEMPTS=5    failed runs before a question is left waiting
  NEWOS4_RELAY_HISTORY=20        earlier messages sent as conversation_history
  NEWOS4_RELAY_RUN_TIMEOUT_S=1800  a run pending longer is stopped and retried
  NEWOS4_RELAY_HTTP_TIMEOUT_S=10 per request to Hermes
  NEWOS4_RELAY_WATCH_TICK_MS=100 --watch: how often it looks for changed threads
  NEWOS4_RELAY_WATCH_POLL_MS=500 --watch: how often it polls the runs in flight
  NEWOS4_DATA_DIR, NEWOS4_KEEP_DAYS, NEWOS4_KEEP_MESSAGES, NEWOS4_MAX_TEXT

When Hermes asks before running a command (a run waiting for approval), the relay writes the
request into the thread ("Hermes asks before running a command:", the command, why, the words
to reply with); the person's next message decides (once/session/always/deny, approve/yes/no),
and any other text refuses the command and becomes the next question. A cron run reads a
waiting run's details only when no watcher runs (the watcher holds each run's event stream).

Each thread is handled on its own: a thread file that cannot be read or an answer that cannot
be written is reported once (relay: PROBLEM thread=... skipped: why) and skipped, and every
other thread is still swept and relayed. When Hermes does not answer, one line says so.

--watch runs the same relay (same variables, state file, keys and retries) as a long-running
process that submits a new question and delivers a finished answer within a second; it does
not sweep, so keep the crontab line for the sweep (and as the fallback: a cron run beside the
watcher does nothing twice). SIGTERM or Ctrl-C stops it (exit 0).

exit status: 0 all well (or another run holds the lock), 1 something needs a look
(Hermes unreachable, a run failed, a question given up, a thread skipped), 2 usage error
(--watch without HERMES_API_URL)."""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="relay.py", description="newOS4 chat cron job: retention sweep and Hermes relay.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--sweep-only", action="store_true",
                      help="only apply retention; do not contact Hermes")
    mode.add_argument("--watch", action="store_true",
                      help="keep running: relay within a second of each change (no sweep)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)

    def log(line, problem):
        print(line, file=sys.stderr if problem else sys.stdout, flush=True)

    try:
        settings = Settings.from_env(_environ_for(args))
        settings.check_data_dir()
        client = HermesClient(settings.hermes_api_url, api_key=settings.hermes_api_key,
                              timeout_s=settings.relay_http_timeout_s) \
            if settings.hermes_api_url else None
        if args.watch:
            return watch(ChatService(settings), client, log)
        problems = cron_tick(ChatService(settings), sweep_only=args.sweep_only, log=log,
                             client=client)
    except RelayBusy:
        print("relay: another relay run holds the lock; nothing done", flush=True)
        return 0
    except (errors.ChatError, SettingsError, OSError) as exc:
        print(f"relay: {exc}", file=sys.stderr)
        return 1
    return 1 if problems else 0


def _environ_for(args):
    """The environment the settings are read from: a sweep never contacts Hermes, so a
    malformed HERMES_API_URL cannot stop it (the full run and --watch still refuse it)."""
    if args.sweep_only:
        return {name: value for name, value in os.environ.items() if name != "HERMES_API_URL"}
    return os.environ


STOP_GRACE_S = 3.0


def sd_notify(message):
    """Tell systemd how the watcher is (Type=notify, WatchdogSec); nothing when not under it."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError:
        pass  # systemd went away: nothing to tell


def watch(service, client, log):
    """Run the watcher in a thread until SIGTERM/SIGINT, then end the process: status 0
    within a few seconds of the signal.

    A pass is crash-safe (keys saved before submitting, answers written in one atomic write),
    so one still waiting on Hermes after STOP_GRACE_S is abandoned and the next start redoes it.
    """
    if client is None:
        print("relay.py: --watch needs HERMES_API_URL (there is nothing to watch for)",
              file=sys.stderr)
        return 2
    stop = threading.Event()
    signalled = []  # the handler only appends: Event.set() there could deadlock a wait()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, _: signalled.append(signum))
    watcher = Watcher(service, client, log=log)
    failure = []
    pinged = []

    def alive():
        """READY=1 once the first pass is done, then WATCHDOG=1 at most once a second."""
        now = time.monotonic()
        if not pinged or now - pinged[-1] >= 1:
            sd_notify("WATCHDOG=1" if pinged else "READY=1")
            pinged.append(now)
            del pinged[:-1]

    def run():
        try:
            watcher.watch(stop, alive=alive)
        except WatcherBusy as exc:
            failure.append((0, f"relay: {exc}; exiting"))
        except BaseException as exc:  # reported below; systemd restarts on exit 1
            failure.append((1, f"relay: PROBLEM the watcher stopped: {exc!r}"))
        stop.set()

    log(f"relay: watching {service.settings.chat_dir} every {watcher.tick_s:g}s, runs in "
        f"flight every {watcher.poll_s:g}s; SIGTERM or Ctrl-C stops", False)
    worker = threading.Thread(target=run, name="relay-watch", daemon=True)
    worker.start()
    while not signalled and not stop.is_set():
        time.sleep(0.1)
    stop.set()
    worker.join(STOP_GRACE_S)
    if failure:
        status, line = failure[0]
    elif worker.is_alive():
        status, line = 0, "relay: stopped in the middle of a pass; the next start redoes it"
    else:
        status, line = 0, f"relay: stopped after {watcher.passes} passes"
    log(line, status != 0)
    sd_notify("STOPPING=1")
    sys.stdout.flush()
    sys.stderr.flush()
    # A pass or a poll still waiting on Hermes would hold interpreter shutdown for up to the
    # HTTP timeout (executor threads are joined at exit): a pass is crash-safe, so leave now.
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main())
