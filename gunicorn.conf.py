"""Gunicorn settings for `gunicorn -c gunicorn.conf.py spaces.newos4.wsgi:application` (production:
the chat alone, behind the README's nginx) and `... wsgi:application` (`make serve`: the monolith).

The worker is our own: spaces/serving/worker.py says how it works and why. Several workers,
because all shared state is on disk (thread files, SQLite). Override any setting on the command
line (`--bind`, `--workers`) or with GUNICORN_CMD_ARGS. What each choice below measured is in
the commit that made it (`git log gunicorn.conf.py`); `python -m bench cpus` re-measures one.
"""
import errno
import multiprocessing
import os
import socket
import sys

from spaces.serving.worker import AcceptingThreadsWorker, choose_cpu

bind = "127.0.0.1:8000"
workers = min(4, multiprocessing.cpu_count() * 2 + 1)
worker_class = AcceptingThreadsWorker
# Each worker runs on one CPU, the workers spread over the CPUs the server may use (taskset,
# systemd's CPUAffinity=): choose_cpu says why.
pre_fork = choose_cpu
# Request threads per worker, and as many late threads for the requests of slow clients and
# kept connections. Posts wait on two fsyncs each: threads keep several in flight (a thread
# waiting on the disk leaves the GIL to the others), and each thread more is one more to share
# the GIL with.
threads = 6
# Per worker process: event streams that get a thread of their own (past that, the thread that
# answered streams it; streams never occupy the `threads`), and slow clients' requests the
# reader holds at once (past that, the oldest is closed). gunicorn's default.
worker_connections = 1000
# Seconds a kept-alive connection may idle between requests (it waits in the reader: it holds
# no thread). Longer than the idle time of the connections nginx keeps (`keepalive_timeout 2s`
# in deploy/nginx/newos4.conf), so the proxy is the side that closes an idle one: a connection
# closed by us just as nginx sends a request on it would fail that request (nginx resends a GET,
# not a POST). Short enough that a client idling on connections of its own soon gives them back
# (and the reader closes idle connections first when it needs room). 0: one request per
# connection.
keepalive = 15
# gunicorn 27+ opens a control socket at one fixed path per user; several instances (tests,
# emulators beside the service) would fight over it. Older gunicorns ignore this name.
control_socket_disable = True
# A worker silent this long is restarted. With our worker it is also how long a client has,
# from its connection, to send its request (head and body up to 64 KiB; a request thread never
# waits for it), and how long a bigger body may pause between its parts.
timeout = 60
graceful_timeout = 10
# Only the local reverse proxy may set X-Forwarded-Proto; the chat app reads X-Forwarded-For
# itself through NEWOS4_TRUSTED_PROXIES (the same addresses by default).
forwarded_allow_ips = "127.0.0.1,::1"
# nginx already logs every request (with the client's address, which gunicorn would log as
# 127.0.0.1); a second access log is a write by every worker per request.
# `--access-logfile -` turns it back on when gunicorn runs alone (`make serve`).
accesslog = None
errorlog = "-"


# The app production serves (deploy/systemd/newos4.service): the chat alone, no emulator.
CHAT_ALONE = "spaces.newos4.wsgi:application"


def on_starting(server):
    """Refuse a bad configuration once, in the arbiter, before any worker starts: otherwise each
    worker prints the same line (the wsgi modules make the same checks for servers without this
    file). The emulators' settings are checked only when the app serves them."""
    from spaces.newos4.settings import Settings as ChatSettings
    try:
        ChatSettings.from_env(os.environ).check_data_dir()
        if server.app.app_uri != CHAT_ALONE:
            from emulators.hermes.settings import HermesSettings
            from emulators.runtime import Settings as EmulatorSettings
            EmulatorSettings.from_env(os.environ)
            HermesSettings.from_env(os.environ)
    except ValueError as exc:  # each names the variable and the value it refused
        sys.stderr.write(f"gunicorn: configuration error: {exc}\n")
        if server.pidfile is not None:
            server.pidfile.unlink()
        raise SystemExit(4)  # gunicorn's "App failed to load"
    _refuse_a_taken_address(server)


def _refuse_a_taken_address(server):
    """Say in one line that the port is taken and exit 1, instead of gunicorn's five retries
    that print `Connection in use` about a dozen times. A listener handed over by a re-exec
    (USR2) or by systemd is already ours: not probed."""
    if os.environ.get("GUNICORN_FD") or os.environ.get("LISTEN_FDS"):
        return
    for address in server.cfg.address:
        if not isinstance(address, tuple):
            continue  # a unix socket: gunicorn replaces a stale one itself
        host, port = address[:2]
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    return  # gunicorn reports other failures (an address not on this host)
                where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
                sys.stderr.write(f"gunicorn: {where} is already in use (another server?); "
                                 "choose another with --bind or GUNICORN_CMD_ARGS\n")
                if server.pidfile is not None:
                    server.pidfile.unlink()
                raise SystemExit(1)
