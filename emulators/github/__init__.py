"""The GitHub REST emulator: repositories, refs and same-repository pull requests (see README.md).

`serve()` starts it on an ephemeral loopback port in a thread: `with serve() as gh: gh.url`.
"""


def serve(**kwargs):
    """Start the GitHub emulator in a background thread; return the running server."""
    from emulators.runtime import serve as serve_service

    from .app import create_service
    return serve_service(create_service(), **kwargs)
