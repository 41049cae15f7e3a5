"""Branch protection that bites: get/update/delete a branch's protection, what it asks of a
pull request (`mergeable_state`, the 405 a merge meets), and of a push to the branch.

Modelled: required status checks (commit status contexts or
check run names, `strict` asking the head to contain the base), required approving reviews
(`dismiss_stale_reviews` counting only approvals of the head commit), force pushes and
deletions. Protection holds for every actor, as with `enforce_admins` on: the emulator treats
each token as an administrator, and an administrator who could bypass it would test nothing.
"""

from .. import errors, git, shapes
from ..inputs import Listing
from ..shapes.protection import FLAGS
from ..store import PROTECTIONS
from .checks import PASSING


# GitHub's messages for a merge or push that protection refuses
NOT_MERGEABLE = "Pull Request is not mergeable"
DRAFT = "Pull Request is still a draft"
THROUGH_PULL = "Changes must be made through a pull request."


def _approvals(count):
    noun = "approving review is" if count == 1 else "approving reviews are"
    return f"At least {count} {noun} required by reviewers with write access."


def _checks_message(names, total, verdict):
    """`Required status check "ci" is expected.` or `2 of 3 required status checks are
    failing.`"""
    if len(names) == 1:
        return f'Required status check "{names[0]}" is {verdict}.'
    return f"{len(names)} of {total} required status checks are {verdict}."


class ProtectionRules:
    """Read branches and their protection, and say what protection asks of a merge or a push;
    `rules` reaches commits (a branch's tip), statuses and checks (required ones) and reviews
    (required approvals)."""

    def __init__(self, store, clock, *, repos, rules):
        self.store = store
        self.clock = clock
        self.repos = repos
        self.rules = rules

    def get_branch(self, repo, branch):
        """`repos/get-branch`: the branch, its tip commit and its protection."""
        ref = self.store.ref(repo["key"], f"refs/heads/{branch}")
        if ref is None:
            raise errors.NotFound("Branch not found")
        return shapes.branch_view(*self.repos.urls(repo), branch,
                                  self.rules.commits.json(repo, ref["sha"]),
                                  self.record(repo["key"], branch))

    def branches(self, repo, page, *, protected=None):
        """`repos/list-branches`: a `Listing` of branches, only the protected (True) or the
        unprotected (False) ones when `protected` says so."""
        found = []
        for ref in sorted(self.store.refs(repo["key"]), key=lambda r: r["ref"]):
            if ref["kind"] != "heads":
                continue
            branch = ref["ref"][len("refs/heads/"):]
            is_protected = self.record(repo["key"], branch) is not None
            if protected in (None, is_protected):
                found.append({"name": branch, "commit": {
                    "sha": ref["sha"], "url": f"{self.repos.url(repo)}/commits/{ref['sha']}"},
                    "protected": is_protected})
        return Listing(page.of(found), len(found))

    def get(self, repo, branch):
        """`repos/get-branch-protection` (404 `Branch not found`, `Branch not protected`)."""
        self._protected_branch(repo, branch)
        found = self.record(repo["key"], branch)
        if found is None:
            raise errors.NotFound("Branch not protected")
        return self.protection_json(repo, branch, found)

    def update(self, repo, branch, *, checks=None, reviews=None, enforce_admins=False,
               **flags):
        """`repos/update-branch-protection`: `checks` `{strict, contexts}` (required status
        checks) or None, `reviews` `{count, dismiss_stale, code_owners, last_push}` (required
        approving reviews) or None, and the booleans `enforce_admins` and `FLAGS`."""
        record = {"repo": repo["key"], "branch": branch}
        if checks is not None:
            record["checks"] = checks
        if reviews is not None:
            record["reviews"] = reviews
        record["enforce_admins"] = enforce_admins
        record.update({flag: flags.get(flag, False) for flag in FLAGS})
        with self.store.transaction():
            self._protected_branch(repo, branch)
            record["updated_at"] = self.clock.now()
            self.store.put_item(PROTECTIONS, f"{repo['key']}:{branch}", record)
        return self.protection_json(repo, branch, record, written=True)

    def delete(self, repo, branch):
        """`repos/delete-branch-protection`."""
        with self.store.transaction():
            self._protected_branch(repo, branch)
            if self.record(repo["key"], branch) is None:
                raise errors.NotFound("Branch not protected")
            self.store.delete_item(PROTECTIONS, f"{repo['key']}:{branch}")

    def _protected_branch(self, repo, branch):
        if self.store.ref(repo["key"], f"refs/heads/{branch}") is None:
            raise errors.NotFound("Branch not found")

    def record(self, key, branch):
        return self.store.item(PROTECTIONS, f"{key}:{branch}")

    def protection_json(self, repo, branch, record, *, written=False):
        """A protection record as GitHub shows it (`written`: as an update answers it)."""
        return shapes.protection(self.repos.url(repo), branch, record, written=written)

    # what protection asks -----------------------------------------------------------------

    def required_checks(self, repo, protection, head_sha, base_sha):
        """Return (failing, expected, total) among the required contexts for `head_sha`:
        a context is met by its latest commit status or its latest check run of that name.
        With `strict`, a head that does not contain the base has every check expected."""
        checks = protection.get("checks")
        if not checks or not checks["contexts"]:
            return [], [], 0
        contexts = checks["contexts"]
        if checks["strict"] and not git.is_ancestor(self.store.graph(repo["key"]), base_sha,
                                                    head_sha):
            return [], list(contexts), len(contexts)
        verdicts = {}
        for status in self.rules.statuses.latest(repo["key"], head_sha):
            verdicts[status["context"]] = {"success": "passed", "pending": "expected"}.get(
                status["state"], "failing")
        for run in self.rules.checks.latest(repo["key"], head_sha):
            if run["status"] != "completed":
                verdict = "expected"
            else:
                verdict = "passed" if run["conclusion"] in PASSING else "failing"
            if verdicts.get(run["name"]) != "passed":
                verdicts[run["name"]] = verdict
        failing = [c for c in contexts if verdicts.get(c) == "failing"]
        expected = [c for c in contexts if verdicts.get(c, "expected") == "expected"]
        return failing, expected, len(contexts)

    def merge_blocker(self, repo, pull, head_sha, base_sha):
        """Return GitHub's message for what protection of the base still asks of the PR, or
        None when it is satisfied (or the base is not protected)."""
        protection = self.record(repo["key"], pull["base_ref"])
        if protection is None:
            return None
        reviews = protection.get("reviews")
        if reviews:
            decision = self._review_decision(repo, pull, head_sha, reviews)
            if decision == "CHANGES_REQUESTED":
                return "Changes have been requested on this pull request."
            if decision == "REVIEW_REQUIRED":
                return _approvals(reviews["count"])
        failing, expected, total = self.required_checks(repo, protection, head_sha, base_sha)
        if failing:
            return _checks_message(failing, total, "failing")
        if expected:
            return _checks_message(expected, total, "expected")
        return None

    def review_decision(self, repo, pull, head_sha):
        """GitHub's review decision on a PR at `head_sha` (GraphQL's `reviewDecision`), from
        each reviewer's latest approval or change request: `CHANGES_REQUESTED` when one asks
        for changes; when protection of the base requires reviews, `APPROVED` once the
        approvals it counts are enough (as a merge counts them), else `REVIEW_REQUIRED`;
        without, `APPROVED` after an approval, else None."""
        protection = self.record(repo["key"], pull["base_ref"]) or {}
        return self._review_decision(repo, pull, head_sha, protection.get("reviews"))

    def _review_decision(self, repo, pull, head_sha, reviews):
        latest = self.rules.reviews.latest(repo, pull).values()
        if any(r["state"] == "CHANGES_REQUESTED" for r in latest):
            return "CHANGES_REQUESTED"
        approvals = [r for r in latest if r["state"] == "APPROVED"
                     and (not reviews or not reviews["dismiss_stale"]
                          or r["commit_id"] == head_sha)]
        if reviews:
            return "APPROVED" if len(approvals) >= reviews["count"] else "REVIEW_REQUIRED"
        return "APPROVED" if approvals else None

    def required_contexts(self, repo, branch):
        """The status contexts and check run names protection of `branch` requires (none when
        it is not protected)."""
        record = self.record(repo["key"], branch) or {}
        return frozenset((record.get("checks") or {}).get("contexts") or ())

    def push_refusal(self, repo, ref_name, before, after, *, forced):
        """Return why protection refuses a push that moves `ref_name` (git's `remote: error:`
        lines, GH006 first), or None. A merge through the API is not a push: it meets
        `merge_blocker` instead."""
        if not ref_name.startswith("refs/heads/"):
            return None
        protection = self.record(repo["key"], ref_name[len("refs/heads/"):])
        if protection is None:
            return None
        head = f"GH006: Protected branch update failed for {ref_name}."
        if after is None:
            return None if protection["allow_deletions"] else [head,
                                                               "Cannot delete this branch"]
        if forced and not protection["allow_force_pushes"]:
            return [head, "Cannot force-push to this branch"]
        if protection.get("reviews"):
            return [head, THROUGH_PULL]
        failing, expected, total = self.required_checks(repo, protection, after, after)
        if failing:
            return [head, _checks_message(failing, total, "failing")]
        if expected:
            return [head, _checks_message(expected, total, "expected")]
        return None
