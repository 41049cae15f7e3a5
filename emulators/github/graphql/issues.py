"""Issues and what a conversation holds: `Issue`, `IssueComment`, `Label`, and the fields an
issue and a pull request share (`Conversation`), from REST's shapes."""
from . import connections
from .actors import actor
from .context import every


class Label:
    typename = "Label"

    def __init__(self, rest):
        self.id = rest["node_id"]
        self.name = rest["name"]
        self.color = rest["color"]
        self.description = rest["description"]
        self.is_default = rest["default"]
        self.url = rest["url"]


class IssueComment:
    typename = "IssueComment"

    def __init__(self, rest):
        self.id = rest["node_id"]
        self.database_id = rest["id"]
        self.body = rest["body"]
        self.body_text = rest["body"]
        self.author = actor(rest["user"])
        self.author_association = rest["author_association"]
        self.created_at, self.updated_at = rest["created_at"], rest["updated_at"]
        self.published_at = rest["created_at"]
        self.last_edited_at = None
        self.includes_created_edit = False
        self.is_minimized = False
        self.minimized_reason = None
        self.url = rest["html_url"]
        self.viewer_did_author = False
        self.reaction_groups = []


class Conversation:
    """What an issue and a pull request both answer (`rest`: its REST shape, issue or pull;
    `repository`: the repository's GraphQL object, whose `backend` and `record` the rules
    take)."""

    def __init__(self, repository, rest):
        self.repository, self.rest = repository, rest
        self.backend, self.record = repository.backend, repository.record
        self.number = rest["number"]
        self.title = rest["title"]
        self.body = rest["body"] or ""
        self.body_text = self.body
        self.url = rest["html_url"]
        self.resource_path = rest["html_url"].split("/", 3)[-1]
        self.created_at, self.updated_at = rest["created_at"], rest["updated_at"]
        self.closed_at = rest["closed_at"]
        self.closed = rest["state"] == "closed"
        self.locked = False
        self.author_association = rest["author_association"]
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
        self.id = rest["node_id"]
        self.database_id = rest["id"]
        self.state = rest["state"].upper()
        self.state_reason = rest["state_reason"].upper() if rest["state_reason"] else None
        self.is_pinned = False
