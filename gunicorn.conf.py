"""Gunicorn settings for `gunicorn -c gunicorn.conf.py wsgi:application`.

Threaded workers so that long-lived Server-Sent Event streams (Hermes emulator) never take a
whole worker; several workers because all shared state is on disk (thread files, SQLite).
Override any setting on the command line (`--bind`, `--workers`) or with GUNICORN_CMD_ARGS.
"""
import multiprocessing

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
