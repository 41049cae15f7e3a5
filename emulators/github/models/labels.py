"""Labels: a repository's labels and those on its issues and pull requests, and the `label`
event (and an issue's or PR's `labeled`/`unlabeled`, sent by issues.py).

Naming a label an issue does not have in the repository makes it, as GitHub does; renaming or
deleting one carries to every issue and PR.
"""

from .. import errors, ids, shapes
from ..inputs import UNCHANGED, Listing
from ..store import ISSUES, LABELS
from .rule import Rule

DEFAULT_COLOR = "ededed"  # the colour GitHub gives a label made by naming it on an issue
MAX_LABELS = 100  # GitHub's limit of labels on one issue
TOO_MANY_LABELS = f"An issue can have at most {MAX_LABELS} labels"


class LabelRules(Rule):
    """Create, change and read labels; `rules` reaches issues (the issue or PR a label is put
    on, written back with its events) and pulls (a PR renamed labels are carried to)."""

    def ref_json(self, repo, name):
        label = self.store.item(LABELS, f"{repo['key']}:{name.lower()}")
        return self.json(repo, label or _made_label(name, 0, ""))

    def list(self, repo, page):
        """`issues/list-labels-for-repo`: a `Listing` of labels, by name."""
        found = sorted(self.store.items(LABELS, {"repo": repo["key"]}),
                       key=lambda label: label["name"].lower())
        return Listing([self.json(repo, label) for label in page.of(found)], len(found))

    def create(self, repo, name, *, color=DEFAULT_COLOR, description=None):
        """`issues/create-label` (`color`: six hex digits, lower-cased)."""
        with self.store.transaction():
            if self.store.item(LABELS, f"{repo['key']}:{name.lower()}") is not None:
                raise errors.ValidationFailed(resource="Label", field="name",
                                              code="already_exists")
            label = self._make_label(repo, name, color, description)
        return self.json(repo, label)

    def find(self, repo, name):
        """The label record `name` (any case); 404 when there is none."""
        return self._record(LABELS, repo, name.lower())

    def get(self, repo, name):
        """`issues/get-label`."""
        return self.json(repo, self.find(repo, name))

    def update(self, repo, name, *, new_name=UNCHANGED, color=UNCHANGED,
               description=UNCHANGED):
        """`issues/update-label`: a new name is carried to every issue and PR."""
        with self.store.transaction():
            before = self.find(repo, name)
            label = dict(before)
            for field, value in (("name", new_name), ("color", color),
                                 ("description", description)):
                if value is not UNCHANGED:
                    label[field] = value
            if label["name"].lower() != before["name"].lower():
                if self.store.item(LABELS, f"{repo['key']}:{label['name'].lower()}"):
                    raise errors.ValidationFailed(resource="Label", field="name",
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

    def delete(self, repo, name):
        """`issues/delete-label`: it leaves every issue and PR; the label deleted."""
        with self.store.transaction():
            label = self.find(repo, name)
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

    def _make_label(self, repo, label_name, color, description):
        number = self.store.next_id("label_ids")
        label = {**_made_label(label_name, number, color, description), "repo": repo["key"]}
        self.store.put_item(LABELS, f"{repo['key']}:{label_name.lower()}", label)
        self.emit("label", lambda: {"action": "created", "label": self.json(repo, label),
                                    "repository": self.repos.json(repo),
                                    "sender": self.accounts.sender()})
        return label

    def names(self, repo, names):
        """The labels `names` name, each made in the repository if it is new (as GitHub
        does), in the repository's spelling, once each; at most 100 (422)."""
        _check_count(names)
        found = []
        for name in names:
            label = self.store.item(LABELS, f"{repo['key']}:{name.lower()}") \
                or self._make_label(repo, name, DEFAULT_COLOR, None)
            if label["name"] not in found:
                found.append(label["name"])
        return found

    def add(self, repo, number, names):
        """`issues/add-labels` to an issue or a PR: its labels after."""
        return self._relabel(repo, number, names, replace=False)

    def replace(self, repo, number, names):
        """`issues/set-labels`: its labels after."""
        return self._relabel(repo, number, names, replace=True)

    def _relabel(self, repo, number, names, *, replace):
        with self.store.transaction():
            before = self.rules.issues.conversation(repo, number)
            names = self.names(repo, names)
            labels = names if replace else [*before.get("labels", []),
                                            *(n for n in names
                                              if n not in before.get("labels", []))]
            _check_count(labels)
            return self._relabelled(repo, before, labels)

    def _relabelled(self, repo, before, labels):
        after = {**before, "labels": labels, "updated_at": self.clock.now()}
        self.rules.issues.store_conversation(repo, before, after)
        return self.on_issue(repo, after)

    def remove(self, repo, number, name):
        """`issues/remove-label`: the labels left (404 `Label does not exist`)."""
        with self.store.transaction():
            before = self.rules.issues.conversation(repo, number)
            kept = [n for n in before.get("labels", []) if n.lower() != name.lower()]
            if len(kept) == len(before.get("labels", [])):
                raise errors.NotFound("Label does not exist")
            return self._relabelled(repo, before, kept)

    def clear(self, repo, number):
        """`issues/remove-all-labels`."""
        with self.store.transaction():
            self._relabelled(repo, self.rules.issues.conversation(repo, number), [])

    def of_issue(self, repo, number):
        """`issues/list-labels-on-issue`."""
        return self.on_issue(repo, self.rules.issues.conversation(repo, number))

    def on_issue(self, repo, issue):
        return [self.ref_json(repo, n) for n in issue.get("labels", [])]

    def json(self, repo, label):
        """A label record as GitHub shows it (`label`)."""
        return shapes.label(self.repos.url(repo), label)


def _check_count(labels):
    if len(labels) > MAX_LABELS:
        raise errors.ValidationFailed(resource="Label", field="labels", custom=TOO_MANY_LABELS)


def _made_label(name, number, color, description=None):
    return {"id": number, "node_id": ids.node_id("github", "LA_", number), "name": name,
            "color": color or DEFAULT_COLOR, "description": description}
