"""The conversation: issues (`issues/list-for-repo`, `issues/create`, `issues/get`,
`issues/update`), their comments and assignees."""
from ..schemas import body as bodies
from ..schemas import issues, queries
from . import request


class Issues:
    """`GET|POST /repos/{owner}/{repo}/issues` (issues and pull requests alike)."""

    def on_get(self, req, resp, owner, repo):
        backend, record = request.repository(req, owner, repo)
        query = request.pairs(req)
        page, filters = queries.page(query), queries.issue_list(query)
        request.listing(req, resp, backend.issues.list(record, page, **filters), page)

    def on_post(self, req, resp, owner, repo):
        backend, record, sent = request.write(req, owner, repo)
        issue = backend.issues.create(
            record, **issues.create_issue(bodies.json_object(sent)))
        request.wrote(req, resp, 201, issue, issueNumber=str(issue["number"]))


class Issue:
    """`GET|PATCH /repos/{owner}/{repo}/issues/{issue_number}`."""

    def on_get(self, req, resp, owner, repo, issue_number):
        request.read(req, resp, owner, repo,
                     lambda rules: rules.issues.get, request.number(issue_number))

    def on_patch(self, req, resp, owner, repo, issue_number):
        backend, record, given = request.existing(req, owner, repo, lambda rules, record: (
            rules.issues.conversation(record, request.number(issue_number))))
        issue = backend.issues.update(record, request.number(issue_number),
                                      **issues.update_issue(given))
        request.wrote(req, resp, 200, issue, issueNumber=str(issue["number"]))


class IssueComments:
    """`GET|POST /repos/{owner}/{repo}/issues/{issue_number}/comments`."""

    def on_get(self, req, resp, owner, repo, issue_number):
        backend, record = request.repository(req, owner, repo)
        number = request.number(issue_number)
        backend.issues.conversation(record, number)  # 404 before the query is checked
        query = request.pairs(req)
        page = queries.page(query)
        request.listing(req, resp, backend.issues.comments(record, number, page,
                                                           since=queries.since(query)), page)

    def on_post(self, req, resp, owner, repo, issue_number):
        backend, record, sent = request.write(req, owner, repo)
        text = issues.comment(bodies.json_object(sent))
        comment = backend.issues.create_comment(record, request.number(issue_number), text)
        request.wrote(req, resp, 201, comment, commentId=str(comment["id"]))


class IssueComment:
    """`GET|PATCH|DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}`."""

    def on_get(self, req, resp, owner, repo, comment_id):
        request.read(req, resp, owner, repo,
                     lambda rules: rules.issues.get_comment, request.number(comment_id))

    def on_patch(self, req, resp, owner, repo, comment_id):
        backend, record, sent = request.write(req, owner, repo)
        text = issues.comment(bodies.json_object(sent))
        comment = backend.issues.update_comment(record, request.number(comment_id), text)
        request.wrote(req, resp, 200, comment, commentId=str(comment["id"]))

    def on_delete(self, req, resp, owner, repo, comment_id):
        backend = request.backend_of(req)
        backend.issues.delete_comment(backend.repos.find(owner, repo), request.number(comment_id))
        request.wrote(req, resp, 204, None, commentId=comment_id)


class IssueAssignees:
    """`POST|DELETE /repos/{owner}/{repo}/issues/{issue_number}/assignees`."""

    def on_post(self, req, resp, owner, repo, issue_number):
        request.members(req, resp, owner, repo, issue_number, issues.assignees,
                        lambda rules: rules.issues.assign, 201, issueNumber=issue_number)

    def on_delete(self, req, resp, owner, repo, issue_number):
        request.members(req, resp, owner, repo, issue_number, issues.assignees,
                        lambda rules: rules.issues.unassign, 200, issueNumber=issue_number)
