"""A submission whose answer was lost, to a Hermes that ignores Idempotency-Key (0.19.0): settled
from the session transcript once Hermes answers again, never a second run for a question that
started one, and never a question left "working"."""
import pytest

from spaces.newos4.relay.hermes_client import HermesAnswer, HermesUnreachable
from spaces.newos4.relay.lost_runs import SEND_AGAIN, turn_in_transcript
from spaces.newos4.settings import Settings

from .conftest import ChatClient
from .test_approvals import ApprovingHermes, passes, relay, texts, turn  # noqa: F401

TRANSCRIPT_GRACE_S = Settings.relay_transcript_grace_s  # the default, measured on 0.19.0


class ForgetfulHermes(ApprovingHermes):
    """Ignores Idempotency-Key; its transcript is what the test says; `down` refuses all."""

    idempotent = False
    down = False
    transcript_status = 200

    def _check(self):
        if self.down:
            raise HermesUnreachable("connection reset by peer")

    def honours_idempotency_keys(self):
        self._check()
        return False

    def session_messages(self, session_id):
        self._check()
        if self.transcript_status != 200:
            return HermesAnswer(self.transcript_status, {}, {"error": {
                "code": "x", "message": "no"}})
        return super().session_messages(session_id)


@pytest.fixture
def hermes():
    return ForgetfulHermes()


def lose_the_submission(client, hermes, relay, question="what is new?"):
    client.say(question)
    hermes.next_submit = [HermesUnreachable("reset after sending")]
    hermes.down = True
    relay()
    assert len(hermes.submits) == 1
    hermes.down = False


def test_a_question_in_the_transcript_waits_for_its_runs_answer_and_is_not_resubmitted(
        client, service, hermes, relay, clock):
    lose_the_submission(client, hermes, relay)
    clock.advance(1_500)
    started = turn("what is new?", "", clock.now_ms() / 1000)[:1]  # input only, as 0.19.0 has it
    hermes.transcript = started
    clock.advance(int(TRANSCRIPT_GRACE_S * 1000) * 3)
    relay()
    assert len(hermes.submits) == 1 and texts(service, client.thread)[-1][0] == "operator"
    hermes.transcript = turn("what is new?", "all quiet", clock.now_ms() / 1000)
    relay()
    assert texts(service, client.thread)[-1] == ("hermes", "all quiet")
    relay()
    assert len(hermes.submits) == 1


def test_a_question_absent_after_the_grace_period_is_submitted_once(
        client, service, hermes, relay, clock):
    lose_the_submission(client, hermes, relay)
    clock.advance(int(TRANSCRIPT_GRACE_S * 1000) - 1)
    relay()
    assert len(hermes.submits) == 1  # too early to tell: a run's input may not be there yet
    clock.advance(2)
    lines = relay()
    assert len(hermes.submits) == 2 and hermes.submits[0] == hermes.submits[1]
    assert any("not in Hermes' session transcript" in line for line in lines)
    relay()
    assert len(hermes.submits) == 2
    hermes.runs["run_1"].update(status="completed", output="all quiet")
    relay()
    assert texts(service, client.thread)[-1] == ("hermes", "all quiet")


def test_an_unknown_session_is_a_transcript_without_the_question(client, hermes, relay, clock):
    hermes.transcript_status = 404
    lose_the_submission(client, hermes, relay)
    clock.advance(int(TRANSCRIPT_GRACE_S * 1000) + 1)
    relay()
    assert len(hermes.submits) == 2


def test_an_earlier_turn_with_the_same_words_is_not_this_submission():
    earlier = turn("same words", "old answer", 100.0)
    assert turn_in_transcript(earlier, "same words", 150.0) == (False, None)
    assert turn_in_transcript(earlier, "same words", 99.0) == (True, "old answer")
    assert turn_in_transcript(earlier[:1], "same words", 99.0) == (True, None)


@pytest.mark.parametrize("how", ["down", "unreadable", "never answers"])
def test_what_cannot_be_settled_within_the_bound_asks_the_person_once(
        make_app, hermes, clock, how):
    testapp, service = make_app(relay_run_timeout_s=600)
    client = ChatClient(testapp)

    relay = passes(service, hermes)
    lose_the_submission(client, hermes, relay)
    if how == "down":
        hermes.down = True
    elif how == "unreadable":
        hermes.transcript_status = 500
    else:
        hermes.transcript = turn("what is new?", "", clock.now_ms() / 1000)[:1]
    clock.advance(599_000)
    relay()
    assert texts(service, client.thread)[-1][0] == "operator"
    clock.advance(2_000)
    relay()
    relay()
    assert texts(service, client.thread)[1:] == [("hermes", SEND_AGAIN)]
    assert client.poll().json["awaiting"] is False and len(hermes.submits) == 1
