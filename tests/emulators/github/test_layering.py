"""The GitHub emulator's layers point down (app -> resources -> models -> store), per ast."""
from pathlib import Path

from tests.test_layering import assert_layers_point_down, imports_of

FOLDER = Path(__file__).resolve().parents[3] / "emulators" / "github"
ORDER = ["app", "admin", "apps.admin", "apps.resources", "smart_http", "auth.enforce",
         "lifecycle.resources", "resources", "apps.events", "apps.schemas", "auth.credentials",
         "apps.rules", "apps.signin", "apps.keys", "apps.store", "apps.shapes",
         "auth.permissions", "context", "models",
         "lifecycle.merges", "lifecycle.protection", "lifecycle.reviews", "lifecycle.issues",
         "lifecycle.checks", "lifecycle.statuses", "refs", "pulls", "database", "contents",
         "commits", "transport", "shallow", "events", "media", "schemas", "shapes", "store", "objects",
         "git", "ids", "times", "actors", "openapi", "apps.openapi", "lifecycle.openapi",
         "presets", "errors"]
# the http layer: falcon, and marshmallow for the bodies it reads (apps.schemas)
HTTP_LAYER = ("app", "resources", "smart_http", "lifecycle.resources", "apps.resources",
              "apps.schemas", "auth.enforce")


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
