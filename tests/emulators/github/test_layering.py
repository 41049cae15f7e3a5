"""The GitHub emulator's layers point down (app -> resources -> models -> store), per ast."""
from pathlib import Path

from tests.test_layering import assert_layers_point_down, imports_of

FOLDER = Path(__file__).resolve().parents[3] / "emulators" / "github"
# GraphQL over the rules (graphql/): the answer, the objects it presents, the adapter to the
# rules, then the generic machinery
GRAPHQL = ["graphql.execution", "graphql.root", "graphql.mutations", "graphql.repository",
           "graphql.pulls", "graphql.issues", "graphql.checks", "graphql.actors",
           "graphql.connections", "graphql.rules", "graphql.resolve", "graphql.documents",
           "graphql.schema", "graphql.errors"]
ORDER = ["app", "admin", "graphql.resources", "graphql.schemas", "smart_http",
         "lifecycle.resources", "resources", "context", *GRAPHQL, "models",
         "lifecycle.merges", "lifecycle.protection", "lifecycle.reviews", "lifecycle.issues",
         "lifecycle.checks", "lifecycle.statuses", "refs", "pulls", "database", "contents",
         "commits", "transport", "shallow", "events", "media", "schemas", "shapes", "store", "objects",
         "git", "ids", "times", "actors", "openapi", "lifecycle.openapi", "presets", "errors"]
HTTP_LAYER = ("app", "resources", "smart_http", "lifecycle.resources", "graphql.resources",
              "graphql.schemas")


def modules():
    """{dotted name below emulators/github: path} of every module (packages' __init__ aside)."""
    return {".".join(path.relative_to(FOLDER).with_suffix("").parts): path
            for path in FOLDER.rglob("*.py") if path.stem != "__init__"}


def test_github_layers_point_down_and_only_the_http_layer_imports_falcon():
    assert_layers_point_down("emulators/github", ORDER)
    assert set(modules()) == set(ORDER)
    for name, path in modules().items():
        if name not in HTTP_LAYER:
            for module in imports_of(path):
                assert module.split(".")[0] not in ("falcon", "marshmallow"), name
