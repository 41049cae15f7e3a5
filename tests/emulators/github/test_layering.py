"""The GitHub emulator's layers point down (app -> resources -> models -> store), per ast."""
from pathlib import Path

from tests.test_layering import assert_layers_point_down, imports_of

FOLDER = Path(__file__).resolve().parents[3] / "emulators" / "github"
ORDER = ["app", "admin", "smart_http", "lifecycle", "resources", "context", "models", "merges",
         "protection", "reviews", "issues", "checks", "statuses", "refs", "pulls", "gitdata",
         "contents", "commits", "transport", "events", "media", "schemas", "shapes", "store",
         "objects", "git", "ids", "actors", "openapi", "presets", "errors"]


def test_github_layers_point_down_and_only_the_http_layer_imports_falcon():
    assert_layers_point_down("emulators/github", ORDER)
    assert {path.stem for path in FOLDER.glob("*.py")} - {"__init__"} == set(ORDER)
    for path in FOLDER.glob("*.py"):
        http_layer = ("app", "resources", "smart_http", "lifecycle")
        if path.stem in ORDER and path.stem not in http_layer:
            for module in imports_of(path):
                assert module.split(".")[0] not in ("falcon", "marshmallow"), path.name
