"""Gunicorn settings for `gunicorn -c gunicorn.conf.py spaces.newos4.wsgi:application` (production:
the chat alone, behind the README's nginx) and `... wsgi:application` (`make serve`: the monolith).

Our own worker (spaces/worker.py): threads that each accept a connection and answer its request
once it is whole (a reader thread collects the requests of slow clients, and waits for the next
request on kept-alive connections), and event streams (Hermes emulator) in threads of their
own, so neither slow clients, idle connections nor streams hold a request thread; several
workers because all shared state is on disk (thread files, SQLite). Needs gunicorn 26 or later
(setup.cfg).
Override any setting on the command line (`--bind`, `--workers`) or with GUNICORN_CMD_ARGS.
Figures: the chat service as shipped beside a PHP build of the same contract (16 php-fpm
children) behind the same nginx, on a 2-core machine, `-w 2`, medians of interleaved 1-s slices.
"""
import errno
import multiprocessing
import os
import socket
import sys

from spaces.worker import AcceptingThreadsWorker, choose_cpu

bind = "127.0.0.1:8000"
workers = min(4, multiprocessing.cpu_count() * 2 + 1)
# Idle polls and posts as a share of PHP's, one interleaved run: gunicorn's gthread (8 threads)
# 0.32 and 0.64; this worker with 8 threads 0.40 and 0.73 (same run: 3 threads 0.44 / 0.76,
# 4 threads 0.48 / 0.76, 6 threads 0.45 / 0.72). gthread spends more CPU per request in its
# selector, pool and queue than our app does; fewer threads share the GIL with fewer others.
worker_class = AcceptingThreadsWorker
# Each worker runs on one CPU, the workers spread over the CPUs the server may use (taskset,
# systemd's CPUAffinity=); spaces/worker.py's choose_cpu says why. Behind nginx on a 2-core VM,
# side by side with the same worker unpinned: posts 1.45x the rate with `-w 2` (user CPU per
# post -15 %, system -14 %), 1.57x while a busy loop held one of the two CPUs, 1.13x with
# `-w 1`, 1.27x with `-w 4`; idle polls 1.12x. Without nginx, `python -m bench cpus`: posts
# 1.32x, idle polls 1.11x (while other work loaded the machine).
pre_fork = choose_cpu
# Posts wait on two fsyncs each; threads keep several in flight (a thread waiting on the disk
# leaves the GIL to the others), and too many only add GIL contention. With a connection per
# request (nginx without `keepalive`), posts/s as a share of PHP's: 1 thread 0.57; 2 threads
# 0.76, 0.84; 3 threads 0.75, 0.91, 0.82; 4 threads 0.80, 0.82, 0.66; 6 threads 0.72, 0.80;
# 8 threads 0.73 (noise +-0.08). Behind nginx's kept connections the late threads answer nearly
# every request; medians of 8-10 interleaved 1-s slices beside php-fpm with 16 children, posts
# then idle polls: 3 threads 0.73-0.96 / 0.62-0.78; 4 threads 0.88-1.07 / 1.07; 6 threads
# 0.84-1.02 / 0.70-1.29; 8 threads 0.69-0.74 (posts). Those runs shared the 2 cores with other
# work, where more threads are also a larger share of a busy machine.
# As many late threads answer the requests of slow clients and of kept connections.
threads = 6
# Per worker process: event streams that get a thread of their own (past that, the thread that
# answered streams it; streams never occupy the `threads`), and slow clients' requests the
# reader holds at once (past that, the oldest is closed). gunicorn's default.
worker_connections = 1000
# Seconds a kept-alive connection may idle between requests (it waits in the reader: it holds
# no thread). Longer than the idle time of the connections nginx keeps (`keepalive_timeout 10s`
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
# 127.0.0.1); a second access log, a write by every worker per request, cost idle polls
# 10-33 % (of PHP: 0.28 -> 0.34, 0.27 -> 0.30, 0.30 -> 0.45 in three interleaved runs;
# posts within noise).
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
