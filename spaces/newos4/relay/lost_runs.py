"""A submission that got no answer may have started a run: settle it without a second run.

Hermes replays the run for a repeated Idempotency-Key only when it says so in its capabilities
(newer builds, the bundled emulator): there the relay submits again with the same key. Hermes
0.19.0 ignores the key, so a second submission there would be a second run. It keeps the
session's transcript, though: a run's input is in `GET /api/sessions/<session>/messages` soon
after the run starts (`finish_reason: null`, well before it ends) and its final answer when it
ends. So once Hermes answers again, the transcript settles the lost submission:
- the question is there, recorded after the submission: it started a run, whose answer is
  delivered when the transcript shows it;
- it is still absent a grace period after the submission (NEWOS4_RELAY_TRANSCRIPT_GRACE_S,
  measured against 0.19.0): no run started, and the question is submitted (its own submission
  settled the same way if its answer is lost too);
- nothing settled it within the relay's run timeout of the first lost submission (Hermes not
  back, a transcript that cannot be read, a run that never ends): the thread is asked, in one
  `hermes` message, to send the question again. A question is never left "working".
The relay's own memory can be lost too (its state file removed, or set aside because it did
not fit): a question waiting from before then may have been submitted, and is settled the same
way, as sent at the earliest when it was written and at the latest when the memory was lost.
"""
from .hermes_client import HermesUnreachable
from .outcomes import Deliver, Resubmit, Tell, Unreachable

# Clocks of the relay and Hermes (on the same host) may disagree this much.
CLOCK_SLACK_S = 1.0
SEND_AGAIN = ("Your last message may not have reached Hermes: the connection to it broke "
              "before it confirmed the message, and it could not be checked afterwards. "
              "Please send it again.")
FOUND_RUN = "(started by the submission that got no answer; found in the session transcript)"


def turn_in_transcript(messages, question, since_s):
    """(started, answer) for the last run whose input was `question`, recorded at or after
    `since_s` (epoch seconds), in a session's messages (oldest first): started is whether such
    a run's input is there; answer its final answer once it ended, else None."""
    for start in range(len(messages) - 1, -1, -1):
        message = messages[start]
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        stamp = message.get("timestamp")
        if message.get("content") != question or not isinstance(stamp, (int, float)) \
                or stamp < since_s:
            continue
        answers = []
        for later in messages[start + 1:]:
            if not isinstance(later, dict) or later.get("role") == "user":
                break
            if later.get("role") == "assistant" and later.get("finish_reason") == "stop":
                answers.append(later.get("content"))
        found = answers[-1] if answers else None
        return True, found if isinstance(found, str) and found else None
    return False, None


class LostSubmissions:
    """Settles the submissions of one relay pass whose answer never came back.

    `say(line, problem=False)` logs a line; `now_ms()` is the relay's clock; `bound_s` the
    longest a question may stay unsettled (the relay's run timeout); `grace_s` how long a run's
    input may take to show in the transcript.
    """

    def __init__(self, client, *, say, now_ms, bound_s, grace_s):
        self.client = client
        self._say = say
        self._now_ms = now_ms
        self._bound_ms = bound_s * 1000
        self._grace_ms = grace_s * 1000
        self._idempotent = None  # whether Hermes honours Idempotency-Key, once asked

    def honours_keys(self):
        """Whether Hermes replays a run for a repeated key (HermesUnreachable: it said nothing)."""
        if self._idempotent is None:
            self._idempotent = self.client.honours_idempotency_keys()
        return self._idempotent

    def lost(self, thread, entry):
        """Record that `entry`'s submission got no answer and may have started a run."""
        if entry.lost_ms is None:
            entry.lost_ms = entry.submitting_ms
        self._say(f"thread={thread} question={entry.question}: its submission may have "
                  "started a run (no answer came back); it is settled once Hermes answers "
                  "again (replayed with the same key where Hermes honours it, else from its "
                  "session transcript), never submitted twice", problem=True)

    @staticmethod
    def forgotten(entry, key, *, asked_ms, since_ms):
        """Record that a state lost at `since_ms` may have submitted `entry`'s question
        (written at `asked_ms`) with `key`: it is settled as a submission whose answer was
        lost, sent at the earliest when the question was written, at the latest at the loss."""
        entry.submitting, entry.submitting_ms, entry.lost_ms = key, asked_ms, since_ms

    def settle(self, thread, entry, body):
        """What to do about the entry's submission that got no answer (sent at
        `submitting_ms`, or between then and `lost_ms`, of question `body`): Resubmit, Deliver,
        Tell, Unreachable or None (wait)."""
        waited_ms = self._now_ms() - max(entry.submitting_ms, entry.lost_ms or 0)
        unsettled_ms = self._now_ms() - (entry.lost_ms or entry.submitting_ms)
        try:
            if self.honours_keys():
                return Resubmit("Hermes replays a run for a repeated Idempotency-Key")
            answer = self.client.session_messages(body["session_id"])
        except HermesUnreachable as exc:
            return self._past_bound(unsettled_ms) or Unreachable(str(exc))
        if answer.status == 404:
            rows = []  # no such session: nothing of it was ever recorded
        elif answer.status == 200 and isinstance(answer.body, dict) \
                and isinstance(answer.body.get("data"), list):
            rows = answer.body["data"]
        else:
            self._say(f"thread={thread} session {body['session_id']}: its transcript cannot "
                      f"be read ({answer.error_text()}); the lost submission stays unsettled",
                      problem=True)
            return self._past_bound(unsettled_ms)
        since_s = entry.submitting_ms / 1000 - CLOCK_SLACK_S
        started, output = turn_in_transcript(rows, body["input"], since_s)
        if output is not None:
            return Deliver({"output": output}, run_id=FOUND_RUN)
        if started:
            return self._past_bound(unsettled_ms)  # its run works: the answer comes
        if waited_ms < self._grace_ms:
            return None
        return Resubmit(f"its question is not in Hermes' session transcript "
                        f"{waited_ms / 1000:.1f}s after the submission: no run started")

    def _past_bound(self, unsettled_ms):
        if unsettled_ms <= self._bound_ms:
            return None
        return Tell(SEND_AGAIN, f"its lost submission was not settled within "
                                f"{self._bound_ms // 1000}s: asked the person to send it again")
