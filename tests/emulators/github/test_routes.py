"""The operation table (operations.py), routed by app.py, is the one list of what the emulator
serves: it names the operation of each method a resource answers (and a resource answers
exactly those), and the OpenAPI document (the runtime's journal and fault rules match on it)
and the README's route table list exactly those operations, so a new route cannot be served
undocumented."""
import re
from pathlib import Path

from emulators.github import app, errors
from emulators.github.openapi import DOCUMENT
from emulators.github.resources.commits import CommitPaths

README = Path(__file__).resolve().parents[3] / "emulators" / "github" / "README.md"
MOCK_ONLY = {"git/info-refs", "git/upload-pack", "git/receive-pack", "contents/raw"}
GRAPHQL = "graphql"  # the GraphQL route: not REST, its refusals link GraphQL's documentation


def served():
    """{operationId: {(METHOD, OpenAPI path)}} of every route app.py serves."""
    found = {}
    routes = [*app.ROUTES, *((path, CommitPaths.TAILS[tail], {"GET": operation})
                             for tail, (path, operation) in CommitPaths.BELOW.items())]
    for path, resource, operations in routes:
        responders = {name[len("on_"):].upper() for name in vars(resource)
                      if name.startswith("on_")}
        assert responders == set(operations), f"{resource.__name__} answers " \
            f"{sorted(responders)}, the route table names {sorted(operations)}"
        for method, operation in operations.items():
            template = re.sub(r":path}", "}", path)
            found.setdefault(operation, set()).add((method, template))
    return found


def readme_routes():
    """{operationId: the methods its README row names} of the README's route table."""
    text = README.read_text()
    table = text.split("\n## Routes\n", 1)[1].split("\n#", 1)[0]
    found = {}
    for row in table.splitlines():
        cells = row.split(" | ")
        if not row.startswith("| `") or len(cells) < 3:
            continue
        methods = set(re.findall(r"\b(GET|POST|PUT|PATCH|DELETE)\b", cells[1]))
        for operation in re.findall(r"`([a-z-]+/[a-z-]+|graphql)`", cells[0]):
            found[operation] = methods
    return found


def test_each_served_operation_is_in_the_openapi_document_under_its_method_and_path():
    for operation, routes in served().items():
        for method, path in routes:
            assert DOCUMENT["paths"][path][method.lower()]["operationId"] == operation


def test_the_readme_route_table_lists_exactly_the_served_operations():
    documented, routes = readme_routes(), served()
    assert set(documented) == set(routes)
    for operation, methods in routes.items():
        assert {method for method, _path in methods} <= documented[operation], operation


def test_each_operation_an_error_can_name_links_its_documentation_page():
    for operation in set(served()) - MOCK_ONLY - {GRAPHQL}:
        assert errors.DOCS[operation].startswith("https://docs.github.com/rest/"), operation
    assert errors.RequiresAuthentication().documentation_url.startswith(errors.GRAPHQL_DOCS)
