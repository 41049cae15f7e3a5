"""One provider call's work, as both http layers (REST's `resources/`, `graphql/`) and the admin
controls start it: the backend its rules run on, acting as whom its credential names, and the
journaling of a write it made.

A write that succeeds is journaled as accepted (with its ids and checkpoint) and honours the
`github.accepted_drop` effect: committed, then its answer is lost.
"""
from . import actors, context
from .credentials import identify, rules as rules_of
from .models import GitHubBackend
from .models.apps import AppDeliveries
from .presets import ACCEPTED_DROP


def backend_for(instance, environ=None):
    """Build the rules object over one instance's records, clock, transaction and base URL,
    acting as whom the request's credential names (`environ`; none: the default member: a
    user's token is that user, an App's installation token its `<slug>[bot]`), its events
    sent to the namespace's hooks and to the Apps installed where they happen."""
    actor = (lambda: identify(instance, environ).login) if environ is not None \
        else actors.DEFAULT
    return GitHubBackend(instance.records, now_ms=instance.now_ms,
                         transaction=instance.transaction, base_url=context.public_base(instance),
                         emit=deliveries(instance), objects=instance.objects, actor=actor,
                         named=instance.names_user)


def deliveries(instance):
    """The emitter of a request: the namespace's hooks, and the Apps installed where an event
    happens (`models.apps.AppDeliveries`)."""
    return AppDeliveries(rules_of(instance), emit=instance.emit, emit_to=instance.emit_to)


def accepted(instance, **ids):
    """Journal a committed write as accepted (with its ids); under the effect, lose the answer.

    Every successful write is accepted (journaled with `accepted: true` and its checkpoint); the
    runtime reuses that checkpoint for `x-mockingbird-checkpoint`.
    """
    instance.report_ids(**ids)
    instance.accept()
    if instance.fault_effect(ACCEPTED_DROP) is not None:
        instance.drop()
