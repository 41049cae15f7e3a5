"""How every field of GitHub's schema is resolved: by the object it is asked of, or, when the
emulator does not model it, as an absent value the schema allows.

Objects the resolvers return are plain Python: a dict answers a field by its schema name, any
other object by the field's snake_case attribute (`nameWithOwner` -> `name_with_owner`), called
with the field's arguments (snake_case too) when it is a method. An abstract type (`Node`,
`Actor`, a union) learns its concrete type from the object's `typename`.
"""
import functools
import re

import graphql

from .errors import Unmodelled

MISSING = object()
EMPTY_PAGE = {"hasNextPage": False, "hasPreviousPage": False, "startCursor": None,
              "endCursor": None}


@functools.lru_cache(maxsize=4096)
def snake(name):
    """`nameWithOwner` -> `name_with_owner` (schema names are camelCase)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def field(source, info, **args):
    """Resolve a field of `source` (graphql-core's `field_resolver` for the whole schema), once
    the request's context allows it (`guard`: an App's credential and its permissions)."""
    info.context.guard(source, info)
    if isinstance(source, dict):
        value = source.get(info.field_name, MISSING)
    else:
        value = getattr(source, snake(info.field_name), MISSING)
    if value is MISSING:
        return unmodelled(info)
    if callable(value):
        return value(info, **{snake(key): arg for key, arg in args.items()})
    return value


def from_rest(node, rest, *same, **renamed):
    """Set fields of a GraphQL object to values of REST's shape as they are: each of `same`
    from the key of its own name, each of `renamed` (field=key) from the key it names."""
    for name in same:
        setattr(node, name, rest[name])
    for name, key in renamed.items():
        setattr(node, name, rest[key])


def unmodelled(info):
    """What a field the emulator does not model answers: null where the schema allows it, an
    empty list or connection where it does not, else an error that says so."""
    wanted = info.return_type
    if not graphql.is_non_null_type(wanted):
        return None
    inner = wanted.of_type
    if graphql.is_list_type(inner):
        return []
    if graphql.is_object_type(inner) and inner.name.endswith("Connection"):
        return {"nodes": [], "edges": [], "totalCount": 0, "pageInfo": EMPTY_PAGE}
    raise Unmodelled(f"Mockingbird does not model {info.parent_type.name}.{info.field_name}")


def type_of(value, info, abstract_type):
    """The concrete type name of an object returned for an interface or union field."""
    if isinstance(value, dict):
        return value.get("__typename")
    return getattr(value, "typename", None)
