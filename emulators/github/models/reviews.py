"""Reviews and requested reviewers, and their `pull_request_review` and `pull_request`
`review_requested`/`review_request_removed` events.

GitHub's rules that depend on who acts hold: an author cannot
approve or request changes on their own pull request, review cannot be requested from the
author, a user has at most one pending review per pull request, and only its author sees it.
"""

from .. import errors, events, ids, schemas
from ..store import REVIEWS

EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
          "COMMENT": "COMMENTED"}


class ReviewRules:
    """Create, submit, dismiss and read reviews, and request reviewers; `rules` reaches pulls
    (the PR reviewed, its shape and its requested reviewers)."""

    def __init__(self, store, clock, *, emit, accounts, repos, rules):
        self.store = store
        self.clock = clock
        self.emit = emit
        self.accounts = accounts
        self.repos = repos
        self.rules = rules

    def create_review(self, owner, name, raw_number, parsed):
        op = "pulls/create-review"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        if body.get("comments"):
            raise errors.Unsupported("Mockingbird does not model review comments on lines")
        if isinstance(body.get("body"), str) and len(body["body"]) > schemas.MAX_BODY:
            raise errors.ReviewRefused(op, f"Body is too long (maximum is {schemas.MAX_BODY} "
                                           "characters)")
        with self.store.transaction():
            pull = self.rules.pulls.find(repo, raw_number, op)
            actor = self.accounts.actor()
            if body.get("event") is None:
                if any(r["state"] == "PENDING" and r["user"] == actor
                       for r in self._reviews(repo, pull)):
                    raise errors.ReviewRefused(
                        op, "User can only have one pending review per pull request")
                state = "PENDING"
            else:
                state = self._review_state(pull, body, actor, op)
            commit_id = body.get("commit_id") or self._head_sha(repo, pull)
            if not isinstance(commit_id, str) or commit_id not in self.store.graph(repo["key"]):
                raise errors.ReviewRefused(op, "Commit id is not part of the pull request")
            number = self.store.next_id("review_ids")
            review = {"repo": repo["key"], "number": pull["number"], "id": number,
                      "node_id": ids.node_id("github", "PRR_", number), "user": actor,
                      "body": body.get("body") or "", "state": state, "commit_id": commit_id,
                      "submitted_at": None if state == "PENDING" else self.clock.now()}
            self._put_review(review)
            if state != "PENDING":
                self._submitted(repo, pull, review)
        return self.review_json(repo, review)

    def submit_review(self, owner, name, raw_number, raw_id, parsed):
        op = "pulls/submit-review"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        with self.store.transaction():
            pull, review = self._review(repo, raw_number, raw_id, op)
            if review["state"] != "PENDING":
                raise errors.ReviewRefused(op, "Can not submit a non-pending review")
            if not isinstance(body.get("event"), str):
                raise errors.ReviewRefused(op, "Event is required to submit a review")
            state = self._review_state(pull, body, review["user"], op)
            review = {**review, "state": state,
                      "body": body.get("body") or review["body"],
                      "submitted_at": self.clock.now()}
            self._put_review(review)
            self._submitted(repo, pull, review)
        return self.review_json(repo, review)

    def dismiss_review(self, owner, name, raw_number, raw_id, parsed):
        """Dismiss a submitted review (`{message}`): it no longer counts for protection."""
        op = "pulls/dismiss-review"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        with self.store.transaction():
            pull, review = self._review(repo, raw_number, raw_id, op)
            if not isinstance(body.get("message"), str) or not body["message"]:
                raise errors.ReviewRefused(op, "Message is required to dismiss a review")
            if review["state"] == "PENDING":
                raise errors.ReviewRefused(op, "Can not dismiss a pending review")
            review = {**review, "state": "DISMISSED"}
            self._put_review(review)
            self.emit("pull_request_review", lambda: self._review_event("dismissed", repo,
                                                                        pull, review))
        return self.review_json(repo, review)

    def list_reviews(self, owner, name, raw_number, pairs):
        op = "pulls/list-reviews"
        repo = self.repos.find(owner, name, op)
        pull = self.rules.pulls.find(repo, raw_number, op)
        actor = self.accounts.actor_login
        found = [r for r in self._reviews(repo, pull)
                 if r["state"] != "PENDING" or r["user"].lower() == actor.lower()]
        return [self.review_json(repo, r) for r in schemas.page_of(found, pairs)[0]]

    def get_review(self, owner, name, raw_number, raw_id):
        op = "pulls/get-review"
        repo = self.repos.find(owner, name, op)
        return self.review_json(repo, self._review(repo, raw_number, raw_id, op)[1])

    def latest(self, repo, pull):
        """Each reviewer's latest approving or changes-requesting review (what protection
        counts), `{login: review}`."""
        latest = {}
        for review in self._reviews(repo, pull):
            if review["state"] in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                latest[review["user"].lower()] = review
        return latest

    # requested reviewers -------------------------------------------------------------------

    def request_reviewers(self, owner, name, raw_number, parsed, *, add):
        op = "pulls/request-reviewers" if add else "pulls/remove-requested-reviewers"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        wanted, teams = body.get("reviewers", []), body.get("team_reviewers", [])
        if not isinstance(wanted, list) or not all(isinstance(w, str) for w in wanted) \
                or not isinstance(teams, list):
            raise errors.ValidationFailed(op, field="reviewers")
        if teams:
            raise errors.Unsupported("Mockingbird does not model teams")
        with self.store.transaction():
            pull = self.rules.pulls.find(repo, raw_number, op)
            current = pull.get("requested_reviewers", [])
            if add:
                logins = []
                for login in wanted:
                    record = self.accounts.collaborator(login)
                    if record is None:
                        raise errors.Unprocessable(
                            op, "Reviews may only be requested from collaborators. One or "
                                "more of the users or teams you specified is not a "
                                "collaborator of the "
                                f"{self.repos.json(repo)['full_name']} repository.")
                    if record["login"].lower() == pull["user"].lower():
                        raise errors.Unprocessable(
                            op, "Review cannot be requested from pull request author.")
                    logins.append(record["login"])
                changed = [x for x in logins if x not in current]
                after = [*current, *changed]
                action = "review_requested"
            else:
                gone = {w.lower() for w in wanted}
                changed = [x for x in current if x.lower() in gone]
                after = [x for x in current if x.lower() not in gone]
                action = "review_request_removed"
            updated = {**pull, "requested_reviewers": after, "updated_at": self.clock.now()}
            self.rules.pulls.put(updated, pull)
            for login in changed:
                self.emit("pull_request", lambda login=login: events.pull_request(
                    action, self.rules.pulls.json(repo, updated), self.accounts.sender(),
                    requested_reviewer=self.accounts.json(login)))
        return self.rules.pulls.json(repo, updated, full=False)

    def list_requested_reviewers(self, owner, name, raw_number):
        op = "pulls/list-requested-reviewers"
        repo = self.repos.find(owner, name, op)
        pull = self.rules.pulls.find(repo, raw_number, op)
        return {"users": [self.accounts.json(x) for x in pull.get("requested_reviewers", [])],
                "teams": []}

    # records and shapes --------------------------------------------------------------------

    def _head_sha(self, repo, pull):
        if pull["state"] != "open":
            return pull["head_sha"]
        return self.repos.tips(repo["key"], (pull["head_ref"],)).get(pull["head_ref"],
                                                                     pull["head_sha"])

    def _review_state(self, pull, body, actor, op):
        event = body.get("event")
        if event not in EVENTS:
            raise errors.ReviewRefused(
                op, "Variable $event of type PullRequestReviewEvent was provided invalid value")
        if actor.lower() == pull["user"].lower():
            if event == "APPROVE":
                raise errors.ReviewRefused(op, "Can not approve your own pull request")
            if event == "REQUEST_CHANGES":
                raise errors.ReviewRefused(op, "Can not request changes on your own pull "
                                               "request")
        if event in ("REQUEST_CHANGES", "COMMENT") and not body.get("body"):
            raise errors.ReviewRefused(op, f"A {event} review needs a body")
        return EVENTS[event]

    def _submitted(self, repo, pull, review):
        """A review left pending no more: its author's review request is fulfilled."""
        requested = pull.get("requested_reviewers", [])
        if review["user"] in requested:
            updated = {**pull, "requested_reviewers": [x for x in requested
                                                       if x != review["user"]]}
            self.rules.pulls.put(updated, pull)
            pull = updated
        self.emit("pull_request_review", lambda: self._review_event("submitted", repo, pull,
                                                                    review))

    def _review_event(self, action, repo, pull, review):
        # the webhook spells the state in lower case (`approved`), the REST API in upper case
        return {"action": action, "review": {**self.review_json(repo, review),
                                             "state": review["state"].lower()},
                "pull_request": events.pull_request(action, self.rules.pulls.json(repo, pull),
                                                    None)["pull_request"],
                "repository": self.repos.json(repo), "sender": self.accounts.sender()}

    def _reviews(self, repo, pull):
        return self.store.items(REVIEWS, {"repo": repo["key"], "number": pull["number"]},
                                order_by="id")

    def _review(self, repo, raw_number, raw_id, op):
        """Return (PR record, review record) of a review's path, or raise 404."""
        pull = self.rules.pulls.find(repo, raw_number, op)
        review = self.store.item(REVIEWS, f"{repo['key']}:{raw_id}") if raw_id.isdigit() \
            else None
        if review is None or review["number"] != pull["number"]:
            raise errors.NotFound(op)
        return pull, review

    def _put_review(self, review):
        self.store.put_item(REVIEWS, f"{review['repo']}:{review['id']}", review)

    def review_json(self, repo, review):
        repo_json = self.repos.json(repo)
        pull_url = f"{repo_json['url']}/pulls/{review['number']}"
        html = f"{repo_json['html_url']}/pull/{review['number']}" \
               f"#pullrequestreview-{review['id']}"
        shape = {"id": review["id"], "node_id": review["node_id"],
                 "user": self.accounts.json(review["user"]), "body": review["body"],
                 "state": review["state"], "html_url": html, "pull_request_url": pull_url,
                 "author_association": self.accounts.association(repo, review["user"]),
                 "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
                 "commit_id": review["commit_id"]}
        if review["submitted_at"]:
            shape["submitted_at"] = review["submitted_at"]
        return shape
