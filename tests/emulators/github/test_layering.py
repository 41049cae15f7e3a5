"""The GitHub emulator's layers point down (app -> resources -> models -> store), per ast."""
from pathlib import Path

from tests.test_layering import assert_layers_point_down, imports_of

FOLDER = Path(__file__).resolve().parents[3] / "emulators" / "github"
ORDER = ["app", "admin", "smart_http", "lifecycle.resources", "resources", "context",
         "models.backend", "models.seeding", "models.merges", "models.protection",
         "models.reviews", "models.issues", "models.labels", "models.checks", "models.statuses",
         "models.refs", "models.pulls", "models.git_data", "models.contents", "models.commits",
         "models.accounts", "models.repositories", "transport", "shallow", "events", "media",
         "schemas", "shapes", "store", "objects", "git", "ids", "times", "actors", "openapi", "lifecycle.openapi", "presets", "errors"]
HTTP_LAYER = ("app", "resources", "smart_http", "lifecycle.resources")


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
