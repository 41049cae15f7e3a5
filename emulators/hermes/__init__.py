"""The Hermes Agent runs emulator: submit, poll, stop, events, approval, steer (see README.md).

`serve()` starts it on an ephemeral loopback port in a thread: `with serve() as hermes: hermes.url`.
"""


def serve(settings=None, **kwargs):
    """Start the Hermes emulator in a background thread; return the running server.

    `settings` (a HermesSettings) overrides the environment's, e.g. a short SSE keepalive.
    """
    from emulators.runtime import serve as serve_service

    from .app import create_service, service
    return serve_service(service if settings is None else create_service(settings), **kwargs)
