"""Merges: `pulls/merge` and `repos/merge`."""
from ..models.merges import METHODS
from .base import Body, Value, check, invalid, load, missing, one_of, text


class _MergePull(Body):
    merge_method = text(invalid("merge_method"), load_default="merge",
                        validate=one_of(METHODS, invalid("merge_method")))
    commit_title = text(invalid("commit_title"), allow_none=True)
    commit_message = text(invalid("commit_message"), allow_none=True)
    sha = text(invalid("sha"), allow_none=True)


class _MergeBranches(Body):
    base = text(missing("base", "Merge"), required=True,
                validate=check(bool, missing("base", "Merge")))
    head = text(missing("head", "Merge"), required=True,
                validate=check(bool, missing("head", "Merge")))
    commit_message = Value(None, allow_none=True)


MERGE_PULL, MERGE_BRANCHES = _MergePull(), _MergeBranches()


def merge_pull(body):
    """`{merge_method, commit_title, commit_message, sha}` of a PR merge."""
    return load(MERGE_PULL, body)


def merge_branches(body):
    """`{base, head, commit_message}` of a branch merge."""
    return load(MERGE_BRANCHES, body)
