"""Falcon resources of a pull request's life: CI results, conversation, review, protection and
merge (the repository, ref and pull request resources are in resources.py).

Thin like those: each responder reads the request, calls `GitHubBackend` as the token's user,
and answers; writes are journaled as accepted and honour the accepted-drop effect.
"""
from emulators.runtime import instance_of

from ..presets import LOST_UPDATE
from ..resources import Commit, _accepted, _answer, _body, _paged, _pairs, backend_of


def _wrote(req, resp, status, answer, **ids):
    _accepted(instance_of(req), **ids)
    if status == 204:
        resp.status = 204
    else:
        _answer(resp, status, answer)


class Statuses:
    """`POST /repos/{owner}/{repo}/statuses/{sha}`."""

    def on_post(self, req, resp, owner, repo, sha):
        status = backend_of(req).statuses.create_status(owner, repo, sha, _body(req))
        _wrote(req, resp, 201, status, statusId=str(status["id"]))


class CommitStatuses:
    """`GET /repos/{owner}/{repo}/commits/{ref}/statuses` (newest first)."""

    def on_get(self, req, resp, owner, repo, ref):
        _answer(resp, 200, backend_of(req).statuses.list_statuses(owner, repo, ref, _pairs(req)))


class CombinedStatus:
    """`GET /repos/{owner}/{repo}/commits/{ref}/status`."""

    def on_get(self, req, resp, owner, repo, ref):
        _answer(resp, 200, backend_of(req).statuses.combined_status(owner, repo, ref))


class CheckRuns:
    """`POST /repos/{owner}/{repo}/check-runs`."""

    def on_post(self, req, resp, owner, repo):
        run = backend_of(req).checks.create_check_run(owner, repo, _body(req))
        _wrote(req, resp, 201, run, checkRunId=str(run["id"]))


class CheckRun:
    """`GET|PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}`; a `github.lost_update`
    effect answers 200 as if the update had been applied, and writes nothing."""

    def on_get(self, req, resp, owner, repo, check_run_id):
        _answer(resp, 200, backend_of(req).checks.get_check_run(owner, repo, check_run_id))

    def on_patch(self, req, resp, owner, repo, check_run_id):
        backend = backend_of(req)
        if instance_of(req).fault_effect(LOST_UPDATE) is not None:
            _answer(resp, 200, backend.checks.update_check_run(owner, repo, check_run_id, _body(req),
                                                        lost=True))
            return
        run = backend.checks.update_check_run(owner, repo, check_run_id, _body(req))
        _wrote(req, resp, 200, run, checkRunId=str(run["id"]))


class CheckRunRerequest:
    """`POST /repos/{owner}/{repo}/check-runs/{check_run_id}/rerequest`."""

    def on_post(self, req, resp, owner, repo, check_run_id):
        answer = backend_of(req).checks.rerequest_check_run(owner, repo, check_run_id)
        _wrote(req, resp, 201, answer, checkRunId=check_run_id)


class CommitCheckRuns:
    """`GET /repos/{owner}/{repo}/commits/{ref}/check-runs`."""

    def on_get(self, req, resp, owner, repo, ref):
        _answer(resp, 200, backend_of(req).checks.list_check_runs(owner, repo, ref, _pairs(req)))


class CommitCheckSuites:
    """`GET /repos/{owner}/{repo}/commits/{ref}/check-suites`."""

    def on_get(self, req, resp, owner, repo, ref):
        _answer(resp, 200, backend_of(req).checks.list_check_suites(owner, repo, ref, _pairs(req)))


class CommitPaths(Commit):
    """`GET /repos/{owner}/{repo}/commits/{ref}` and what hangs below a commit: `/status`,
    `/statuses`, `/check-runs`, `/check-suites`.

    One route, because a ref may hold slashes (`commits/feature/x/status`): the last segment
    names the listing, the rest the ref, and the request is routed as its own template.
    """

    TAILS = {"status": CombinedStatus, "statuses": CommitStatuses,
             "check-runs": CommitCheckRuns, "check-suites": CommitCheckSuites}

    def on_get(self, req, resp, owner, repo, ref):
        head, _, tail = ref.rpartition("/")
        if head and tail in self.TAILS:
            req.uri_template = f"/repos/{{owner}}/{{repo}}/commits/{{ref}}/{tail}"
            return self.TAILS[tail]().on_get(req, resp, owner, repo, head)
        return super().on_get(req, resp, owner, repo, ref)


class CheckSuite:
    """`GET /repos/{owner}/{repo}/check-suites/{check_suite_id}`."""

    def on_get(self, req, resp, owner, repo, check_suite_id):
        _answer(resp, 200, backend_of(req).checks.get_check_suite(owner, repo, check_suite_id))


class CheckSuiteRuns:
    """`GET /repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs`."""

    def on_get(self, req, resp, owner, repo, check_suite_id):
        _answer(resp, 200, backend_of(req).checks.list_suite_runs(owner, repo, check_suite_id,
                                                           _pairs(req)))


class Issues:
    """`GET|POST /repos/{owner}/{repo}/issues` (issues and pull requests alike)."""

    def on_get(self, req, resp, owner, repo):
        _paged(req, resp, *backend_of(req).issues.list_issues(owner, repo, _pairs(req)))

    def on_post(self, req, resp, owner, repo):
        issue = backend_of(req).issues.create_issue(owner, repo, _body(req))
        _wrote(req, resp, 201, issue, issueNumber=str(issue["number"]))


class Issue:
    """`GET|PATCH /repos/{owner}/{repo}/issues/{issue_number}`."""

    def on_get(self, req, resp, owner, repo, issue_number):
        _answer(resp, 200, backend_of(req).issues.get_issue(owner, repo, issue_number))

    def on_patch(self, req, resp, owner, repo, issue_number):
        issue = backend_of(req).issues.update_issue(owner, repo, issue_number, _body(req))
        _wrote(req, resp, 200, issue, issueNumber=str(issue["number"]))


class IssueComments:
    """`GET|POST /repos/{owner}/{repo}/issues/{issue_number}/comments`."""

    def on_get(self, req, resp, owner, repo, issue_number):
        _paged(req, resp, *backend_of(req).issues.list_comments(owner, repo, issue_number,
                                                         _pairs(req)))

    def on_post(self, req, resp, owner, repo, issue_number):
        comment = backend_of(req).issues.create_comment(owner, repo, issue_number, _body(req))
        _wrote(req, resp, 201, comment, commentId=str(comment["id"]))


class IssueComment:
    """`GET|PATCH|DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}`."""

    def on_get(self, req, resp, owner, repo, comment_id):
        _answer(resp, 200, backend_of(req).issues.get_comment(owner, repo, comment_id))

    def on_patch(self, req, resp, owner, repo, comment_id):
        comment = backend_of(req).issues.update_comment(owner, repo, comment_id, _body(req))
        _wrote(req, resp, 200, comment, commentId=str(comment["id"]))

    def on_delete(self, req, resp, owner, repo, comment_id):
        backend_of(req).issues.delete_comment(owner, repo, comment_id)
        _wrote(req, resp, 204, None, commentId=comment_id)


class IssueLabels:
    """`GET|POST|PUT|DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels`."""

    def on_get(self, req, resp, owner, repo, issue_number):
        _answer(resp, 200, backend_of(req).labels.list_issue_labels(owner, repo, issue_number))

    def on_post(self, req, resp, owner, repo, issue_number):
        labels = backend_of(req).labels.add_labels(owner, repo, issue_number, _body(req))
        _wrote(req, resp, 200, labels, issueNumber=issue_number)

    def on_put(self, req, resp, owner, repo, issue_number):
        labels = backend_of(req).labels.add_labels(owner, repo, issue_number, _body(req), replace=True)
        _wrote(req, resp, 200, labels, issueNumber=issue_number)

    def on_delete(self, req, resp, owner, repo, issue_number):
        backend_of(req).labels.remove_all_labels(owner, repo, issue_number)
        _wrote(req, resp, 204, None, issueNumber=issue_number)


class IssueLabel:
    """`DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}`."""

    def on_delete(self, req, resp, owner, repo, issue_number, name):
        labels = backend_of(req).labels.remove_label(owner, repo, issue_number, name)
        _wrote(req, resp, 200, labels, issueNumber=issue_number)


class IssueAssignees:
    """`POST|DELETE /repos/{owner}/{repo}/issues/{issue_number}/assignees`."""

    def on_post(self, req, resp, owner, repo, issue_number):
        issue = backend_of(req).issues.change_assignees(owner, repo, issue_number, _body(req),
                                                 add=True)
        _wrote(req, resp, 201, issue, issueNumber=issue_number)

    def on_delete(self, req, resp, owner, repo, issue_number):
        issue = backend_of(req).issues.change_assignees(owner, repo, issue_number, _body(req),
                                                 add=False)
        _wrote(req, resp, 200, issue, issueNumber=issue_number)


class Labels:
    """`GET|POST /repos/{owner}/{repo}/labels`."""

    def on_get(self, req, resp, owner, repo):
        _paged(req, resp, *backend_of(req).labels.list_repo_labels(owner, repo, _pairs(req)))

    def on_post(self, req, resp, owner, repo):
        label = backend_of(req).labels.create_label(owner, repo, _body(req))
        _wrote(req, resp, 201, label, label=label["name"])


class Label:
    """`GET|PATCH|DELETE /repos/{owner}/{repo}/labels/{name}`."""

    def on_get(self, req, resp, owner, repo, name):
        _answer(resp, 200, backend_of(req).labels.get_label(owner, repo, name))

    def on_patch(self, req, resp, owner, repo, name):
        label = backend_of(req).labels.update_label(owner, repo, name, _body(req))
        _wrote(req, resp, 200, label, label=label["name"])

    def on_delete(self, req, resp, owner, repo, name):
        backend_of(req).labels.delete_label(owner, repo, name)
        _wrote(req, resp, 204, None, label=name)


class Reviews:
    """`GET|POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        _answer(resp, 200, backend_of(req).reviews.list_reviews(owner, repo, pull_number, _pairs(req)))

    def on_post(self, req, resp, owner, repo, pull_number):
        review = backend_of(req).reviews.create_review(owner, repo, pull_number, _body(req))
        _wrote(req, resp, 200, review, pullNumber=pull_number, reviewId=str(review["id"]))


class Review:
    """`GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}`."""

    def on_get(self, req, resp, owner, repo, pull_number, review_id):
        _answer(resp, 200, backend_of(req).reviews.get_review(owner, repo, pull_number, review_id))


class ReviewEvents:
    """`POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events`."""

    def on_post(self, req, resp, owner, repo, pull_number, review_id):
        review = backend_of(req).reviews.submit_review(owner, repo, pull_number, review_id, _body(req))
        _wrote(req, resp, 200, review, pullNumber=pull_number, reviewId=review_id)


class ReviewDismissals:
    """`PUT /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals`."""

    def on_put(self, req, resp, owner, repo, pull_number, review_id):
        review = backend_of(req).reviews.dismiss_review(owner, repo, pull_number, review_id,
                                                _body(req))
        _wrote(req, resp, 200, review, pullNumber=pull_number, reviewId=review_id)


class RequestedReviewers:
    """`GET|POST|DELETE /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        _answer(resp, 200, backend_of(req).reviews.list_requested_reviewers(owner, repo, pull_number))

    def on_post(self, req, resp, owner, repo, pull_number):
        pull = backend_of(req).reviews.request_reviewers(owner, repo, pull_number, _body(req), add=True)
        _wrote(req, resp, 201, pull, pullNumber=pull_number)

    def on_delete(self, req, resp, owner, repo, pull_number):
        pull = backend_of(req).reviews.request_reviewers(owner, repo, pull_number, _body(req),
                                                 add=False)
        _wrote(req, resp, 200, pull, pullNumber=pull_number)


class PullMerge:
    """`GET|PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge`: merged? (204/404); merge."""

    def on_get(self, req, resp, owner, repo, pull_number):
        backend_of(req).merges.check_merged(owner, repo, pull_number)
        resp.status = 204

    def on_put(self, req, resp, owner, repo, pull_number):
        answer = backend_of(req).merges.merge_pull(owner, repo, pull_number, _body(req))
        _wrote(req, resp, 200, answer, pullNumber=pull_number, sha=answer["sha"])


class Merges:
    """`POST /repos/{owner}/{repo}/merges`: 201 the merge commit, 204 when nothing to merge."""

    def on_post(self, req, resp, owner, repo):
        commit = backend_of(req).merges.merge_branches(owner, repo, _body(req))
        _wrote(req, resp, 204 if commit is None else 201, commit,
               sha=commit and commit["sha"])


class Branches:
    """`GET /repos/{owner}/{repo}/branches`."""

    def on_get(self, req, resp, owner, repo):
        _paged(req, resp, *backend_of(req).protection.list_branches(owner, repo, _pairs(req)))


class Branch:
    """`GET /repos/{owner}/{repo}/branches/{branch}`."""

    def on_get(self, req, resp, owner, repo, branch):
        _answer(resp, 200, backend_of(req).protection.get_branch(owner, repo, branch))


class BranchProtection:
    """`GET|PUT|DELETE /repos/{owner}/{repo}/branches/{branch}/protection`."""

    def on_get(self, req, resp, owner, repo, branch):
        _answer(resp, 200, backend_of(req).protection.get_protection(owner, repo, branch))

    def on_put(self, req, resp, owner, repo, branch):
        answer = backend_of(req).protection.update_protection(owner, repo, branch, _body(req))
        _wrote(req, resp, 200, answer, branch=branch)

    def on_delete(self, req, resp, owner, repo, branch):
        backend_of(req).protection.delete_protection(owner, repo, branch)
        _wrote(req, resp, 204, None, branch=branch)


ROUTES = (  # path, resource class (app.py adds them to its table; CommitPaths is its own row)
    ("/repos/{owner}/{repo}/statuses/{sha}", Statuses),
    ("/repos/{owner}/{repo}/check-runs", CheckRuns),
    ("/repos/{owner}/{repo}/check-runs/{check_run_id}", CheckRun),
    ("/repos/{owner}/{repo}/check-runs/{check_run_id}/rerequest", CheckRunRerequest),
    ("/repos/{owner}/{repo}/check-suites/{check_suite_id}", CheckSuite),
    ("/repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs", CheckSuiteRuns),
    ("/repos/{owner}/{repo}/issues", Issues),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", IssueComment),
    ("/repos/{owner}/{repo}/issues/{issue_number}", Issue),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", IssueComments),
    ("/repos/{owner}/{repo}/issues/{issue_number}/labels", IssueLabels),
    ("/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", IssueLabel),
    ("/repos/{owner}/{repo}/issues/{issue_number}/assignees", IssueAssignees),
    ("/repos/{owner}/{repo}/labels", Labels),
    ("/repos/{owner}/{repo}/labels/{name}", Label),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews", Reviews),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}", Review),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events", ReviewEvents),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals",
     ReviewDismissals),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers", RequestedReviewers),
    ("/repos/{owner}/{repo}/pulls/{pull_number}/merge", PullMerge),
    ("/repos/{owner}/{repo}/merges", Merges),
    ("/repos/{owner}/{repo}/branches", Branches),
    ("/repos/{owner}/{repo}/branches/{branch}", Branch),
    ("/repos/{owner}/{repo}/branches/{branch}/protection", BranchProtection),
)
