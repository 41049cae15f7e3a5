"""GitHub's published GraphQL schema (`schema.graphql`), built once per process when first asked
for.

The SDL is 1.2 MB: graphql-core parses and builds it in about 1.5 s of CPU, so a process
pays that on its first GraphQL request, never at import, and only once (a lock keeps the
request threads of a worker from building it side by side).
"""
import json
import threading
from pathlib import Path

import graphql

HERE = Path(__file__).resolve().parent
SDL = HERE / "schema.graphql"
PACKAGE = HERE / "schema.package.json"  # the npm package's own package.json

_lock = threading.Lock()
_built = []


def version():
    """The version of npm `@octokit/graphql-schema` vendored (its own package.json)."""
    return json.loads(PACKAGE.read_text())["version"]


def schema():
    """The executable schema (the same object for the life of the process)."""
    if not _built:
        with _lock:
            if not _built:
                _built.append(_build())
    return _built[0]


def _build():
    document = graphql.parse(SDL.read_text(), no_location=True)
    # GitHub's own SDL defines two fields of EnterpriseOwnerInfo twice (identically), which
    # graphql-core's SDL validation refuses; the schema is otherwise what GitHub serves.
    return graphql.build_ast_schema(document, assume_valid_sdl=True)
