"""Shallow fetches as git's own upload-pack answers them (protocol v0, upload-pack.c and
shallow.c): the client's new shallow boundary and the commits that stop being shallow, for
`deepen <n>` (also with the `deepen-relative` capability: `git fetch --deepen`), `deepen-since
<time>` and `deepen-not <ref>`.

dulwich reads only `deepen <n>`, and a request carrying `shallow` lines without a deepen (a
plain fetch into a shallow clone) fails in it, so transport.py takes every shallow request
out of the body dulwich sees and answers it here. A push from a shallow clone names its
shallow commits too; `refused_updates` is receive-pack's rule for it. No HTTP, no storage of
its own.
"""
from dulwich.object_store import find_shallow
from dulwich.objects import Commit, Tag, valid_hexsha

# git's ref_rev_parse_rules, how upload-pack expands a `deepen-not` name
_DWIM = ("%s", "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s",
         "refs/remotes/%s/HEAD")


class Refused(Exception):
    """A request git's upload-pack refuses, in git's own words (transport.py sends them as an
    ERR pkt-line, which git prints as `fatal: remote error: <words>`)."""


REFUSED = "shallow update not allowed"  # receive-pack's reason (receive.shallowUpdate off)


def refused_updates(store, refs, client, updates):
    """The refs of a push from a shallow clone that git's receive-pack refuses: those whose
    new history reaches one of the client's shallow commits (`client`) that the repository's
    refs (`refs`, before the push) do not reach, as taking them would leave the repository
    shallow. `updates` are the push's `(new, ref)`, deletions aside.

    receive-pack.c (update_shallow_info) walks down from each new tip and stops at shallow
    commits and at commits its refs reach; a fast-forward from a `--depth 1` clone stops at
    the branch's old tip at once."""
    if not client:
        return set()
    tips, reached = set(refs), {}
    for new, ref in updates:
        for sha in _down_to(store, new, client, tips):
            reached.setdefault(sha, set()).add(ref)
    known = _reached(store, tips, set(reached)) if reached else set()
    return {ref for sha, names in reached.items() if sha not in known for ref in names}


def _down_to(store, tip, bottoms, tips):
    """The commits of `bottoms` that history from `tip` reaches without passing one of them
    or one of `tips` (git's shortcut: history under a ref is the server's own)."""
    seen, found = set(), set()
    todo = [c.id for c in (_commit(store, tip),) if c]
    while todo:
        sha = todo.pop()
        if sha in seen or sha in tips:
            continue
        seen.add(sha)
        if sha in bottoms:
            found.add(sha)
            continue
        commit = _commit(store, sha)
        todo.extend(commit.parents if commit else ())
    return found


class Request:
    """The shallow part of an upload-pack request: the client's shallow commits and what it
    asks to deepen by (`lines`, the pkt-line payloads, in order; `relative`, whether its
    first want line names the `deepen-relative` capability)."""

    COMMANDS = (b"shallow", b"deepen", b"deepen-since", b"deepen-not")

    def __init__(self, lines, relative):
        self.client, self.depth, self.relative = set(), 0, relative
        self.since, self.exclude = None, []
        for line in lines:
            line = line.rstrip(b"\n")
            command, _, value = line.partition(b" ")
            if command == b"shallow":
                if not valid_hexsha(value):
                    raise Refused(f"invalid shallow line: {line.decode(errors='replace')}")
                self.client.add(value)
            elif command == b"deepen":
                self.depth = _number(line, value, minimum=1)
            elif command == b"deepen-since":
                self.since = _number(line, value, minimum=0)
            else:
                self.exclude.append(value)
        if self.depth and (self.since is not None or self.exclude):
            raise Refused("git upload-pack: deepen and deepen-since (or deepen-not)"
                          " cannot be used together")

    @property
    def deepens(self):
        """Whether the answer has a shallow-info section (git sends none for `shallow` alone)."""
        return bool(self.depth or self.since is not None or self.exclude)

    def answer(self, store, refs, wants):
        """Return (new shallow commits, commits no longer shallow, where the pack walk stops).

        `refs` are the advertised `{name: sha}`, `wants` the ids the client asked for."""
        if self.depth and self.relative:
            # git: deepen by n from the client's shallow commits that our refs still reach
            heads = _reached(store, refs.values(), self.client)
            shallow, kept = find_shallow(store, heads, self.depth + 1)
            border = shallow - kept
        elif self.depth:
            shallow, kept = find_shallow(store, wants, self.depth)
            border = shallow - kept
        elif self.deepens:
            kept, border = self._by_rev_list(store, refs, wants)
        else:
            return set(), set(), set(self.client)
        unshallow = kept & self.client
        return border - self.client, unshallow, border | (self.client - unshallow)

    def _by_rev_list(self, store, refs, wants):
        """`rev-list --max-age=<since> <wants> --not <deepen-not refs>`: the commits it
        lists, and of those the ones with a parent it does not list (the new boundary)."""
        excluded = _reached(store, [_expand(refs, name) for name in self.exclude], None)
        listed, todo = set(), [c.id for c in (_commit(store, sha) for sha in wants) if c]
        while todo:
            sha = todo.pop()
            if sha in listed or sha in excluded:
                continue
            commit = store[sha]
            if self.since is not None and commit.commit_time < self.since:
                continue  # an older commit ends the walk down this line
            listed.add(sha)
            todo.extend(commit.parents)
        if not listed:
            raise Refused("no commits selected for shallow requests")
        border = {sha for sha in listed if any(p not in listed for p in store[sha].parents)}
        return listed - border, border


def _number(line, value, *, minimum):
    """A deepen's number; git's words for one it cannot read (`Invalid deepen: deepen x`)."""
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < minimum:
        command = line.partition(b" ")[0].decode()
        raise Refused(f"Invalid {command}: {line.decode(errors='replace')}")
    return number


def _commit(store, sha):
    """The commit `sha` names, through tags; None for a tree, a blob or an unknown id."""
    if sha not in store:
        return None
    found = store[sha]
    while isinstance(found, Tag):
        found = store[found.object[1]]
    return found if isinstance(found, Commit) else None


def _expand(refs, name):
    """The commit a `deepen-not` name means, expanded as git expands it (exactly one ref)."""
    found = [refs[rule.encode() % name] for rule in _DWIM if rule.encode() % name in refs]
    if len(found) != 1:
        raise Refused(f"git upload-pack: ambiguous deepen-not: deepen-not"
                      f" {name.decode(errors='replace')}")
    return found[0]


def _reached(store, tips, targets):
    """The commits reachable from `tips`; with `targets`, those of them reached, stopping
    once all are."""
    seen, todo = set(), [c.id for c in (_commit(store, sha) for sha in tips) if c]
    found = set()
    while todo and (targets is None or found != targets):
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        if targets is not None and sha in targets:
            found.add(sha)
        todo.extend(store[sha].parents)
    return seen if targets is None else found
