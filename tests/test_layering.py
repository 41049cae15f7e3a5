"""Imports point down only (each test names a layer order; emulators/README.md, "Layout"):
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
             "relay.approvals_cli", "relay.cli", "relay.cron", "relay.daemon", "relay.watch",
             "relay.passes", "relay.answers", "relay.approvals",
             "relay.lost_runs", "relay.outcomes", "relay.polling",
             "relay.run_events", "relay.state", "relay.hermes_client", "relay.access",
             "relay.modes", "relay.schemas", "relay.records", "service", "ratelimit", "store",
             "files", "errors", "settings", "clock", "arguments", "launch"]
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


def packages_of(graph):
    """The packages among module_graph's names (a name other names stand under)."""
    return {name for name in graph if any(other.startswith(f"{name}.") for other in graph)}


def folder_graph(graph, package):
    """The imports between what stands directly in `package` (a dotted name): each module
    beside the others is a node, each sub-folder one node (`runs/`, all its modules), the
    package's own `__init__` one more. `graph` is module_graph's; imports inside a sub-folder
    are left out."""
    folders = packages_of(graph)

    def node(name):
        if name == package:
            return "__init__"
        first = name[len(package) + 1:].split(".")[0]
        return f"{first}/" if f"{package}.{first}" in folders else first

    def here(name):
        return name == package or name.startswith(f"{package}.")
    nodes = {}
    for name in filter(here, graph):
        nodes.setdefault(node(name), set()).update(node(t) for t in graph[name] if here(t))
    return {name: targets - {name} for name, targets in nodes.items()}


def folder_cycles(folder):
    """The loops that run through a sub-folder, at every level of `folder` (a path from the
    repository's root): a sub-folder imported by a module beside it that imports, directly or
    through a third, a module that imports it. Function-level imports count."""
    graph = module_graph(folders=(folder,), files=())
    return [[package, loop]
            for package in sorted(packages_of(graph) | {folder.replace("/", ".")} & set(graph))
            for loop in cycles(folder_graph(graph, package))
            if any(name.endswith("/") for name in loop)]


def test_the_folder_check_sees_a_sub_folder_in_a_loop_directly_or_through_a_third():
    graph = {"p": set(), "p.app": {"p.resources", "p.runs.resources"},
             "p.resources": {"p.runs.backend"}, "p.runs": set(),
             "p.runs.resources": {"p.resources", "p.runs.backend"}, "p.runs.backend": set()}
    assert cycles(folder_graph(graph, "p")) == [["resources", "runs/"]]
    graph["p.resources"] = {"p.errors"}  # the resource builds no backend: a layer again
    graph["p.errors"] = set()
    assert cycles(folder_graph(graph, "p")) == []
    graph.update({"p.jobs": set(), "p.jobs.resources": {"p.resources"},
                  "p.errors": {"p.jobs.resources"}})  # jobs/ -> resources -> errors -> jobs/
    assert cycles(folder_graph(graph, "p")) == [["errors", "jobs/", "resources"]]


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
             "state.credentials", "state.quotas", "state.db", "state.writer", "state.records",
             "state.objects", "state.rng", "state.shapes", "names", "mount", "requestlog",
             "intercept", "errors", "stopping"]
    assert_layers_point_down("emulators/runtime", order)
    modules = {".".join(p.relative_to(REPO / "emulators/runtime").with_suffix("").parts)
               for p in python_files("emulators/runtime") if p.name != "__init__.py"}
    assert modules == set(order)  # a new module takes its place in the order
