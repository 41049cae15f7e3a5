"""Branch protection: `repos/update-branch-protection` (GitHub's body: all four of
`required_status_checks`, `enforce_admins`, `required_pull_request_reviews`, `restrictions`,
each possibly null), and the branch listing's `protected` filter."""
from marshmallow import post_load

from ..shapes.protection import FLAGS
from .base import (Again, Body, Value, check, fail, first_values, load, not_supplied,
                   unprocessable, unsupported)

_ANY_OF = unprocessable('Invalid request.\n\nNo subschema in "anyOf" matched.\n'
                        '"strict" wasn\'t supplied.')
_CONTEXTS = unprocessable("Invalid request.\n\nFor 'items', contexts must be strings.")
_REVIEWS = unprocessable("Invalid request.\n\nrequired_pull_request_reviews is not an object.")
_COUNT = unprocessable("Invalid request.\n\nrequired_approving_review_count must be 0-6.")


def _required(field):
    return Value(not_supplied(field), required=True, allow_none=True)


def _contexts(checks):
    """The required contexts: `contexts` and `checks[].context`, once each."""
    contexts = list(checks.get("contexts") or [])
    contexts += [c["context"] for c in checks.get("checks") or []
                 if isinstance(c, dict) and isinstance(c.get("context"), str)]
    return contexts


def _checks(checks):
    if checks is None:
        return
    if not isinstance(checks, dict) or not isinstance(checks.get("strict"), bool):
        fail(_ANY_OF)
    if not all(isinstance(c, str) for c in _contexts(checks)):
        fail(_CONTEXTS)


def _count(reviews):
    return reviews.get("required_approving_review_count", 1)


def _reviews(reviews):
    if reviews is None:
        return
    if not isinstance(reviews, dict):
        fail(_REVIEWS)
    count = _count(reviews)
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 6:
        fail(_COUNT)


class _Protection(Body):
    @post_load
    def _settings(self, data, **kwargs):
        checks, reviews = data["required_status_checks"], data["required_pull_request_reviews"]
        settings = {"enforce_admins": data["enforce_admins"] is True,
                    **{flag: data.get(flag) is True for flag in FLAGS}}
        if checks is not None:
            settings["checks"] = {"strict": checks["strict"],
                                  "contexts": list(dict.fromkeys(_contexts(checks)))}
        if reviews is not None:
            settings["reviews"] = {
                "count": _count(reviews),
                "dismiss_stale": reviews.get("dismiss_stale_reviews") is True,
                "code_owners": reviews.get("require_code_owner_reviews") is True,
                "last_push": reviews.get("require_last_push_approval") is True}
        return settings


PROTECTION = _Protection.from_dict({
    # all four present first, then each checked
    "required_status_checks": _required("required_status_checks"),
    "enforce_admins": _required("enforce_admins"),
    "required_pull_request_reviews": _required("required_pull_request_reviews"),
    "restrictions": _required("restrictions"),
    "checks": Again("required_status_checks", None, allow_none=True, validate=_checks),
    "reviews": Again("required_pull_request_reviews", None, allow_none=True,
                     validate=_reviews),
    "restricted": Again("restrictions", None, allow_none=True, validate=check(
        lambda v: v is None, unsupported("Mockingbird does not model push restrictions "
                                         "(users, teams, apps); send restrictions: null"))),
    **{flag: Value(None, allow_none=True) for flag in FLAGS},
}, name="Protection")()


def protection(body):
    """What a branch's protection is set to (`ProtectionRules.update`'s arguments)."""
    return load(PROTECTION, body)


def protected(pairs):
    """`?protected=true|false` of `repos/list-branches`: True, False, None when absent, and
    any other value as given (it matches no branch)."""
    value = first_values(pairs).get("protected")
    return {"true": True, "false": False}.get(value, value)
