"""Labels: a repository's (`issues/list-labels-for-repo`, `issues/create-label`,
`issues/get-label`, `issues/update-label`, `issues/delete-label`) and an issue's
(`issues/list-labels-on-issue`, `issues/add-labels`, `issues/set-labels`,
`issues/remove-all-labels`, `issues/remove-label`)."""
from ..schemas import body as bodies
from ..schemas import issues, queries
from . import request


class IssueLabels:
    """`GET|POST|PUT|DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels`."""

    def on_get(self, req, resp, owner, repo, issue_number):
        request.read(req, resp, owner, repo,
                     lambda rules: rules.labels.of_issue, request.number(issue_number))

    def on_post(self, req, resp, owner, repo, issue_number):
        self._label(req, resp, owner, repo, issue_number, replace=False)

    def on_put(self, req, resp, owner, repo, issue_number):
        self._label(req, resp, owner, repo, issue_number, replace=True)

    @staticmethod
    def _label(req, resp, owner, repo, issue_number, *, replace):
        backend, record, given = request.existing(req, owner, repo, lambda rules, record: (
            rules.issues.conversation(record, request.number(issue_number))),
            kind=bodies.json_value)
        write = backend.labels.replace if replace else backend.labels.add
        labels = write(record, request.number(issue_number), issues.issue_labels(given))
        request.wrote(req, resp, 200, labels, issueNumber=issue_number)

    def on_delete(self, req, resp, owner, repo, issue_number):
        backend = request.backend_of(req)
        backend.labels.clear(backend.repos.find(owner, repo), request.number(issue_number))
        request.wrote(req, resp, 204, None, issueNumber=issue_number)


class IssueLabel:
    """`DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}`."""

    def on_delete(self, req, resp, owner, repo, issue_number, name):
        backend = request.backend_of(req)
        labels = backend.labels.remove(backend.repos.find(owner, repo),
                                       request.number(issue_number), name)
        request.wrote(req, resp, 200, labels, issueNumber=issue_number)


class Labels:
    """`GET|POST /repos/{owner}/{repo}/labels`."""

    def on_get(self, req, resp, owner, repo):
        backend = request.backend_of(req)
        page = queries.page(request.pairs(req))
        request.listing(req, resp, backend.labels.list(backend.repos.find(owner, repo), page),
                        page)

    def on_post(self, req, resp, owner, repo):
        backend, record, sent = request.write(req, owner, repo)
        given = issues.create_label(bodies.json_object(sent))
        label = backend.labels.create(record, given.pop("name"), **given)
        request.wrote(req, resp, 201, label, label=label["name"])


class Label:
    """`GET|PATCH|DELETE /repos/{owner}/{repo}/labels/{name}`."""

    def on_get(self, req, resp, owner, repo, name):
        request.read(req, resp, owner, repo, lambda rules: rules.labels.get, name)

    def on_patch(self, req, resp, owner, repo, name):
        backend, record, given = request.existing(
            req, owner, repo, lambda rules, record: rules.labels.find(record, name))
        label = backend.labels.update(record, name, **issues.update_label(given))
        request.wrote(req, resp, 200, label, label=label["name"])

    def on_delete(self, req, resp, owner, repo, name):
        backend = request.backend_of(req)
        backend.labels.delete(backend.repos.find(owner, repo), name)
        request.wrote(req, resp, 204, None, label=name)
