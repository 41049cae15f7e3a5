"""Imports point down: app -> admin, the resources of runs/, openai_compat/ and management/ ->
their backends -> sessions and store (sse, upstream, canonical and errors below them all), the
shared resource plumbing below the folders; falcon and marshmallow stay in place."""
from tests.test_layering import folder_cycles, module_graph

PACKAGE = "emulators.hermes."
FALCON_OK = {"app", "resources", "runs.resources", "openai_compat.resources",
             "management.resources"}
MARSHMALLOW_OK = {"schemas"}
# What each module may import from this package (by module name below emulators.hermes).
ALLOWED = {
    "app": {"admin", "errors", "management.openapi", "management.resources", "openapi",
            "openai_compat.resources", "presets", "resources", "runs.resources", "settings"},
    "admin": {"management.catalog", "openai_compat.backend", "runs.backend"},
    "runs.resources": {"errors", "inputs", "resources", "runs.backend", "sse"},
    "openai_compat.resources": {"openai_compat.backend", "resources", "sse"},
    "management.resources": {"errors", "management.catalog", "management.chat",
                             "management.jobs", "openai_compat.resources", "resources", "sse"},
    "resources": {"errors", "sse"},
    "openai_compat.backend": {"canonical", "errors", "inputs", "sessions", "runs.backend",
                              "schemas", "sse", "store", "upstream"},
    "runs.backend": {"canonical", "errors", "inputs", "sessions", "runs.approvals", "schemas",
                     "sse", "store"},
    "runs.approvals": {"errors", "inputs", "schemas"},
    "management.chat": {"errors", "inputs", "sessions", "sse", "upstream"},
    "management.jobs": {"errors", "management.schedule", "sessions", "upstream"},
    "management.catalog": {"errors", "management.toolsets"},
    "sessions": {"canonical", "errors", "upstream"},
    "management.schedule": {"errors"},
    "management.toolsets": set(), "management.openapi": set(),
    "inputs": {"canonical", "errors"},
    "sse": {"upstream"}, "upstream": set(),
    "presets": {"runs.backend"},
    "schemas": {"errors"},
    "openapi": {"management.openapi"},
    "store": set(), "canonical": set(), "errors": set(), "settings": set(),
    "": {"app"}, "runs": set(), "openai_compat": set(), "management": set(),
}


def test_every_module_imports_only_downwards():
    graph = module_graph(folders=("emulators/hermes",), files=())
    assert {name[len(PACKAGE):] if name != PACKAGE[:-1] else "" for name in graph} == set(ALLOWED)
    for name, targets in graph.items():
        short = name[len(PACKAGE):] if name != PACKAGE[:-1] else ""
        inside = {t[len(PACKAGE):] for t in targets if t.startswith(PACKAGE)}
        assert inside <= ALLOWED[short], f"{short} imports {inside - ALLOWED[short]}"


def test_no_sub_folder_sits_in_a_loop_with_the_modules_beside_it():
    # the shared resource plumbing builds no backend: runs/, openai_compat/ and management/
    # import it, never the other way round
    assert folder_cycles("emulators/hermes") == []


def test_falcon_and_marshmallow_stay_in_their_modules_and_only_the_runtime_is_imported():
    from tests.test_layering import REPO, imports_of
    for path in (REPO / "emulators" / "hermes").rglob("*.py"):
        parts = path.relative_to(REPO / "emulators" / "hermes").with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for target in imports_of(path):
            top = (target or "").split(".")[0]
            if top == "emulators":
                assert target.startswith(("emulators.runtime", "emulators.hermes")), name
            assert top != "falcon" or name in FALCON_OK, f"{name} imports falcon"
            assert top != "marshmallow" or name in MARSHMALLOW_OK, f"{name} imports marshmallow"
            assert top != "spaces", f"{name} imports the chat service"
