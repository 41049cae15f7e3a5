"""The GitHub emulator's layers point down (app -> resources -> models -> store), per ast."""
from pathlib import Path

from tests.test_layering import imports_of

FOLDER = Path(__file__).resolve().parents[3] / "emulators" / "github"
ORDER = ["app", "resources", "context", "models", "schemas", "store", "openapi", "presets",
         "errors"]


def test_github_layers_point_down_and_only_the_http_layer_imports_falcon():
    for path in FOLDER.glob("*.py"):
        if path.stem not in ORDER:
            continue
        rank = ORDER.index(path.stem)
        for module in imports_of(path):
            if module.startswith("emulators.github."):
                target = module.split(".")[2]
                assert ORDER.index(target) > rank, f"{path.name} imports {target}"
            if path.stem not in ("app", "resources"):
                assert module.split(".")[0] not in ("falcon", "marshmallow"), path.name
