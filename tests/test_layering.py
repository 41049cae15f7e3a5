"""Imports point down only (each test names a layer order; emulators/README.md, "Runtime layout"):
walked with ast, so a wrong import fails here."""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def imports_of(path):
    """The modules `path` imports; `from . import errors` counts as the package's `errors`."""
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-node.level])
                if node.module:
                    found.add(f"{package}.{node.module}")
                else:
                    found.update(f"{package}.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
    return found


def python_files(folder):
    return [p for p in (REPO / folder).rglob("*.py") if p.is_file()]


def assert_layers_point_down(folder, order):
    """Each module of `folder` ranked in `order` (by its dotted path below `folder`: `app`,
    `relay.watch`) imports only modules ranked below it; every module it imports from `folder`
    must be ranked."""
    package = folder.replace("/", ".") + "."
    for path in python_files(folder):
        name = ".".join(path.relative_to(REPO / folder).with_suffix("").parts)
        if name not in order:
            continue
        rank = order.index(name)
        for mod in imports_of(path):
            if mod.startswith(package):
                relative = mod[len(package):]
                target = max((o for o in order if relative == o or relative.startswith(o + ".")),
                             key=len, default=None)
                assert target is not None, f"{path.name} imports {relative}, which is not ranked"
                assert order.index(target) > rank, f"{name} imports {target}"


def test_spaces_and_emulators_never_import_each_other():
    for path in python_files("spaces"):
        assert not any(m.startswith("emulators") for m in imports_of(path)), path
    for path in python_files("emulators"):
        assert not any(m.startswith("spaces") for m in imports_of(path)), path


def test_shipped_code_imports_no_dev_helper_and_bench_and_testkit_never_import_tests():
    never = {"tests", "bench", "testkit"}
    forbidden = {"spaces": never, "emulators": never, "scripts": never, "cron": never,
                 "testkit": {"tests", "bench"}, "bench": {"tests"}}
    for folder, names in forbidden.items():
        for path in python_files(folder):
            tops = {(m or "").split(".")[0] for m in imports_of(path)}
            assert not tops & names, f"{path} imports {tops & names}"


def test_only_app_and_resources_import_falcon_and_only_schemas_import_marshmallow():
    for path in python_files("spaces/newos4"):
        mods = imports_of(path)
        if path.name not in ("app.py", "resources.py"):
            assert not any(m.split(".")[0] == "falcon" for m in mods), path
        if path.name != "schemas.py":
            assert not any(m.split(".")[0] == "marshmallow" for m in mods), path


def test_chat_layers_point_down():
    order = ["wsgi", "app", "resources", "schemas", "cli", "relay.access_cli",
             "relay.approvals_cli", "relay.cli", "relay.daemon", "relay.watch", "relay.passes",
             "relay.approvals",
             "relay.lost_runs", "relay.outcomes", "relay.polling", "relay.answers",
             "relay.run_events", "relay.state", "relay.hermes_client", "relay.access",
             "service", "ratelimit", "store", "files", "errors", "settings", "clock"]
    assert_layers_point_down("spaces/newos4", order)
    modules = {".".join(p.relative_to(REPO / "spaces/newos4").with_suffix("").parts)
               for p in python_files("spaces/newos4") if p.name != "__init__.py"}
    assert modules == set(order)  # a new module takes its place in the order


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


def module_graph(folders=("spaces", "emulators", "scripts", "cron"), files=("wsgi.py",)):
    """Every module of the project and what it imports, function-level imports included.

    `from package import name` points at `package.name` when that is a module of the project.
    """
    paths = [p for folder in folders for p in python_files(folder)] + [REPO / f for f in files]
    names = {}
    for path in paths:
        parts = path.relative_to(REPO).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in names.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name.split(".")
                    package = package[:len(package) - node.level + (1 if is_package else 0)]
                    base = ".".join(package + ([node.module] if node.module else []))
                for alias in node.names:
                    edges.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in names
                              else base)
        graph[name] = {edge for edge in edges if edge in names and edge != name}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def folders_in_cycles(root):
    """The import cycles among the modules of `root` once each folder below it is one node:
    a folder imported by a module beside it that imports, directly or through a third, a
    module that imports the folder (an arrow up). Names are dotted; [] when folders are
    layers."""
    package = root.replace("/", ".")
    depth = len(package.split("."))

    def node(name):  # a module of a folder below root stands for its folder
        parts = name.split(".")
        is_folder = (REPO / Path(*parts[:depth + 1])).is_dir() and len(parts) > depth
        return ".".join(parts[:depth + 1]) if is_folder else name

    graph = {}
    for name, targets in module_graph(folders=(root,), files=()).items():
        if name == package:
            continue
        edges = graph.setdefault(node(name), set())
        edges.update(node(t) for t in targets if t.startswith(package + ".") and t != package)
    for source, targets in graph.items():
        targets.discard(source)
        graph.setdefault(source, set())
    for targets in list(graph.values()):
        for target in targets:
            graph.setdefault(target, set())
    return cycles(graph)


def test_no_import_cycles_anywhere_function_level_imports_included():
    assert cycles(module_graph()) == []


def test_the_cycle_check_sees_a_cycle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_the_runtime_imports_nothing_from_emulators_outside_itself():
    for path in python_files("emulators/runtime"):
        for mod in imports_of(path):
            if mod.split(".")[0] == "emulators":
                assert mod.startswith("emulators.runtime"), f"{path.name} imports {mod}"


def test_runtime_layers_point_down():
    """The pipeline on top, the admin plane's route parts below it, then the Emulator and what
    it owns, the state in SQLite at the bottom; the fleet runs whole runtimes."""
    order = ["cli", "fleet.start", "fleet.guard", "fleet.control", "fleet.config", "fleet.store",
             "server", "app", "admin.app", "admin.controls", "admin.snapshots", "admin.state_api",
             "admin.credentials", "admin.webhooks", "admin.ui", "emulator", "webhooks",
             "instance", "settings", "bodies", "openapi", "service",
             "state.journal", "state.segments", "state.timeline", "state.faults", "state.clock",
             "state.credentials", "state.db", "state.writer", "state.records", "state.objects",
             "state.rng", "state.shapes", "names", "mount", "requestlog", "intercept", "errors",
             "stopping"]
    assert_layers_point_down("emulators/runtime", order)
    modules = {".".join(p.relative_to(REPO / "emulators/runtime").with_suffix("").parts)
               for p in python_files("emulators/runtime") if p.name != "__init__.py"}
    assert modules == set(order)  # a new module takes its place in the order
