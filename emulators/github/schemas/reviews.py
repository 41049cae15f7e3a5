"""Reviews: `pulls/create-review`, `pulls/submit-review`, `pulls/dismiss-review`, and requested
reviewers (`pulls/request-reviewers`, `pulls/remove-requested-reviewers`).

Which event a review may take depends on the pull request and on who acts, so the rules check
`event` (reviews.py); here is what a body must hold whatever the state.
"""
from marshmallow import validates_schema

from ..models.reviews import check_body, check_comments, check_teams
from .base import Body, Value, by_rule, check, invalid, load, refused


def _any():
    """A value the rules check (or keep as it is)."""
    return Value(None, allow_none=True)


class _CreateReview(Body):
    comments = Value(None, allow_none=True, validate=by_rule(check_comments))
    body = Value(None, allow_none=True, validate=by_rule(check_body))
    event = _any()
    commit_id = _any()


class _SubmitReview(Body):
    event = _any()
    body = _any()


class _Dismissal(Body):
    message = Value(refused("Message is required to dismiss a review"), str, required=True,
                    validate=check(bool, refused("Message is required to dismiss a review")))


def _logins(value):
    return isinstance(value, list) and all(isinstance(login, str) for login in value)


class _Reviewers(Body):
    reviewers = Value(invalid("reviewers"), list, load_default=(),
                      validate=check(_logins, invalid("reviewers")))
    team_reviewers = Value(invalid("reviewers"), list, load_default=())

    @validates_schema
    def _no_teams(self, data, **kwargs):
        by_rule(check_teams)(data["team_reviewers"])


CREATE, SUBMIT, DISMISSAL, REVIEWERS = (_CreateReview(), _SubmitReview(), _Dismissal(),
                                        _Reviewers())


def create(body):
    """`{event, body, commit_id, comments}` of a review (the rule refuses `comments` on lines,
    which it does not model, as this schema does)."""
    return load(CREATE, body)


def submit(body):
    """`{event, body}` of a pending review submitted."""
    return {"event": None, **load(SUBMIT, body)}


def dismissal(body):
    """The message of a dismissal."""
    return load(DISMISSAL, body)["message"]


def reviewers(body):
    """The logins of a requested reviewers write (teams are not modelled)."""
    return list(load(REVIEWERS, body)["reviewers"])
