"""The GitHub emulator's layers point down (app -> resources | graphql -> schemas -> models ->
store), its folders are layers, and what the issue that shaped it asked holds: no mixins, no
module over 500 lines, HTTP only in the http layer, marshmallow only in the schemas (per ast).
GraphQL (graphql/) is an http layer beside REST's resources/: neither imports the other, and
only app.py imports it."""
import ast
from pathlib import Path

from tests.test_layering import assert_layers_point_down, folder_cycles, imports_of

FOLDER = Path(__file__).resolve().parents[3] / "emulators" / "github"
HTTP = ["resources.commits", "resources.checks", "resources.statuses", "resources.contents",
        "resources.git_data", "resources.issues", "resources.labels", "resources.merges",
        "resources.protection", "resources.pulls", "resources.refs", "resources.repos",
        "resources.reviews", "resources.smart_http", "resources.apps", "resources.access",
        "resources.request"]
# GraphQL over the same rules: the endpoint, the run, the objects it presents, what a request's
# resolvers share, then the generic machinery
GRAPHQL = ["graphql.resources", "graphql.execution", "graphql.root", "graphql.mutations",
           "graphql.repository", "graphql.pulls", "graphql.issues", "graphql.checks",
           "graphql.actors", "graphql.limits", "graphql.connections", "graphql.context",
           "graphql.resolve", "graphql.documents", "graphql.schema", "graphql.errors"]
SCHEMAS = ["schemas.graphql", "schemas.ci", "schemas.contents", "schemas.issues", "schemas.merges",
           "schemas.protection", "schemas.pulls", "schemas.queries", "schemas.refs",
           "schemas.reviews", "schemas.apps", "schemas.rate_limits", "schemas.base",
           "schemas.body"]
# rate limits and conditional requests: middleware and a route over their rules
RATE_LIMITS = ["ratelimits.resources", "ratelimits.middleware", "ratelimits.admin"]
RULES = ["models.backend", "models.seeding", "models.merges", "models.protection",
         "models.reviews", "models.issues", "models.labels", "models.checks",
         "models.statuses", "models.refs", "models.pulls", "models.git_data",
         "models.contents", "models.commits", "models.rule", "models.accounts",
         "models.repositories", "models.apps", "models.signin", "models.nodes", "models.texts"]
# `from .schemas import refs` names the package
PACKAGES = ["resources", "graphql", "schemas", "models", "shapes"]
ORDER = ["app", "admin", *RATE_LIMITS, "resources", *HTTP, "graphql", *GRAPHQL, "schemas",
         *SCHEMAS, "calls", "ratelimits.quotas", "credentials", "models", *RULES,
         "ratelimits.conditional", "permissions", "keys", "transport", "shallow", "context",
         "openapi", "ratelimits.openapi", "presets", "media", "events", "shapes", "shapes.ci",
         "shapes.conversation", "shapes.protection", "shapes.repos", "shapes.commits",
         "shapes.apps", "shapes.accounts", "store", "objects", "inputs", "git", "ids", "times",
         "actors", "errors", "operations"]


def modules():
    """{dotted name below emulators/github: path} of every module (packages' __init__ aside)."""
    return {".".join(path.relative_to(FOLDER).with_suffix("").parts): path
            for path in FOLDER.rglob("*.py") if path.stem != "__init__"}


def test_github_layers_point_down():
    assert_layers_point_down("emulators/github", ORDER)
    assert set(modules()) == set(ORDER) - set(PACKAGES)  # a new module takes its place


def test_github_folders_are_layers():
    """No folder is imported by a module beside it and imports, directly or through a third,
    a module that imports it (an arrow up, as `lifecycle/` <-> `resources.py` <-> `models.py`
    were)."""
    assert folder_cycles("emulators/github") == []


def test_graphql_is_an_http_layer_beside_resources_that_only_app_imports():
    for name, path in modules().items():
        imported = {m for m in imports_of(path) if m.startswith("emulators.github.")}
        if not name.startswith("graphql.") and name != "app":
            assert not any(m.startswith("emulators.github.graphql") for m in imported), name
        if name.startswith("graphql."):
            assert not any(m.startswith("emulators.github.resources") for m in imported), name


def test_only_the_http_layer_speaks_http_and_only_schemas_import_marshmallow():
    for name, path in modules().items():
        tops = {module.split(".")[0] for module in imports_of(path)}
        if name not in ("app", *HTTP):
            assert not tops & {"falcon", "webob"}, name
        if not name.startswith("schemas."):
            assert "marshmallow" not in tops, name
        if name.startswith("models."):  # the rules take typed input: no request, no schema
            assert not any(m.startswith(("emulators.github.resources",
                                         "emulators.github.schemas"))
                           for m in imports_of(path)), name


def test_no_module_is_over_500_lines_and_no_class_has_three_bases():
    for name, path in modules().items():
        text = path.read_text()
        assert len(text.splitlines()) <= 500, name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                assert len(node.bases) < 3, f"{name}.{node.name}"
