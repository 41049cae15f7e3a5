"""Imports point down only (STYLE.md): walked with ast, so a wrong import fails here."""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def imports_of(path):
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-node.level])
                found.add(f"{package}.{node.module}" if node.module else package)
            else:
                found.add(node.module)
    return found


def python_files(folder):
    return [p for p in (REPO / folder).rglob("*.py") if p.is_file()]


def assert_layers_point_down(folder, order):
    """Each module of `folder` ranked in `order` imports only modules ranked below it."""
    package = folder.replace("/", ".") + "."
    for path in python_files(folder):
        if path.stem not in order:
            continue
        rank = order.index(path.stem)
        for mod in imports_of(path):
            if mod.startswith(package):
                target = mod[len(package):].split(".")[0]
                assert order.index(target) > rank, f"{path.name} imports {target}"


def test_spaces_and_emulators_never_import_each_other():
    for path in python_files("spaces"):
        assert not any(m.startswith("emulators") for m in imports_of(path)), path
    for path in python_files("emulators"):
        assert not any(m.startswith("spaces") for m in imports_of(path)), path


def test_only_app_and_resources_import_falcon_and_only_schemas_import_marshmallow():
    for path in python_files("spaces/newos4"):
        mods = imports_of(path)
        if path.name not in ("app.py", "resources.py"):
            assert not any(m.split(".")[0] == "falcon" for m in mods), path
        if path.name != "schemas.py":
            assert not any(m.split(".")[0] == "marshmallow" for m in mods), path


def test_chat_layers_point_down():
    order = ["app", "resources", "schemas", "watch", "relay", "service", "ratelimit", "store",
             "hermes_client", "files", "errors", "settings", "clock"]
    assert_layers_point_down("spaces/newos4", order)


def test_host_tools_call_the_service_never_the_http_layer():
    for path in list(python_files("scripts")) + list(python_files("cron")):
        for mod in imports_of(path):
            assert mod not in ("spaces.newos4.app", "spaces.newos4.resources"), path
            assert not (mod or "").startswith("falcon"), path


def test_emulator_services_never_import_each_other_and_runtime_imports_no_service():
    services = [p.name for p in (REPO / "emulators").iterdir()
                if p.is_dir() and p.name not in ("runtime", "__pycache__")]
    for path in python_files("emulators/runtime"):
        for mod in imports_of(path):
            assert not any(mod.startswith(f"emulators.{s}") for s in services), path
    for service in services:
        for path in python_files(f"emulators/{service}"):
            for mod in imports_of(path):
                others = [s for s in services if s != service]
                assert not any(mod.startswith(f"emulators.{o}") for o in others), path
