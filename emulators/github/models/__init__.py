"""The rules of the GitHub emulator (moto's `models`): `GitHubBackend` and its rule objects, one
module per area. No HTTP here: rules take typed input and return GitHub's shapes or records."""
from .backend import GitHubBackend

__all__ = ["GitHubBackend"]
