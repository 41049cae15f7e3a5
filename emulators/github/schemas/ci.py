"""CI results: `repos/create-commit-status`, and check runs (`checks/create`, `checks/update`)."""
from marshmallow import post_load

from .. import times
from ..models.checks import CONCLUSIONS, STATUSES
from ..models.statuses import STATES
from ..models.texts import MAX_DESCRIPTION, MAX_OUTPUT
from .base import (Again, Body, Value, at_most, check, custom, invalid, load, missing, nonblank,
                   one_of, text)


def _status_text(field):
    return text(invalid(field, "Status"), allow_none=True)


class _Status(Body):
    state = Value(custom("state is not included in the list", "state", "Status"), required=True,
                  validate=one_of(STATES, custom("state is not included in the list", "state",
                                                 "Status")))
    target_url = _status_text("target_url")
    description = _status_text("description")
    context = _status_text("context")
    description_length = Again("description", None, allow_none=True,
                               validate=at_most(MAX_DESCRIPTION, "description", "Status"))


STATUS = _Status()


def status(body):
    """`{state, target_url, description, context}` of a commit status."""
    return load(STATUS, body)


def _time(value):
    try:
        return times.normalized(value)
    except ValueError:
        return None


def _run(field, kinds=str, **kwargs):
    return Value(invalid(field, "CheckRun"), kinds, **kwargs)


def _parsed(field):
    """A time given as text (null allowed), which must be ISO 8601."""
    return Again(field, invalid(field, "CheckRun"), allow_none=True, validate=check(
        lambda v: v is None or _time(v) is not None, invalid(field, "CheckRun")))


def _output(value):
    return isinstance(value, dict) and all(isinstance(value.get(f), str)
                                           for f in ("title", "summary"))


def _at_most_output(field):
    problem = custom(f"{field} is too long (maximum is {MAX_OUTPUT} characters)", field,
                     "CheckRun")
    return check(lambda v: not isinstance(v, dict) or not isinstance(v.get(field), str)
                 or len(v[field]) <= MAX_OUTPUT, problem)


# what a create or an update may set, in GitHub's order of checks
_RUN = {
    "details_url": _run("details_url", allow_none=True),
    "external_id": _run("external_id", allow_none=True),
    "started_at": _run("started_at", allow_none=True),
    "completed_at": _run("completed_at", allow_none=True),
    "started_at_parsed": _parsed("started_at"),
    "completed_at_parsed": _parsed("completed_at"),
    "status": _run("status", None, validate=one_of(STATUSES, invalid("status", "CheckRun"))),
    "conclusion": _run("conclusion", None, allow_none=True, validate=check(
        lambda v: v is None or v in CONCLUSIONS, invalid("conclusion", "CheckRun"))),
    "output": _run("output", None, validate=check(_output, invalid("output", "CheckRun"))),
    "output_length": Again("output", None, validate=[_at_most_output("summary"),
                                                     _at_most_output("text")]),
}


class _Run(Body):
    @post_load
    def _typed(self, data, **kwargs):
        for field in ("started_at", "completed_at"):  # GitHub answers the time it parsed, UTC
            if data.get(field) is not None:
                data[field] = _time(data[field])
        if "external_id" in data:
            data["external_id"] = data["external_id"] or ""
        if "conclusion" in data and data["conclusion"] is None:  # null concludes nothing
            del data["conclusion"]
        return data


_HEAD = {
    "name": text(missing("name", "CheckRun"), required=True,
                 validate=nonblank(missing("name", "CheckRun"))),
    "head_sha": text(missing("head_sha", "CheckRun"), required=True,
                     validate=nonblank(missing("head_sha", "CheckRun"))),
}
RUN_HEAD = Body.from_dict(_HEAD, name="RunHead")()
CREATE_RUN = _Run.from_dict({**_HEAD, **_RUN}, name="CreateRun")()
UPDATE_RUN = _Run.from_dict({
    "name": text(invalid("name", "CheckRun"), validate=check(bool, invalid("name", "CheckRun"))),
    **_RUN}, name="UpdateRun")()


def run_head(body):
    """`{name, head_sha}` of a new run: checked, and its commit, before what else it sets."""
    return load(RUN_HEAD, body)


def create_run(body):
    """`{name, head_sha}` and what the new run sets."""
    return load(CREATE_RUN, body)


def update_run(body):
    """What a run update sets (`name` first)."""
    return load(UPDATE_RUN, body)
