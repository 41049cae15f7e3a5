"""Local emulators of Hermes Agent and GitHub for testing their clients; see emulators/README.md.

The package is the registry's face (registry.py: `SERVICES`, `load`), above the runtime (which
never imports a service), with `start_fleet` and the portless mode's doors, `mock_github()` and
`mock_hermes()` (mock.py).
"""
import os

from .registry import SERVICES, load  # noqa: F401  (the package's API)


def start_fleet(config, *, loader=None, **options):
    """Start a fleet (emulators.runtime.fleet.start.start_fleet) of registered services, configured
    from the environment (HERMES_*) unless `loader(name)` says otherwise."""
    from .runtime.fleet.start import start_fleet as start  # on call: `import emulators` stays light
    return start(config, loader=loader or (lambda name: load(name, os.environ)), **options)


def mock_github(*args, **options):
    """Route `requests`/httpx calls to GitHub's API (https://api.github.com unless `base_url`
    says otherwise) to a GitHub emulator in this process: a context manager yielding its
    handle, or a decorator (emulators/mock.py)."""
    from .mock import mock_github as mock  # on call: `import emulators` stays light
    return mock(*args, **options)


def mock_hermes(*args, **options):
    """Route `requests`/httpx calls to a Hermes API server (`base_url`, by default Hermes'
    own http://127.0.0.1:8642) to a Hermes emulator in this process (emulators/mock.py)."""
    from .mock import mock_hermes as mock
    return mock(*args, **options)
