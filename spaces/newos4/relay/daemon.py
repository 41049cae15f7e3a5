"""The watcher as a service: run it until SIGTERM or Ctrl-C, tell systemd it is ready and alive
(Type=notify, WatchdogSec), and end the process within a few seconds of the signal."""
import os
import signal
import socket
import sys
import threading
import time

from .watch import Watcher, WatcherBusy

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
