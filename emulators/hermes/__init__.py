"""The Hermes Agent runs emulator: submit, poll, stop, events, approval, steer (see README.md).

`serve()` starts it on an ephemeral loopback port in a thread: `with serve() as hermes: hermes.url`.
"""
import os


def serve(settings=None, **kwargs):
    """Start the Hermes emulator in a background thread; return the running server.

    An entry point: without `settings` (a HermesSettings, e.g. a short SSE keepalive) the
    HERMES_* variables of the environment configure it.
    """
    from emulators.runtime import serve as serve_service

    from .app import create_service, from_env
    return serve_service(from_env(os.environ) if settings is None else create_service(settings),
                         **kwargs)
