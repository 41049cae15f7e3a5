"""The mutations `gh` and merge bots send, each through the rule REST's route calls: a pull
request's opening, edits, merge, closing and reopening; comments, reviews, review requests;
issues and labels. Each answers its payload (`clientMutationId` echoed)."""
from .errors import NotFound, Unprocessable, could_not_resolve
from .issues import IssueComment

PULL_FIELDS = {"title": "title", "body": "body", "baseRefName": "base",
               "maintainerCanModify": "maintainer_can_modify"}


class Mutations:
    """Mutation fields of the root (`root`: to present what a mutation made)."""

    def __init__(self, rules, root):
        self.rules, self.root = rules, root

    def _node(self, info, node_id, *kinds):
        found = self.root.node(info, node_id)
        if found is None or found.typename not in kinds:
            raise could_not_resolve("node", f"the global id of '{node_id}'")
        return found

    def _again(self, info, pull):
        """A pull request as it is now (after a write)."""
        return self.root.node(info, pull.id)

    def create_pull_request(self, info, input):
        repository = self._node(info, input["repositoryId"], "Repository")
        head = input["headRefName"].split(":")[-1]
        made = self.rules.create_pull(
            repository.rest, title=input["title"], head=head, base=input["baseRefName"],
            body=input.get("body"), draft=input.get("draft"),
            maintainer_can_modify=input.get("maintainerCanModify"))
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequest": self.root.node(info, made["node_id"])}

    def update_pull_request(self, info, input):
        pull = self._node(info, input["pullRequestId"], "PullRequest")
        fields = {rest: input[name] for name, rest in PULL_FIELDS.items() if name in input}
        if "state" in input and input["state"]:
            fields["state"] = input["state"].lower()
        if fields:
            self.rules.update_pull(pull.repository.rest, pull.number, **fields)
        if input.get("labelIds"):
            self._label(info, pull, input["labelIds"])
        if input.get("assigneeIds"):
            raise Unprocessable("Mockingbird does not model assigneeIds here; "
                                "use addAssigneesToAssignable")
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequest": self._again(info, pull)}

    def merge_pull_request(self, info, input):
        pull = self._node(info, input["pullRequestId"], "PullRequest")
        self.rules.merge_pull(pull.repository.rest, pull.number,
                              method=input.get("mergeMethod") or "MERGE",
                              title=input.get("commitHeadline"),
                              message=input.get("commitBody"),
                              sha=input.get("expectedHeadOid"))
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequest": self._again(info, pull), "actor": self.root.viewer(info)}

    def close_pull_request(self, info, input):
        pull = self._node(info, input["pullRequestId"], "PullRequest")
        self.rules.update_pull(pull.repository.rest, pull.number, state="closed")
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequest": self._again(info, pull)}

    def reopen_pull_request(self, info, input):
        pull = self._node(info, input["pullRequestId"], "PullRequest")
        self.rules.update_pull(pull.repository.rest, pull.number, state="open")
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequest": self._again(info, pull)}

    def add_comment(self, info, input):
        subject = self._node(info, input["subjectId"], "PullRequest", "Issue")
        made = self.rules.comment(subject.repository.rest, subject.number, input["body"])
        comment = IssueComment(made)
        return {"clientMutationId": input.get("clientMutationId"), "subject": subject,
                "commentEdge": {"cursor": comment.id, "node": comment},
                "timelineEdge": None}

    def add_pull_request_review(self, info, input):
        pull = self._node(info, input["pullRequestId"], "PullRequest")
        if input.get("comments") or input.get("threads"):
            raise Unprocessable("Mockingbird does not model review comments on lines")
        made = self.rules.review(pull.repository.rest, pull.number,
                                 event=input.get("event"), body=input.get("body"),
                                 commit=input.get("commitOID"))
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequestReview": self._review(info, pull, made["node_id"])}

    def submit_pull_request_review(self, info, input):
        pull = None
        review_id = input.get("pullRequestReviewId")
        if input.get("pullRequestId"):
            pull = self._node(info, input["pullRequestId"], "PullRequest")
        found = self._find_review(info, review_id, pull)
        made = self.rules.submit_review(found.pull_request.repository.rest,
                                        found.pull_request.number, found.database_id,
                                        event=input["event"], body=input.get("body"))
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequestReview": self._review(info, found.pull_request, made["node_id"])}

    def request_reviews(self, info, input):
        pull = self._node(info, input["pullRequestId"], "PullRequest")
        if input.get("teamIds"):
            raise Unprocessable("Mockingbird does not model teams")
        logins = [self._node(info, user_id, "User").login
                  for user_id in input.get("userIds") or ()]
        if logins:
            self.rules.request_reviewers(pull.repository.rest, pull.number, logins)
        return {"clientMutationId": input.get("clientMutationId"),
                "pullRequest": self._again(info, pull), "requestedReviewersEdge": None}

    def create_issue(self, info, input):
        repository = self._node(info, input["repositoryId"], "Repository")
        labels = [self._node(info, label_id, "Label").name
                  for label_id in input.get("labelIds") or ()]
        assignees = [self._node(info, user_id, "User").login
                     for user_id in input.get("assigneeIds") or ()]
        made = self.rules.create_issue(repository.rest, title=input["title"],
                                       body=input.get("body"), labels=labels or None,
                                       assignees=assignees or None)
        return {"clientMutationId": input.get("clientMutationId"),
                "issue": self.root.node(info, made["node_id"])}

    def close_issue(self, info, input):
        issue = self._node(info, input["issueId"], "Issue")
        reason = input.get("stateReason")
        self.rules.update_issue(issue.repository.rest, issue.number, state="closed",
                                state_reason=reason.lower() if reason else None)
        return {"clientMutationId": input.get("clientMutationId"),
                "issue": self.root.node(info, issue.id)}

    def reopen_issue(self, info, input):
        issue = self._node(info, input["issueId"], "Issue")
        self.rules.update_issue(issue.repository.rest, issue.number, state="open")
        return {"clientMutationId": input.get("clientMutationId"),
                "issue": self.root.node(info, issue.id)}

    def add_labels_to_labelable(self, info, input):
        subject = self._node(info, input["labelableId"], "PullRequest", "Issue")
        self._label(info, subject, input["labelIds"])
        return {"clientMutationId": input.get("clientMutationId"),
                "labelable": self.root.node(info, subject.id)}

    def _label(self, info, subject, label_ids):
        names = [self._node(info, label_id, "Label").name for label_id in label_ids]
        self.rules.add_labels(subject.repository.rest, subject.number, names)

    def _find_review(self, info, review_id, pull):
        for candidate in ([pull] if pull else []):
            for review in candidate._reviews():
                if review.id == review_id:
                    return review
        raise NotFound(f"Could not resolve to a node with the global id of '{review_id}'.")

    def _review(self, info, pull, node_id):
        fresh = self._again(info, pull)
        return next((r for r in fresh._reviews() if r.id == node_id), None)
