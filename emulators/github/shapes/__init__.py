"""GitHub's JSON shapes, whole: accounts, repositories, references, pull requests, git objects,
CI results, the conversation and branch protection.

Every object carries every property GitHub's OpenAPI description marks required (checked by the
tests against that description), with synthetic but coherent values: URLs built from the base URL
the client used, counts taken from the emulator's state, absent features as GitHub reports them
(no license, no milestone, zero stars). Pure functions over plain dicts; no storage, no HTTP.
"""
from .accounts import user, web
from .ci import app, check_run, check_suite, status
from .commits import (base64_lines, blob, commit, content_item, diff_entry, git_commit,
                      synthetic_commit, tree)
from .conversation import comment, issue, label, review
from .protection import branch_view, protection
from .repos import branch, pull, pull_counts, reference, repository

__all__ = ["app", "base64_lines", "blob", "branch", "branch_view", "check_run", "check_suite",
           "comment", "commit", "content_item", "diff_entry", "git_commit", "issue", "label",
           "protection", "pull", "pull_counts", "reference", "repository", "review", "status",
           "synthetic_commit", "tree", "user", "web"]
