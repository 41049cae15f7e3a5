"""A commit and what CI said of it: `Commit`, `StatusCheckRollup` over commit statuses
(`StatusContext`) and check runs (`CheckRun`), from REST's shapes and GitHub's rule for the
rollup."""
from .. import errors
from . import connections
from .actors import actor
from .resolve import from_rest

FAILING = {"failure", "error", "timed_out", "cancelled", "action_required",
           "startup_failure", "stale"}


def rollup_state(statuses, runs):
    """GitHub's rollup of the latest status of each context and the latest run of each name:
    FAILURE if any failed, PENDING if any has not finished, else SUCCESS; None with neither."""
    if not statuses and not runs:
        return None
    states = [s["state"] for s in statuses] + [
        (r["conclusion"] if r["status"] == "completed" else "pending") for r in runs]
    if any(state in FAILING for state in states):
        return "FAILURE"
    if "pending" in states:
        return "PENDING"
    return "SUCCESS"


class Commit:
    """A commit of a repository (`repository`: its GraphQL object)."""

    typename = "Commit"

    def __init__(self, repository, sha, pull=None):
        self.repository, self.oid, self.pull = repository, sha, pull
        self.abbreviated_oid = sha[:7]
        self.id = f"C_{sha}"
        self.url = f"{repository.url}/commit/{sha}"
        self._rest = None

    def _commit(self):
        if self._rest is None:
            try:
                self._rest = self.repository.backend.commits.json(self.repository.record,
                                                                  self.oid)
            except errors.GitHubError:  # a sha the repository does not hold
                self._rest = {"commit": {"message": "", "author": None, "committer": None}}
        return self._rest

    def message(self, info):
        return self._commit()["commit"]["message"]

    def message_headline(self, info):
        return self.message(info).split("\n", 1)[0]

    def message_body(self, info):
        return self.message(info).partition("\n")[2].strip("\n")

    def _person(self, role):
        person = self._commit()["commit"][role] or {}
        account = self._commit().get(role)
        return {"name": person.get("name"), "email": person.get("email"),
                "date": person.get("date"), "user": actor(account)}

    def authored_date(self, info):
        return self._person("author")["date"]

    def committed_date(self, info):
        return self._person("committer")["date"]

    def author(self, info):
        return self._person("author")

    def committer(self, info):
        return self._person("committer")

    def authors(self, info, first=None, last=None, after=None, before=None):
        return connections.page([self._person("author")], first, last, after, before,
                                field="authors")

    def status_check_rollup(self, info):
        backend, record = self.repository.backend, self.repository.record
        statuses = backend.statuses.latest(record["key"], self.oid)
        runs = backend.checks.latest(record["key"], self.oid)
        state = rollup_state(statuses, runs)
        if state is None:
            return None
        required = self.pull.required_contexts() if self.pull is not None else set()
        app = backend.checks.app_json(record) if runs else None
        contexts = [StatusContext(backend, s, required) for s in statuses] + \
            [CheckRun(self.repository, r, app, required) for r in runs]
        return {"id": f"SCR_{self.oid}", "state": state, "commit": self,
                "contexts": lambda info, **page: connections.page(contexts, **page,
                                                                  field="contexts")}

    def status(self, info):
        backend = self.repository.backend
        statuses = backend.statuses.latest(self.repository.record["key"], self.oid)
        if not statuses:
            return None
        required = self.pull.required_contexts() if self.pull is not None else set()
        contexts = [StatusContext(backend, s, required) for s in statuses]
        return {"id": f"S_{self.oid}", "state": rollup_state(statuses, []), "commit": self,
                "contexts": contexts,
                "context": lambda info, name: next(
                    (c for c in contexts if c.context == name), None)}


class StatusContext:
    """The latest commit status of one context (its record)."""

    typename = "StatusContext"

    def __init__(self, backend, record, required):
        self.backend, self._required = backend, required
        self._creator = record["creator"]
        from_rest(self, record, "context", "target_url", "description", "created_at",
                  id="node_id")
        self.state = record["state"].upper()

    def creator(self, info):
        return actor(self.backend.accounts.find(self._creator))

    def avatar_url(self, info, size=None):
        account = self.backend.accounts.find(self._creator)
        return account["avatar_url"] if account else None

    def is_required(self, info, pull_request_id=None, pull_request_number=None):
        return self.context in self._required


class CheckRun:
    """The latest check run of one name (its record; `app`: REST's shape of its App)."""

    typename = "CheckRun"

    def __init__(self, repository, record, app, required):
        self._required = required
        from_rest(self, record, "name", "started_at", "completed_at", "external_id",
                  id="node_id", database_id="id")
        self.status = record["status"].upper()
        self.conclusion = record["conclusion"].upper() if record["conclusion"] else None
        self.url = self.permalink = f"{repository.url}/runs/{record['id']}"  # as REST's html_url
        self.details_url = record["details_url"] or self.url
        output = record.get("output") or {}
        self.title, self.summary = output.get("title"), output.get("summary")
        self.text = output.get("text")
        # one GitHub App owns every run (the README's CI results); no Actions workflow runs
        self.check_suite = {"id": f"CS_{record['suite']}", "workflowRun": None,
                            "app": {"name": app["name"], "slug": app["slug"],
                                    "databaseId": app["id"], "id": app["node_id"]}}

    def is_required(self, info, pull_request_id=None, pull_request_number=None):
        return self.name in self._required
