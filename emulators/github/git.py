"""Git's rules the emulator applies: ref names (a subset of `git check-ref-format`) and
commit ancestry.

Pure functions over a commit graph `{sha: [parent shas]}`; no storage, no HTTP.
"""
import re
from collections import deque

SHA_ANY_CASE = re.compile(r"^[a-fA-F0-9]{40}\Z")
SHA_LOWER = re.compile(r"^[a-f0-9]{40}\Z")

# Characters Git refuses anywhere in a ref name
_BAD_REF_CHARS = set("~^:?*[\\") | {chr(c) for c in range(33)} | {chr(127)}


def valid_ref_name(name):
    """Tell whether `name` is `refs/<a>/<b>...`: no empty component, none starting with `.` or
    ending in `.lock`, no `..`, `@{`, trailing `.` or refused character."""
    if not isinstance(name, str) or not name.startswith("refs/"):
        return False
    parts = name.split("/")
    if len(parts) < 3:
        return False
    for part in parts:
        if not part or part.startswith(".") or part.endswith(".lock"):
            return False
    return not (any(c in _BAD_REF_CHARS for c in name) or ".." in name or "@{" in name
                or name.endswith("."))


def ancestry(graph, sha):
    """Yield `sha`, then the commits reachable from it by parent links, nearest first
    (breadth first), each once."""
    seen, queue = {sha}, deque([sha])
    while queue:
        sha = queue.popleft()
        yield sha
        for parent in graph.get(sha, ()):
            if parent not in seen:
                seen.add(parent)
                queue.append(parent)


def is_ancestor(graph, ancestor, descendant):
    """Tell whether `ancestor` is reachable from `descendant` by parent links (equal counts)."""
    return ancestor in graph and ancestor in ancestry(graph, descendant)


def reachable(graph, sha):
    """Return every commit reachable from `sha` (itself included) by parent links."""
    seen, stack = {sha}, [sha]
    while stack:
        for parent in graph.get(stack.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                stack.append(parent)
    return seen


def new_commits(graph, tip, known):
    """Return the commits reachable from `tip` and not in `known`, parents before children."""
    order, seen, stack = [], set(known), [(tip, False)]
    while stack:
        sha, expanded = stack.pop()
        if expanded:
            order.append(sha)
            continue
        if sha in seen:
            continue
        seen.add(sha)
        stack.append((sha, True))
        stack.extend((parent, False) for parent in graph.get(sha, ()) if parent not in seen)
    return order


def has_cycle(graph):
    """Tell whether the parent links loop back on themselves."""
    # Kahn's algorithm, iterative, so 100 000-commit chains are fine
    children_count = {sha: 0 for sha in graph}
    for parents in graph.values():
        for parent in parents:
            children_count[parent] += 1
    ready = [sha for sha, count in children_count.items() if count == 0]
    visited = 0
    while ready:
        sha = ready.pop()
        visited += 1
        for parent in graph[sha]:
            children_count[parent] -= 1
            if children_count[parent] == 0:
                ready.append(parent)
    return visited != len(graph)


def bad_branch_name(name):
    """Tell whether `name` cannot be a seeded branch (empty, NUL or white space)."""
    return not isinstance(name, str) or not name or "\0" in name or any(c.isspace() for c in name)
