"""Check emulator answers against GitHub's own response schemas (openapi/responses.json).

The schemas are GitHub's OpenAPI 3.0 description, so `nullable: true` is rewritten to JSON
Schema's `type: [..., "null"]` before `jsonschema` sees them; `uri` and `date-time` formats are
checked with the standard library (absolute URL with a host; an ISO 8601 instant in GitHub's
form, UTC to the second).
"""
import copy
import json
import re
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema

SPEC = Path(__file__).resolve().parent / "openapi" / "responses.json"
FORMATS = jsonschema.FormatChecker(formats=())

# The ref listing (`git/refs[/{prefix}]`) is not in GitHub's current description; GitHub answers
# it with the shapes of `git/list-matching-refs` (an array) or `git/get-ref` (an exact match).
_MATCHING = "GET /repos/{owner}/{repo}/git/matching-refs/{ref}"
_LISTING = {"GET /repos/{owner}/{repo}/git/refs": _MATCHING,
            "GET /repos/{owner}/{repo}/git/refs/{ref}": _MATCHING,
            "GET /repos/{owner}/{repo}/git/matching-refs": _MATCHING}
_GET_REF = "GET /repos/{owner}/{repo}/git/ref/{ref}"
_CONVERTER = re.compile(r"\{(\w+):[^}]*\}")
GITHUB_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z")  # 2011-01-26T19:01:12Z


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value):
    # an instant, written as GitHub writes every time it answers: UTC, to the second
    return not isinstance(value, str) or bool(datetime.fromisoformat(value)
                                              and GITHUB_TIME.match(value))


@FORMATS.checks("uri")
def _uri(value):
    if not isinstance(value, str):
        return True
    parts = urlsplit(value)
    return bool(parts.scheme in ("http", "https") and parts.netloc)


def _json_schema(node):
    """Rewrite OpenAPI 3.0 `nullable` into JSON Schema, recursively (a copy)."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "example"}
    if [member.get("title") for member in out.get("allOf", ())] == ["Simple User", "Enterprise"]:
        # an installation's `account` is a user or an enterprise: GitHub's description joins
        # the two with allOf, which no account could satisfy (githubkit reads it as a union)
        out["anyOf"] = out.pop("allOf")
    if out.pop("nullable", False):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        if not {"type", "enum"} & set(out):
            out = {"anyOf": [out, {"type": "null"}]}
    if "oneOf" in out:  # nullable members all accept null: one of them is enough
        out["anyOf"] = out.pop("oneOf")
    return out


class Schemas:
    """GitHub's response schemas by `METHOD /template` and status."""

    def __init__(self, path=SPEC):
        document = json.loads(path.read_text())
        self.operations = {key: {status: _json_schema(schema)
                                 for status, schema in op["responses"].items()}
                           for key, op in document["operations"].items()}
        self.basic_error = self.operations["GET /repos/{owner}/{repo}"]["404"]

    def schema_for(self, method, template, status, body, media=None):
        """Return the schema an answer must satisfy, or None when GitHub documents none.

        GitHub's schemas describe the default media type; under `text` or `html` a pull
        request carries `body_text` or `body_html` in place of the required `body`.
        """
        schema = self._documented(method, template, status, body)
        if schema is not None and media in ("text", "html"):
            schema = copy.deepcopy(schema)
            target = schema.get("items", schema)
            target["required"] = [name for name in target.get("required", ()) if name != "body"]
        return schema

    def _documented(self, method, template, status, body):
        if template is None:  # the router's generic 404
            return self.basic_error
        key = method + " " + _CONVERTER.sub(r"{\1}", template)
        if key == "GET /repos/{owner}/{repo}/git/refs/{ref}" and isinstance(body, dict) \
                and status == 200:
            key = _GET_REF
        key = _LISTING.get(key, key)
        responses = self.operations.get(key, {})
        if str(status) in responses:
            return responses[str(status)]
        if isinstance(body, dict) and "documentation_url" in body:
            return self.basic_error  # an undocumented status in GitHub's error envelope
        return None

    def problems(self, schema, body):
        """Return the validation errors of `body` (an empty list when it conforms)."""
        validator = jsonschema.Draft4Validator(schema, format_checker=FORMATS)
        return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
                for e in validator.iter_errors(copy.deepcopy(body))]


SCHEMAS = Schemas()
