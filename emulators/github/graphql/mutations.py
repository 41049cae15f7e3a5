"""The mutations `gh` and merge bots send, each a call of the rule REST's route calls, with
typed arguments: a pull request's opening, edits, merge, closing and reopening; comments,
reviews, review requests; issues and labels. What a rule refuses is refused here in GraphQL's
words (its checks are the rule's own); each mutation answers its payload (`clientMutationId`
echoed) and is journaled as REST's writes are, accepted with its ids."""
from .errors import could_not_resolve
from .issues import IssueComment

MERGE_METHODS = {"MERGE": "merge", "SQUASH": "squash", "REBASE": "rebase"}
# the REST operation each mutation is (an App's credential needs its permission)
OPERATIONS = {
    "createPullRequest": "pulls/create", "updatePullRequest": "pulls/update",
    "mergePullRequest": "pulls/merge", "closePullRequest": "pulls/update",
    "reopenPullRequest": "pulls/update", "addComment": "issues/create-comment",
    "addPullRequestReview": "pulls/create-review",
    "submitPullRequestReview": "pulls/submit-review", "requestReviews": "pulls/request-reviewers",
    "createIssue": "issues/create", "closeIssue": "issues/update", "reopenIssue": "issues/update",
    "addLabelsToLabelable": "issues/add-labels"}
# updatePullRequest's fields, as `pulls/update` names them
PULL_FIELDS = {"title": "title", "body": "body", "baseRefName": "base",
               "maintainerCanModify": "maintainer_can_modify"}


def _given(input, names):
    """{rule keyword: value} of the input fields `names` maps that the input sets (not null)."""
    return {keyword: input[name] for name, keyword in names.items()
            if input.get(name) is not None}


class Mutations:
    """Mutation fields of the root (`root`: to find and present objects by node id)."""

    def __init__(self, context, root):
        self.context, self.root = context, root
        self.backend = context.backend

    def _node(self, info, node_id, *kinds):
        found = self.root.node(info, node_id)
        if found is None or found.typename not in kinds:
            raise could_not_resolve("node", f"the global id of '{node_id}'")
        return found

    def _subject(self, info, node_id, *kinds):
        """The object a mutation changes (a repository, a pull request, an issue, a review),
        once the credential may do the mutation's REST operation in its repository."""
        found = self._node(info, node_id, *kinds)
        record = found.record if hasattr(found, "record") else found.pull_request.record
        self.context.allow(OPERATIONS[info.field_name], record)
        return found

    def _names(self, info, label_ids):
        return [self._node(info, label_id, "Label").name for label_id in label_ids]

    def _logins(self, info, user_ids):
        return [self._node(info, user_id, "User").login for user_id in user_ids]

    def _payload(self, input, **fields):
        return {"clientMutationId": input.get("clientMutationId"), **fields}

    # pull requests ------------------------------------------------------------------------
    def create_pull_request(self, info, input):
        repository = self._subject(info, input["repositoryId"], "Repository")
        made = self.backend.pulls.create(
            repository.record, title=input["title"], head=input["headRefName"],
            base=input["baseRefName"], body=input.get("body"),
            **_given(input, {"draft": "draft", "maintainerCanModify": "maintainer_can_modify"}))
        self.context.accepted(pullNumber=str(made["number"]))
        return self._payload(input, pullRequest=self.root.node(info, made["node_id"]))

    def update_pull_request(self, info, input):
        pull = self._subject(info, input["pullRequestId"], "PullRequest")
        record, number = pull.repository.record, pull.number
        fields = _given(input, PULL_FIELDS)
        if input.get("state"):
            fields["state"] = input["state"].lower()
        if fields:
            self.backend.pulls.update(record, number, **fields)
        if input.get("labelIds") is not None:
            self.backend.labels.replace(record, number, self._names(info, input["labelIds"]))
        if input.get("assigneeIds") is not None:
            self.backend.issues.update(record, number,
                                       assignees=self._logins(info, input["assigneeIds"]))
        self.context.accepted(pullNumber=str(number))
        return self._payload(input, pullRequest=self.root.node(info, pull.id))

    def merge_pull_request(self, info, input):
        pull = self._subject(info, input["pullRequestId"], "PullRequest")
        merged = self.backend.merges.merge(
            pull.repository.record, pull.number,
            merge_method=MERGE_METHODS[input.get("mergeMethod") or "MERGE"],
            commit_title=input.get("commitHeadline"), commit_message=input.get("commitBody"),
            sha=input.get("expectedHeadOid"))
        self.context.accepted(pullNumber=str(pull.number), sha=merged["sha"])
        return self._payload(input, pullRequest=self.root.node(info, pull.id),
                             actor=self.root.viewer(info))

    def close_pull_request(self, info, input):
        return self._pull_state(info, input, "closed")

    def reopen_pull_request(self, info, input):
        return self._pull_state(info, input, "open")

    def _pull_state(self, info, input, state):
        pull = self._subject(info, input["pullRequestId"], "PullRequest")
        self.backend.pulls.update(pull.repository.record, pull.number, state=state)
        self.context.accepted(pullNumber=str(pull.number))
        return self._payload(input, pullRequest=self.root.node(info, pull.id))

    # the conversation ---------------------------------------------------------------------
    def add_comment(self, info, input):
        subject = self._subject(info, input["subjectId"], "PullRequest", "Issue")
        made = self.backend.issues.create_comment(subject.repository.record, subject.number,
                                                  input["body"])
        self.context.accepted(commentId=str(made["id"]))
        comment = IssueComment(made)
        return self._payload(input, subject=self.root.node(info, subject.id),
                             commentEdge={"cursor": comment.id, "node": comment},
                             timelineEdge=None)

    def add_pull_request_review(self, info, input):
        pull = self._subject(info, input["pullRequestId"], "PullRequest")
        made = self.backend.reviews.create(
            pull.repository.record, pull.number, event=input.get("event"),
            body=input.get("body"), commit_id=input.get("commitOID"),
            comments=[*(input.get("comments") or ()), *(input.get("threads") or ())])
        return self._review(info, input, pull.number, made)

    def submit_pull_request_review(self, info, input):
        review = self._subject(info, input.get("pullRequestReviewId") or "",
                               "PullRequestReview")
        pull = review.pull_request
        made = self.backend.reviews.submit(pull.repository.record, pull.number,
                                           review.database_id, event=input["event"],
                                           body=input.get("body"))
        return self._review(info, input, pull.number, made)

    def _review(self, info, input, number, made):
        self.context.accepted(pullNumber=str(number), reviewId=str(made["id"]))
        return self._payload(input, pullRequestReview=self.root.node(info, made["node_id"]))

    def request_reviews(self, info, input):
        """Ask the users for a review: besides those asked already (`union`), or instead of
        them."""
        pull = self._subject(info, input["pullRequestId"], "PullRequest")
        record, number = pull.repository.record, pull.number
        logins = self._logins(info, input.get("userIds") or ())
        reviews = self.backend.reviews
        if not input.get("union"):
            wanted = {login.lower() for login in logins}
            gone = [user["login"] for user in reviews.requested(record, number)["users"]
                    if user["login"].lower() not in wanted]
            if gone:
                reviews.unrequest(record, number, gone)
        reviews.request(record, number, logins, teams=input.get("teamIds") or ())
        self.context.accepted(pullNumber=str(number))
        return self._payload(input, pullRequest=self.root.node(info, pull.id),
                             requestedReviewersEdge=None)

    # issues and labels --------------------------------------------------------------------
    def create_issue(self, info, input):
        repository = self._subject(info, input["repositoryId"], "Repository")
        made = self.backend.issues.create(
            repository.record, title=input["title"], body=input.get("body"),
            labels=self._names(info, input.get("labelIds") or ()),
            assignees=self._logins(info, input.get("assigneeIds") or ()))
        self.context.accepted(issueNumber=str(made["number"]))
        return self._payload(input, issue=self.root.node(info, made["node_id"]))

    def close_issue(self, info, input):
        reason = input.get("stateReason")
        return self._issue_state(info, input, "closed", reason.lower() if reason else None)

    def reopen_issue(self, info, input):
        return self._issue_state(info, input, "open", None)

    def _issue_state(self, info, input, state, reason):
        issue = self._subject(info, input["issueId"], "Issue")
        self.backend.issues.update(issue.repository.record, issue.number, state=state,
                                   state_reason=reason)
        self.context.accepted(issueNumber=str(issue.number))
        return self._payload(input, issue=self.root.node(info, issue.id))

    def add_labels_to_labelable(self, info, input):
        subject = self._subject(info, input["labelableId"], "PullRequest", "Issue")
        self.backend.labels.add(subject.repository.record, subject.number,
                                self._names(info, input["labelIds"]))
        self.context.accepted(issueNumber=str(subject.number))
        return self._payload(input, labelable=self.root.node(info, subject.id))
