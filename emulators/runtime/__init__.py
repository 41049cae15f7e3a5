"""The shared emulator runtime: namespaces, clock, faults, journal and timeline in one SQLite
database every worker shares. Services plug in with `Service` (see emulators/runtime/README.md)."""
from .app import Runtime, add_fallback_handlers
from .errors import AdminError, ConnectionDropped, DroppedByFault, EmulatorError
from .fleet.start import start_fleet
from .instance import Instance, instance_of, operation_of
from .mount import PathDispatcher
from .server import Server, serve
from .service import AdminCall, Service
from .settings import Settings
from .stopping import pauser


def build_wsgi(service, settings=None, **kwargs):
    """Return the WSGI app of a service under the runtime: a `Runtime`, with its handles."""
    return Runtime(service, settings, **kwargs)


__all__ = ["AdminCall", "AdminError", "ConnectionDropped", "DroppedByFault", "EmulatorError",
           "Instance", "PathDispatcher", "Runtime", "Server", "Service", "Settings",
           "add_fallback_handlers", "build_wsgi", "instance_of", "operation_of", "pauser", "serve",
           "start_fleet"]
