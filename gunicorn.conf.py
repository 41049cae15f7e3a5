"""Gunicorn settings for `gunicorn -c gunicorn.conf.py wsgi:application`.

Threaded workers so that long-lived Server-Sent Event streams (Hermes emulator) never take a
whole worker; several workers because all shared state is on disk (thread files, SQLite).
Override any setting on the command line (`--bind`, `--workers`) or with GUNICORN_CMD_ARGS.
"""
import multiprocessing
import os
import sys

bind = "127.0.0.1:8000"
workers = min(4, multiprocessing.cpu_count() * 2 + 1)
worker_class = "gthread"
threads = 8
# A gthread worker otherwise keeps accepting connections while event streams hold all of its
# threads, and those requests wait; refusing them lets another worker take them. That leaves no
# room for idle keep-alive connections, so keep-alive is off (each answer closes its
# connection; the reverse proxy does not keep upstream connections open by default anyway).
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
accesslog = "-"
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
