"""Gunicorn settings for `gunicorn -c gunicorn.conf.py wsgi:application`, behind the README's nginx.

Threaded workers so that long-lived Server-Sent Event streams (Hermes emulator) never take a
whole worker; several workers because all shared state is on disk (thread files, SQLite).
Override any setting on the command line (`--bind`, `--workers`) or with GUNICORN_CMD_ARGS.
Figures: ../shared/perf/bench.py-style runs on a 2-core machine, `-w 2`, nginx in front,
medians of interleaved 1-s slices against the PHP build with 16 php-fpm children.
"""
import multiprocessing
import os
import sys

bind = "127.0.0.1:8000"
workers = min(4, multiprocessing.cpu_count() * 2 + 1)
worker_class = "gthread"
# Posts wait on two fsyncs each; threads keep several in flight, so the disk commits them
# together. Posts/s as a share of PHP's, one interleaved run: 2 threads 0.35, 4 threads 0.51,
# 8 threads 0.57, 16 threads 0.49 (another run: sync workers 0.24, 4 threads 0.51, 8 threads
# 0.72); idle polls gain nothing from more threads.
threads = 8
# A gthread worker otherwise keeps accepting connections while event streams hold all of its
# threads, and those requests wait; refusing them lets another worker take them. That leaves no
# room for idle keep-alive connections, so keep-alive is off: each answer closes its connection
# and nginx opens one per request (its default). Upstream keep-alive measured +20 % idle polls
# (0.44 -> 0.53 of PHP), but a kept-alive connection parked on a worker whose threads all hold
# streams would wait behind them: the guarantee is worth more than the 20 %.
worker_connections = threads
keepalive = 0
# gunicorn 27+ opens a control socket at one fixed path per user; several instances (tests,
# emulators beside the service) would fight over it. Older gunicorns ignore this name.
control_socket_disable = True
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


def on_starting(server):
    """Refuse a bad configuration once, in the arbiter, before any worker starts: otherwise each
    worker prints the same line (wsgi.py makes the same checks for servers without this file)."""
    from emulators.hermes.settings import HermesSettings
    from emulators.runtime import Settings as EmulatorSettings
    from spaces.newos4.settings import Settings as ChatSettings
    try:
        ChatSettings.from_env(os.environ).check_data_dir()
        EmulatorSettings.from_env(os.environ)
        HermesSettings.from_env(os.environ)
    except ValueError as exc:  # each names the variable and the value it refused
        sys.stderr.write(f"gunicorn: configuration error: {exc}\n")
        if server.pidfile is not None:
            server.pidfile.unlink()
        raise SystemExit(4)  # gunicorn's "App failed to load"
