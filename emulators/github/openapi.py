"""OpenAPI 3 document of the GitHub provider routes (served at `/__admin/openapi.json`): a
path per route of the operation table (operations.py), each operation in its row's form.

`{ref}` parameters carry a slash-bearing tail (`heads/topic/nested`), as on GitHub, flagged
`x-slash-bearing: true`: the runtime's operation matcher lets such a parameter span segments,
so fault rules by operationId match nested refs too.
"""
import re

from .errors import API_VERSION
from .operations import GIT, GRAPHQL, OBJECT, OPERATIONS, RATE_LIMIT, RAW, TYPED
from .ratelimits.openapi import ANSWER as RATE_LIMIT_ANSWER, FAILURES as RATE_LIMIT_FAILURES

_VERSION = {"name": "X-GitHub-Api-Version", "in": "header", "required": False,
            "schema": {"type": "string", "enum": [API_VERSION]}}
_STRING = {"type": "string"}
# the typed form's path parameters that are not plain strings
_TYPED_PATH = {"pull_number": {"type": "integer", "minimum": 1}}
_PAGE = {"schema": {"type": "integer", "minimum": 1}}
_QUERY = {  # query parameter: what the document says of it beside its name
    "per_page": _PAGE, "page": _PAGE,
    "state": {"schema": {"type": "string", "enum": ["open", "closed", "all"]}},
    "sort": {"schema": {"type": "string", "enum": ["created", "updated"]}},
    "direction": {"schema": {"type": "string", "enum": ["asc", "desc"]}},
    **{name: {"schema": _STRING} for name in ("head", "base", "ref", "sha", "path", "recursive")},
    "service": {"required": True, "schema": {"type": "string", "enum": [
        "git-upload-pack", "git-receive-pack"]}},
}


def _json(ref):
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}


def _answer(description, ref=None):
    out = {"description": description}
    if ref:
        out["content"] = _json(ref)
    return out


def _path_parameters(path, types):
    """The path parameters of falcon's template `path`: a `{name:path}` one slash-bearing, the
    others strings unless `types` names their schema."""
    out = []
    for name, converter in re.findall(r"\{(\w+)(:path)?\}", path):
        if converter:
            out.append({"name": name, "in": "path", "required": True, "x-slash-bearing": True,
                        "schema": {"type": "string", "minLength": 1}})
        else:
            out.append({"name": name, "in": "path", "required": True,
                        "schema": types.get(name, _STRING)})
    return out


def _parameters(row, types=None):
    return [*_path_parameters(row.path, types or {}),
            *({"name": name, "in": "query", **_QUERY[name]} for name in row.query.split())]


def _head(row):
    return {"operationId": row.id, "summary": row.summary}


# the typed form: the first routes, their answers the document's own schemas
_ERRORS = {"404": _answer("Not Found", "BasicError"),
           "409": _answer("Git Repository is empty", "BasicError"),
           "422": _answer("Validation failed", "ValidationError"),
           "501": _answer("Not modelled by the emulator", "Unsupported")}


def _typed(row):
    status, _, ref = row.answer.partition(" ")
    op = {**_head(row), "parameters": [*_parameters(row, _TYPED_PATH), _VERSION],
          "responses": {status: _answer("Success", ref), **_ERRORS}}
    if row.body:
        op["requestBody"] = {"required": False, "content": _json(row.body)}
    return op


# the object form: answers are GitHub's whole objects (the tests hold them to GitHub's own
# schemas); the document names each operation for the runtime (journal, fault rules)
_BASIC = {"content": _json("BasicError")}
_OBJECT_ERRORS = {
    "404": {"description": "Not Found", **_BASIC},
    "405": {"description": "Not allowed (protection or conflicts refuse a merge)", **_BASIC},
    "409": {"description": "Conflict (a stale head sha, a merge conflict)", **_BASIC},
    "422": {"description": "Validation failed", "content": _json("ValidationError")}}
_OBJECT = {"application/json": {"schema": {"type": "object"}}}


def _object(row):
    status = row.answer
    op = {**_head(row), "parameters": [*_parameters(row), _VERSION],
          "responses": {status: {"description": "Success",
                                 **({} if status == "204" else {"content": _OBJECT})},
                        **_OBJECT_ERRORS}}
    if row.body:
        op["requestBody"] = {"required": False, "content": _OBJECT}
    return op


def _outside(success, failures):
    """A form outside the REST API (git's protocol, a file's bytes): named so journal, faults
    and metrics see pushes, fetches and downloads."""
    def form(row):
        return {**_head(row), "x-mockingbird-git": True, "parameters": _parameters(row),
                "responses": {row.answer: {"description": success}, **failures}}
    return form


def _graphql(row):
    # the runtime names each request by its operation (`graphql/query/<Name>`,
    # `graphql/mutation/<Name>`), and `/api/graphql` is matched as `/graphql`
    return {**_head(row), "requestBody": {"required": True, "content": _json("Object")},
            "responses": {row.answer: _answer("data and errors", "Object"),
                          "401": _answer("No credential", "BasicError")}}


FORMS = {
    TYPED: _typed, OBJECT: _object,
    GIT: _outside("git protocol data", {
        "401": {"description": "credentials needed (Basic, x-access-token)"},
        "404": {"description": "Repository not found"}}),
    RAW: _outside("the file", {"404": {"description": "Not Found"}}),
    GRAPHQL: _graphql,
    RATE_LIMIT: lambda row: {**_head(row), "responses": {row.answer: RATE_LIMIT_ANSWER,
                                                         **RATE_LIMIT_FAILURES}},
}


def paths(operations):
    """{OpenAPI path: {method: operation}} of the operation table's rows, in their order."""
    out = {}
    for row in operations:
        template = re.sub(r":path\}", "}", row.path)
        out.setdefault(template, {})[row.method.lower()] = FORMS[row.form](row)
    return out


_OWNER = {"type": "object", "properties": {
    "login": {"type": "string"}, "id": {"type": "integer"}, "node_id": {"type": "string"},
    "type": {"type": "string"}}}

DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "GitHub REST emulator", "version": API_VERSION,
             "description": "Repositories, refs and same-repository pull requests."},
    "paths": paths(OPERATIONS),
    "components": {"schemas": {
        "BasicError": {"type": "object", "required": ["message"], "properties": {
            "message": {"type": "string"}, "documentation_url": {"type": "string"},
            "status": {"type": "string"}}},
        "ValidationError": {"type": "object", "required": ["message", "errors"], "properties": {
            "message": {"type": "string"}, "errors": {"type": "array"},
            "documentation_url": {"type": "string"}, "status": {"type": "string"}}},
        "Unsupported": {"type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}}},
        "Repository": {"type": "object", "required": [
            "id", "node_id", "name", "full_name", "owner", "private", "fork", "default_branch",
            "url", "html_url", "created_at", "updated_at"], "properties": {
            "id": {"type": "integer"}, "node_id": {"type": "string"}, "name": {"type": "string"},
            "full_name": {"type": "string"}, "owner": _OWNER, "private": {"type": "boolean"},
            "fork": {"type": "boolean"}, "default_branch": {"type": "string"},
            "url": {"type": "string"}, "html_url": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "updated_at": {"type": "string", "format": "date-time"}}},
        "Reference": {"type": "object", "required": ["ref", "node_id", "url", "object"],
                      "properties": {
            "ref": {"type": "string"}, "node_id": {"type": "string"}, "url": {"type": "string"},
            "object": {"type": "object", "properties": {
                "type": {"type": "string"}, "sha": {"type": "string"},
                "url": {"type": "string"}}}}},
        "References": {"type": "array", "items": {"$ref": "#/components/schemas/Reference"}},
        "PullBranch": {"type": "object", "required": ["label", "ref", "sha", "repo"],
                       "properties": {
            "label": {"type": "string"}, "ref": {"type": "string"}, "sha": {"type": "string"},
            "repo": {"$ref": "#/components/schemas/Repository"}}},
        "PullRequest": {"type": "object", "required": [
            "id", "node_id", "number", "url", "html_url", "state", "title", "body", "draft",
            "created_at", "updated_at", "closed_at", "merged", "merged_at", "mergeable",
            "merge_commit_sha", "maintainer_can_modify", "head", "base"], "properties": {
            "id": {"type": "integer"}, "node_id": {"type": "string"},
            "number": {"type": "integer"}, "url": {"type": "string"},
            "html_url": {"type": "string"}, "state": {"type": "string", "enum": ["open", "closed"]},
            "title": {"type": "string"}, "body": {"type": "string", "nullable": True},
            "draft": {"type": "boolean"}, "created_at": {"type": "string"},
            "updated_at": {"type": "string"}, "closed_at": {"type": "string", "nullable": True},
            "merged": {"type": "boolean"}, "maintainer_can_modify": {"type": "boolean"},
            "head": {"$ref": "#/components/schemas/PullBranch"},
            "base": {"$ref": "#/components/schemas/PullBranch"}}},
        "PullRequests": {"type": "array", "items": {"$ref": "#/components/schemas/PullRequest"}},
        "CreateRef": {"type": "object", "required": ["ref", "sha"], "properties": {
            "ref": {"type": "string"}, "sha": {"type": "string"}}},
        "UpdateRef": {"type": "object", "required": ["sha"], "properties": {
            "sha": {"type": "string"}, "force": {"type": "boolean"}}},
        "CreatePull": {"type": "object", "required": ["title", "head", "base"], "properties": {
            "title": {"type": "string"}, "head": {"type": "string"}, "base": {"type": "string"},
            "body": {"type": "string"}, "draft": {"type": "boolean"},
            "maintainer_can_modify": {"type": "boolean"}}},
        "UpdatePull": {"type": "object", "properties": {
            "title": {"type": "string"}, "body": {"type": "string"},
            "state": {"type": "string", "enum": ["open", "closed"]}, "base": {"type": "string"},
            "maintainer_can_modify": {"type": "boolean"}}},
        "Object": {"type": "object"},
        "Objects": {"type": "array", "items": {"type": "object"}},
    }},
}
