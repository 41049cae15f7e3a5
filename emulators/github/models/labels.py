"""Labels: a repository's labels and those on its issues and pull requests, and the `label`
event (and an issue's or PR's `labeled`/`unlabeled`, sent by issues.py).

Naming a label an issue does not have in the repository makes it, as GitHub does; renaming or
deleting one carries to every issue and PR.
"""
import re
from urllib.parse import quote

from .. import errors, ids, schemas
from ..store import ISSUES, LABELS

COLOR = re.compile(r"^[0-9a-fA-F]{6}\Z")
DEFAULT_COLOR = "ededed"  # the colour GitHub gives a label made by naming it on an issue
MAX_LABELS = 100  # GitHub's limit of labels on one issue
TOO_MANY_LABELS = f"An issue can have at most {MAX_LABELS} labels"


class LabelRules:
    """Create, change and read labels; `rules` reaches issues (the issue or PR a label is put
    on, written back with its events) and pulls (a PR renamed labels are carried to)."""

    def __init__(self, store, clock, *, emit, accounts, repos, rules):
        self.store = store
        self.clock = clock
        self.emit = emit
        self.accounts = accounts
        self.repos = repos
        self.rules = rules

    def ref_json(self, repo, name):
        label = self.store.item(LABELS, f"{repo['key']}:{name.lower()}")
        return self.json(repo, label or _made_label(name, 0, ""))

    def list_repo_labels(self, owner, name, pairs):
        repo = self.repos.find(owner, name, "issues/list-labels-for-repo")
        found = sorted(self.store.items(LABELS, {"repo": repo["key"]}),
                       key=lambda label: label["name"].lower())
        shown, page, last = schemas.page_of(found, pairs)
        return [self.json(repo, label) for label in shown], page, last

    def create_label(self, owner, name, parsed):
        op = "issues/create-label"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        label_name = body.get("name")
        if not isinstance(label_name, str) or not label_name.strip():
            raise errors.ValidationFailed(op, resource="Label", field="name",
                                          code="missing_field")
        schemas.check_length(label_name, schemas.MAX_LABEL, op, "Label", "name")
        color = _color(body.get("color", DEFAULT_COLOR), op)
        description = _description(body.get("description"), op)
        with self.store.transaction():
            if self.store.item(LABELS, f"{repo['key']}:{label_name.lower()}") is not None:
                raise errors.ValidationFailed(op, resource="Label", field="name",
                                              code="already_exists")
            label = self._make_label(repo, label_name, color, description)
        return self.json(repo, label)

    def get_label(self, owner, name, label_name):
        op = "issues/get-label"
        repo = self.repos.find(owner, name, op)
        return self.json(repo, self._label(repo, label_name, op))

    def update_label(self, owner, name, label_name, parsed):
        op = "issues/update-label"
        repo = self.repos.find(owner, name, op)
        body = schemas.json_object(parsed, op)
        with self.store.transaction():
            before = self._label(repo, label_name, op)
            label = dict(before)
            if "new_name" in body:
                if not isinstance(body["new_name"], str) or not body["new_name"].strip():
                    raise errors.ValidationFailed(op, resource="Label", field="name")
                schemas.check_length(body["new_name"], schemas.MAX_LABEL, op, "Label", "name")
                label["name"] = body["new_name"]
            if "color" in body:
                label["color"] = _color(body["color"], op)
            if "description" in body:
                label["description"] = _description(body["description"], op)
            if label["name"].lower() != before["name"].lower():
                if self.store.item(LABELS, f"{repo['key']}:{label['name'].lower()}"):
                    raise errors.ValidationFailed(op, resource="Label", field="name",
                                                  code="already_exists")
                self.store.delete_item(LABELS, f"{repo['key']}:{before['name'].lower()}")
            self.store.put_item(LABELS, f"{repo['key']}:{label['name'].lower()}", label)
            if label["name"] != before["name"]:
                self._rename_on_issues(repo, before["name"], label["name"])
            changes = {f: {"from": before[f]} for f in ("name", "color", "description")
                       if before[f] != label[f]}
            self.emit("label", lambda: {"action": "edited", "label": self.json(
                repo, label), "changes": changes, "repository": self.repos.json(repo),
                "sender": self.accounts.sender()})
        return self.json(repo, label)

    def delete_label(self, owner, name, label_name):
        op = "issues/delete-label"
        repo = self.repos.find(owner, name, op)
        with self.store.transaction():
            label = self._label(repo, label_name, op)
            self.store.delete_item(LABELS, f"{repo['key']}:{label['name'].lower()}")
            self._rename_on_issues(repo, label["name"], None)
            self.emit("label", lambda: {
                "action": "deleted", "label": self.json(repo, label),
                "repository": self.repos.json(repo), "sender": self.accounts.sender()})
        return label

    def _rename_on_issues(self, repo, old, new):
        """Carry a label's new name (or its deletion, `new` None) onto every issue and PR."""
        lowered = old.lower()
        for collection, rows in ((ISSUES, self.store.items(ISSUES, {"repo": repo["key"]})),
                                 (None, self.store.pulls({"repo": repo["key"]}, order_by=None,
                                                         desc=False, limit=None, offset=0))):
            for row in rows:
                names = row.get("labels", [])
                if lowered not in (n.lower() for n in names):
                    continue
                kept = [n for n in names if n.lower() != lowered] + ([new] if new else [])
                row = {**row, "labels": kept}
                if collection is None:
                    self.rules.pulls.put(row, row)
                else:
                    self.rules.issues.put(row, row)

    def _label(self, repo, label_name, op):
        label = self.store.item(LABELS, f"{repo['key']}:{label_name.lower()}")
        if label is None:
            raise errors.NotFound(op)
        return label

    def _make_label(self, repo, label_name, color, description):
        number = self.store.next_id("label_ids")
        label = {**_made_label(label_name, number, color, description), "repo": repo["key"]}
        self.store.put_item(LABELS, f"{repo['key']}:{label_name.lower()}", label)
        self.emit("label", lambda: {"action": "created", "label": self.json(repo, label),
                                    "repository": self.repos.json(repo),
                                    "sender": self.accounts.sender()})
        return label

    def names(self, repo, given, op):
        """The label names of an issue write (strings or `{name}` objects), each made in the
        repository if it is new (as GitHub does), in the repository's spelling."""
        if isinstance(given, dict):  # add/set take {"labels": [...]} or the bare array
            given = given.get("labels", [])
        if not isinstance(given, list):
            raise errors.ValidationFailed(op, resource="Label", field="labels")
        if len(given) > MAX_LABELS:  # checked before any label is made
            raise errors.ValidationFailed(op, resource="Label", field="labels",
                                          custom=TOO_MANY_LABELS)
        names = []
        for item in given:
            label_name = item.get("name") if isinstance(item, dict) else item
            if not isinstance(label_name, str) or not label_name.strip():
                raise errors.ValidationFailed(op, resource="Label", field="name")
            schemas.check_length(label_name, schemas.MAX_LABEL, op, "Label", "name")
            label = self.store.item(LABELS, f"{repo['key']}:{label_name.lower()}") \
                or self._make_label(repo, label_name, DEFAULT_COLOR, None)
            if label["name"] not in names:
                names.append(label["name"])
        return names

    def add_labels(self, owner, name, raw_number, parsed, *, replace=False):
        op = "issues/set-labels" if replace else "issues/add-labels"
        repo = self.repos.find(owner, name, op)
        kind, value = parsed
        given = value if kind == "json" else [] if kind == "empty" else None
        if given is None:
            raise errors.ProblemsParsingJSON(op)
        with self.store.transaction():
            before = self.rules.issues.conversation(repo, raw_number, op)
            names = self.names(repo, given, op)
            labels = names if replace else [*before.get("labels", []),
                                            *(n for n in names
                                              if n not in before.get("labels", []))]
            if len(labels) > MAX_LABELS:
                raise errors.ValidationFailed(op, resource="Label", field="labels",
                                              custom=TOO_MANY_LABELS)
            after = {**before, "labels": labels, "updated_at": self.clock.now()}
            self.rules.issues.store_conversation(repo, before, after)
        return self.on_issue(repo, after)

    def remove_label(self, owner, name, raw_number, label_name):
        op = "issues/remove-label"
        repo = self.repos.find(owner, name, op)
        with self.store.transaction():
            before = self.rules.issues.conversation(repo, raw_number, op)
            kept = [n for n in before.get("labels", []) if n.lower() != label_name.lower()]
            if len(kept) == len(before.get("labels", [])):
                raise errors.NotFound(op, "Label does not exist")
            after = {**before, "labels": kept, "updated_at": self.clock.now()}
            self.rules.issues.store_conversation(repo, before, after)
        return self.on_issue(repo, after)

    def remove_all_labels(self, owner, name, raw_number):
        op = "issues/remove-all-labels"
        repo = self.repos.find(owner, name, op)
        with self.store.transaction():
            before = self.rules.issues.conversation(repo, raw_number, op)
            after = {**before, "labels": [], "updated_at": self.clock.now()}
            self.rules.issues.store_conversation(repo, before, after)

    def list_issue_labels(self, owner, name, raw_number):
        op = "issues/list-labels-on-issue"
        repo = self.repos.find(owner, name, op)
        return self.on_issue(repo, self.rules.issues.conversation(repo, raw_number, op))

    def on_issue(self, repo, issue):
        return [self.ref_json(repo, n) for n in issue.get("labels", [])]

    def json(self, repo, label):
        return {"id": label["id"], "node_id": label["node_id"],
                "url": f"{self.repos.url(repo)}/labels/{quote(label['name'], safe='')}",
                "name": label["name"], "color": label["color"], "default": False,
                "description": label["description"],
                # newer descriptions than the schemas' (githubkit's) require these two
                "archived_at": None, "archived_by": None}


def _made_label(name, number, color, description=None):
    return {"id": number, "node_id": ids.node_id("github", "LA_", number), "name": name,
            "color": color or DEFAULT_COLOR, "description": description}


def _color(value, op):
    if not isinstance(value, str) or not COLOR.match(value.lstrip("#")):
        raise errors.ValidationFailed(op, resource="Label", field="color")
    return value.lstrip("#").lower()


def _description(value, op):
    if value is not None and (not isinstance(value, str) or len(value) > 100):
        raise errors.ValidationFailed(op, resource="Label", field="description")
    return value
