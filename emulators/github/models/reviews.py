"""Reviews and requested reviewers, and their `pull_request_review` and `pull_request`
`review_requested`/`review_request_removed` events.

GitHub's rules that depend on who acts hold: an author cannot
approve or request changes on their own pull request, review cannot be requested from the
author, a user has at most one pending review per pull request, and only its author sees it.
"""

from .. import errors, events, ids, shapes
from ..inputs import Listing
from ..store import REVIEWS
from .rule import Rule
from .texts import MAX_BODY

EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED",
          "COMMENT": "COMMENTED"}


def check_comments(comments):
    """Review comments on lines are not modelled (the emulator's 501)."""
    if comments:
        raise errors.Unsupported("Mockingbird does not model review comments on lines")


def check_body(body):
    """A review's body is at most 65,536 characters (GitHub's review refusal)."""
    if isinstance(body, str) and len(body) > MAX_BODY:
        raise errors.ReviewRefused(f"Body is too long (maximum is {MAX_BODY} characters)")


def check_teams(teams):
    """Teams are not modelled: a review asked of one is the emulator's 501."""
    if teams:
        raise errors.Unsupported("Mockingbird does not model teams")


class ReviewRules(Rule):
    """Create, submit, dismiss and read reviews, and request reviewers; `rules` reaches pulls
    (the PR reviewed, its shape and its requested reviewers)."""

    def create(self, repo, number, *, event=None, body=None, commit_id=None, comments=()):
        """`pulls/create-review`: submitted with an `event` (`APPROVE`, `REQUEST_CHANGES`,
        `COMMENT`), pending without one; on `commit_id` (the head by default). `comments` on
        lines are refused (not modelled)."""
        check_comments(comments)
        check_body(body)
        with self.store.transaction():
            pull = self.rules.pulls.find(repo, number)
            actor = self.accounts.actor()
            if event is None:
                if any(r["state"] == "PENDING" and r["user"] == actor
                       for r in self._reviews(repo, pull)):
                    raise errors.ReviewRefused(
                        "User can only have one pending review per pull request")
                state = "PENDING"
            else:
                state = self._review_state(pull, event, body, actor)
            commit_id = commit_id or self._head_sha(repo, pull)
            if not isinstance(commit_id, str) or commit_id not in self.store.graph(repo["key"]):
                raise errors.ReviewRefused("Commit id is not part of the pull request")
            review_id = self.store.next_id("review_ids")
            review = {"repo": repo["key"], "number": pull["number"], "id": review_id,
                      "node_id": ids.node_id("github", "PRR_", review_id), "user": actor,
                      "body": body or "", "state": state, "commit_id": commit_id,
                      "submitted_at": None if state == "PENDING" else self.clock.now()}
            self._put_review(review)
            if state != "PENDING":
                self._submitted(repo, pull, review)
        return self.review_json(repo, review)

    def submit(self, repo, number, review_id, *, event, body=None):
        """`pulls/submit-review` of a pending review."""
        with self.store.transaction():
            pull, review = self.find(repo, number, review_id)
            if review["state"] != "PENDING":
                raise errors.ReviewRefused("Can not submit a non-pending review")
            if not isinstance(event, str):
                raise errors.ReviewRefused("Event is required to submit a review")
            state = self._review_state(pull, event, body, review["user"])
            review = {**review, "state": state, "body": body or review["body"],
                      "submitted_at": self.clock.now()}
            self._put_review(review)
            self._submitted(repo, pull, review)
        return self.review_json(repo, review)

    def dismiss(self, repo, number, review_id, message):
        """`pulls/dismiss-review` of a submitted review: it no longer counts for protection."""
        with self.store.transaction():
            pull, review = self.find(repo, number, review_id)
            if review["state"] == "PENDING":
                raise errors.ReviewRefused("Can not dismiss a pending review")
            review = {**review, "state": "DISMISSED"}
            self._put_review(review)
            self.emit("pull_request_review", lambda: self._review_event("dismissed", repo,
                                                                        pull, review))
        return self.review_json(repo, review)

    def list(self, repo, number, page):
        """`pulls/list-reviews`: a `Listing` of a PR's reviews (pending ones only to their
        author)."""
        pull = self.rules.pulls.find(repo, number)
        actor = self.accounts.actor_login
        found = [r for r in self._reviews(repo, pull)
                 if r["state"] != "PENDING" or r["user"].lower() == actor.lower()]
        return Listing([self.review_json(repo, r) for r in page.of(found)], len(found))

    def get(self, repo, number, review_id):
        """`pulls/get-review`."""
        return self.review_json(repo, self.find(repo, number, review_id)[1])

    def latest(self, repo, pull):
        """Each reviewer's latest approving or changes-requesting review (what protection
        counts), `{login: review}`."""
        latest = {}
        for review in self._reviews(repo, pull):
            if review["state"] in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                latest[review["user"].lower()] = review
        return latest

    # requested reviewers -------------------------------------------------------------------

    def request(self, repo, number, logins, *, teams=()):
        """`pulls/request-reviewers`: each must be a collaborator and not the PR's author;
        `teams` are refused (not modelled)."""
        check_teams(teams)
        with self.store.transaction():
            pull = self.rules.pulls.find(repo, number)
            current = pull.get("requested_reviewers", [])
            found = []
            for login in logins:
                record = self.accounts.collaborator(login)
                if record is None:
                    raise errors.Unprocessable(
                        "Reviews may only be requested from collaborators. One or more of "
                        "the users or teams you specified is not a collaborator of the "
                        f"{self.repos.json(repo)['full_name']} repository.")
                if record["login"].lower() == pull["user"].lower():
                    raise errors.Unprocessable(
                        "Review cannot be requested from pull request author.")
                found.append(record["login"])
            changed = [x for x in found if x not in current]
            return self._requested(repo, pull, [*current, *changed], changed,
                                   "review_requested")

    def unrequest(self, repo, number, logins):
        """`pulls/remove-requested-reviewers`."""
        with self.store.transaction():
            pull = self.rules.pulls.find(repo, number)
            current = pull.get("requested_reviewers", [])
            gone = {login.lower() for login in logins}
            return self._requested(repo, pull, [x for x in current if x.lower() not in gone],
                                   [x for x in current if x.lower() in gone],
                                   "review_request_removed")

    def _requested(self, repo, pull, after, changed, action):
        updated = {**pull, "requested_reviewers": after, "updated_at": self.clock.now()}
        self.rules.pulls.put(updated, pull)
        for login in changed:
            self.emit("pull_request", lambda login=login: events.pull_request(
                action, self.rules.pulls.json(repo, updated), self.accounts.sender(),
                requested_reviewer=self.accounts.json(login)))
        return self.rules.pulls.json(repo, updated, full=False)

    def requested(self, repo, number):
        """`pulls/list-requested-reviewers`: `{users, teams}`."""
        pull = self.rules.pulls.find(repo, number)
        return {"users": [self.accounts.json(x) for x in pull.get("requested_reviewers", [])],
                "teams": []}

    # records and shapes --------------------------------------------------------------------

    def _head_sha(self, repo, pull):
        if pull["state"] != "open":
            return pull["head_sha"]
        return self.repos.tips(repo["key"], (pull["head_ref"],)).get(pull["head_ref"],
                                                                     pull["head_sha"])

    def _review_state(self, pull, event, body, actor):
        """The state a review submitted with `event` takes, as GitHub checks it: a known event,
        not approving (or requesting changes on) one's own PR, a body where one is needed."""
        if event not in EVENTS:
            raise errors.ReviewRefused(
                "Variable $event of type PullRequestReviewEvent was provided invalid value")
        if actor.lower() == pull["user"].lower():
            if event == "APPROVE":
                raise errors.ReviewRefused("Can not approve your own pull request")
            if event == "REQUEST_CHANGES":
                raise errors.ReviewRefused("Can not request changes on your own pull request")
        if event in ("REQUEST_CHANGES", "COMMENT") and not body:
            raise errors.ReviewRefused(f"A {event} review needs a body")
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

    def find(self, repo, number, review_id):
        """(PR record, review record) of a review of PR `number`; 404 when either is not
        there."""
        pull = self.rules.pulls.find(repo, number)
        review = self.store.item(REVIEWS, f"{repo['key']}:{review_id}")
        if review is None or review["number"] != pull["number"]:
            raise errors.NotFound()
        return pull, review

    def _put_review(self, review):
        self.store.put_item(REVIEWS, f"{review['repo']}:{review['id']}", review)

    def review_json(self, repo, review):
        """A review record as GitHub shows it (`pull-request-review`)."""
        return shapes.review(*self.repos.urls(repo), review,
                             user=self.accounts.json(review["user"]),
                             association=self.accounts.association(repo, review["user"]))
