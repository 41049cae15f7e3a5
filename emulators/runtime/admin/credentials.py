"""The credential map's admin routes (`/__admin/credentials`); the map itself is rows
(state/credentials.py)."""
from ..state.credentials import parse_pairs


class CredentialRoutes:
    """`GET`/`PUT`/`DELETE /credentials`."""

    def __init__(self, emulator):
        self.emulator = emulator

    def routes(self):
        """Return (method, path, handler) of every credential route."""
        return [("GET", "/credentials", self.list), ("PUT", "/credentials", self.put),
                ("DELETE", "/credentials", self.delete)]

    def list(self, request):
        return 200, {"credentials": self.emulator.credentials.entries()}

    def put(self, request):
        pairs = parse_pairs(request.body, request.namespace)
        self.emulator.credentials.set_many(pairs)
        return 200, {"mapped": len(pairs)}

    def delete(self, request):
        self.emulator.credentials.remove(request.query.get("credential"))
        return 200, {"status": "ok"}
