"""Mount WSGI apps under path prefixes (`/emulators/<name>`), everything else to a fallback."""
import re

PREFIX = re.compile(r"^/(?:[A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+$")


class PathDispatcher:
    """Route `/prefix` and `/prefix/...` to a mounted app (prefix moved to SCRIPT_NAME)."""

    def __init__(self, fallback, mounts):
        self.fallback = fallback
        self.mounts = []
        for prefix, app in mounts.items():
            prefix = prefix.rstrip("/")
            if not PREFIX.match(prefix):
                raise ValueError("mount prefix must be an absolute path of plain segments")
            self.mounts.append((prefix, app))
        self.mounts.sort(key=lambda item: -len(item[0]))  # nested prefixes: longest first

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        for prefix, app in self.mounts:
            if path == prefix or path.startswith(prefix + "/"):
                environ = dict(environ)
                environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
                environ["PATH_INFO"] = path[len(prefix):] or "/"
                return app(environ, start_response)
        return self.fallback(environ, start_response)
