"""The conversation's writes: issues (`issues/create`, `issues/update`), comments, assignees
and labels."""
import re

from marshmallow import post_load, validates_schema

from ..models.issues import check_body, check_comment, check_title, check_title_length
from ..models.labels import DEFAULT_COLOR, MAX_LABELS, TOO_MANY_LABELS
from ..models.texts import MAX_LABEL
from .base import (Again, Body, Value, at_most, by_rule, check, custom, fail, invalid, load,
                   missing, nonblank, one_of, text)

COLOR = re.compile(r"^[0-9a-fA-F]{6}\Z")
_ASSIGNEES = invalid("assignees", "Issue")


def _logins(value):
    return isinstance(value, list) and all(isinstance(login, str) for login in value)


def _label_name(item):
    return item.get("name") if isinstance(item, dict) else item


def _label_names(items):
    """Each label of an issue write: a name (or `{name}`) with text, within GitHub's length."""
    for item in items:
        name = _label_name(item)
        if not isinstance(name, str) or not name.strip():
            fail(invalid("name", "Label"))
        at_most(MAX_LABEL, "name", "Label")(name)


class LabelList(Value):
    """The labels of an issue write: names or `{name}` objects, at most 100, as an array or an
    object holding one (`{labels: [...]}`, as add and set take them)."""

    def __init__(self, **kwargs):
        super().__init__(invalid("labels", "Label"), list, **kwargs, validate=[
            check(lambda v: len(v) <= MAX_LABELS, custom(TOO_MANY_LABELS, "labels", "Label")),
            _label_names])

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, dict):
            value = value.get("labels", [])
        return super()._deserialize(value, attr, data, **kwargs)


def _title(code, **kwargs):
    problem = invalid("title", "Issue", code)
    return Value(problem, (str, int), validate=by_rule(lambda v: check_title(v, code)),
                 **kwargs)


class _Issue(Body):
    @post_load
    def _typed(self, data, **kwargs):
        if "title" in data:
            data["title"] = str(data["title"])
        if "labels" in data:
            data["labels"] = [_label_name(item) for item in data["labels"]]
        return data


class _CreateIssue(_Issue):
    title = _title("missing_field", required=True)
    body = text(invalid("body", "Issue"), allow_none=True)
    title_length = Again("title", None, validate=by_rule(check_title_length))
    body_length = Again("body", None, allow_none=True, validate=by_rule(check_body))
    labels = LabelList()
    assignees = Value(None, allow_none=True)
    assignee = Value(None, allow_none=True)

    @validates_schema
    def _assignees(self, data, **kwargs):
        if not _logins(self._wanted(data)):
            fail(_ASSIGNEES)

    @staticmethod
    def _wanted(data):
        return data.get("assignees") or ([data["assignee"]] if data.get("assignee") else [])

    @post_load
    def _assigned(self, data, **kwargs):
        data["assignees"] = self._wanted(data)
        data.pop("assignee", None)
        return data


class _UpdateIssue(_Issue):
    title = _title("invalid")
    title_length = Again("title", None, validate=by_rule(check_title_length))
    body = text(invalid("body", "Issue"), allow_none=True, validate=by_rule(check_body))
    state = text(invalid("state", "Issue"),
                 validate=one_of(("open", "closed"), invalid("state", "Issue")))
    state_reason = Value(None, allow_none=True)
    labels = LabelList()
    assignees = Value(None, allow_none=True)
    assignee = Value(None, allow_none=True)

    @validates_schema
    def _assignees(self, data, **kwargs):
        if ("assignees" in data or "assignee" in data) and not _logins(self._wanted(data)):
            fail(_ASSIGNEES)

    @staticmethod
    def _wanted(data):
        wanted = data.get("assignees")
        if wanted is None:
            wanted = [data["assignee"]] if data.get("assignee") else []
        return wanted

    @post_load
    def _assigned(self, data, **kwargs):
        if "assignees" in data or "assignee" in data:
            data["assignees"] = self._wanted(data)
        data.pop("assignee", None)
        return data


CREATE_ISSUE, UPDATE_ISSUE = _CreateIssue(), _UpdateIssue()


def create_issue(body):
    """`{title, body, labels, assignees}` of an issue to open (`assignee` read as one)."""
    return load(CREATE_ISSUE, body)


def update_issue(body):
    """What an issue update names: `title`, `body`, `state` (and `state_reason`), `labels`,
    `assignees` (or `assignee`)."""
    return load(UPDATE_ISSUE, body)


class _Comment(Body):
    body = text(missing("body", "IssueComment"), required=True, validate=by_rule(check_comment))


COMMENT = _Comment()


def comment(body):
    """The text of a comment write."""
    return load(COMMENT, body)["body"]


class _Assignees(Body):
    assignees = Value(_ASSIGNEES, list, load_default=(), validate=check(_logins, _ASSIGNEES))


ASSIGNEES = _Assignees()


def assignees(body):
    """The logins of an assignees write."""
    return list(load(ASSIGNEES, body)["assignees"])


class _Labels(_Issue):
    labels = LabelList(load_default=())


LABELS = _Labels()


def issue_labels(value):
    """The label names of `issues/add-labels` or `issues/set-labels`: `{labels: [...]}` or the
    bare array."""
    return list(load(LABELS, {"labels": value})["labels"])


def _color(problem):
    return text(problem, validate=check(lambda v: COLOR.match(v.lstrip("#")), problem))


def _description():
    return text(invalid("description", "Label"), allow_none=True,
                validate=check(lambda v: len(v) <= 100, invalid("description", "Label")))


class _Label(Body):
    @post_load
    def _typed(self, data, **kwargs):
        if "color" in data:
            data["color"] = data["color"].lstrip("#").lower()
        return data


class _CreateLabel(_Label):
    name = text(missing("name", "Label"), required=True,
                validate=[nonblank(missing("name", "Label")), at_most(MAX_LABEL, "name", "Label")])
    color = _color(invalid("color", "Label"))
    description = _description()


class _UpdateLabel(_Label):
    new_name = text(invalid("name", "Label"),
                    validate=[nonblank(invalid("name", "Label")),
                              at_most(MAX_LABEL, "name", "Label")])
    color = _color(invalid("color", "Label"))
    description = _description()


CREATE_LABEL, UPDATE_LABEL = _CreateLabel(), _UpdateLabel()


def create_label(body):
    """`{name, color, description}` of a label to create (`color` lower-cased, no `#`)."""
    return {"color": DEFAULT_COLOR, **load(CREATE_LABEL, body)}


def update_label(body):
    """What a label update names: `new_name`, `color`, `description`."""
    return load(UPDATE_LABEL, body)
