"""Issues and what a conversation holds: `Issue`, `IssueComment`, `Label`, and the fields an
issue and a pull request share (`Conversation`), from REST's shapes."""
from . import connections
from .actors import actor
from .context import every
from .resolve import from_rest


class Label:
    typename = "Label"

    def __init__(self, rest):
        from_rest(self, rest, "name", "color", "description", "url", id="node_id",
                  is_default="default")


class IssueComment:
    typename = "IssueComment"

    def __init__(self, rest):
        from_rest(self, rest, "body", "author_association", "created_at", "updated_at",
                  id="node_id", database_id="id", body_text="body", published_at="created_at",
                  url="html_url")
        self.author = actor(rest["user"])
        self.last_edited_at = None
        self.includes_created_edit = False
        self.is_minimized = False
        self.minimized_reason = None
        self.viewer_did_author = False
        self.reaction_groups = []


class Conversation:
    """What an issue and a pull request both answer (`rest`: its REST shape, issue or pull;
    `repository`: the repository's GraphQL object, whose `backend` and `record` the rules
    take)."""

    def __init__(self, repository, rest):
        self.repository, self.rest = repository, rest
        self.backend, self.record = repository.backend, repository.record
        from_rest(self, rest, "number", "title", "created_at", "updated_at", "closed_at",
                  "author_association", url="html_url")
        self.body = self.body_text = rest["body"] or ""
        self.resource_path = rest["html_url"].split("/", 3)[-1]
        self.closed = rest["state"] == "closed"
        self.locked = False
        self.milestone = None  # milestones are not modelled
        self.reaction_groups = []
        self.author = actor(rest["user"])
        self.viewer_can_update = True

    def labels(self, info, first=None, last=None, after=None, before=None, order_by=None):
        return connections.page([Label(label) for label in self.rest["labels"]], first, last,
                                after, before, field="labels")

    def assignees(self, info, first=None, last=None, after=None, before=None):
        return connections.page([actor(a) for a in self.rest["assignees"]], first, last,
                                after, before, field="assignees")

    def comments(self, info, first=None, last=None, after=None, before=None, order_by=None):
        comments = every(lambda page: self.backend.issues.comments(self.record, self.number,
                                                                   page))
        return connections.page([IssueComment(c) for c in comments], first, last, after, before,
                                field="comments")


class Issue(Conversation):
    typename = "Issue"

    def __init__(self, repository, rest):
        super().__init__(repository, rest)
        from_rest(self, rest, id="node_id", database_id="id")
        self.state = rest["state"].upper()
        self.state_reason = rest["state_reason"].upper() if rest["state_reason"] else None
        self.is_pinned = False
