"""Imports point down: app -> resources -> compat -> models -> store (sse and upstream below
compat); falcon and marshmallow stay in place."""
import ast
from pathlib import Path

import emulators.hermes

HERE = Path(emulators.hermes.__file__).parent
FALCON_OK = {"app", "resources", "session_resources"}
MARSHMALLOW_OK = {"schemas"}
# What each module may import from this package (by module name).
ALLOWED = {
    "app": {"resources", "session_resources", "errors", "models", "compat", "openapi",
            "openapi_sessions", "presets", "settings", "catalog"},
    "resources": {"errors", "models", "compat", "sse", "inputs"},
    "session_resources": {"resources", "errors", "compat", "sessionchat", "jobs", "catalog",
                          "sse"},
    "catalog": {"errors", "toolsets"}, "toolsets": set(),
    "sessionchat": {"errors", "inputs", "sessions", "sse", "upstream"},
    "compat": {"canonical", "schemas", "errors", "store", "models", "inputs", "sessions", "sse",
               "upstream"},
    "sessions": {"canonical", "errors", "upstream"},
    "jobs": {"errors", "sessions", "schedule", "upstream"},
    "schedule": {"errors"},
    "models": {"approvals", "canonical", "inputs", "schemas", "errors", "store", "sessions",
               "sse"},
    "approvals": {"errors", "inputs", "schemas"},
    "inputs": {"canonical", "errors"},
    "sse": {"upstream"}, "upstream": set(),
    "presets": {"models"},
    "schemas": {"errors"},
    "store": set(), "canonical": set(), "errors": set(), "openapi": {"openapi_sessions"},
    "openapi_sessions": set(), "settings": set(),
    "__init__": {"app"},
}


def imports_of(path):
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ("." * node.level) + (node.module or "")
            found |= {base} if node.module else {"." + alias.name for alias in node.names}
    return found


def test_every_module_imports_only_downwards():
    for path in HERE.glob("*.py"):
        name = path.stem
        for target in imports_of(path):
            top = target.split(".")[0]
            if target.startswith("."):
                assert target[1:].split(".")[0] in ALLOWED[name], f"{name} imports {target}"
            elif top == "emulators":
                assert target.startswith("emulators.runtime"), f"{name} imports {target}"
            assert top != "falcon" or name in FALCON_OK, f"{name} imports falcon"
            assert top != "marshmallow" or name in MARSHMALLOW_OK, f"{name} imports marshmallow"
            assert top != "spaces", f"{name} imports the chat service"
