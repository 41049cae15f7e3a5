"""A submission that got no answer may have started a run: replay it only where that is safe.

Hermes replays the run for a repeated Idempotency-Key only when it says so in its capabilities
(newer builds, the bundled emulator). Hermes 0.19.0 ignores the key, so a second submission
there would be a second run: the relay never sends the question again, and instead looks for
the run's answer in Hermes' transcript of the conversation's session, where 0.19.0 appends a
run's input and final answer when the run ends.
"""
from .hermes_client import HermesUnreachable

# Clocks of the relay and Hermes (on the same host) may disagree this much.
CLOCK_SLACK_S = 1.0


def answer_in_transcript(messages, question, since_s):
    """The final answer of the last run whose input was `question` and which was recorded at or
    after `since_s` (epoch seconds), from a session's messages (oldest first); else None."""
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
        return found if isinstance(found, str) and found else None
    return None


class LostRuns:
    """Steps for a submission whose answer never came, mixed into Relay."""

    def _may_resubmit(self, thread, entry):
        """Whether a submission that may have started a run can be sent again (only when Hermes
        replays a run for a repeated Idempotency-Key). Otherwise said once, loudly."""
        if self._idempotent is None:
            try:
                self._idempotent = self.client.honours_idempotency_keys()
            except HermesUnreachable as exc:
                self.unreachable = str(exc)
                return False
        if self._idempotent:
            return True
        said = entry.get("unsure")
        entry["unsure"] = True
        self.state.save()
        self._say(f"thread={thread} question={entry['question']}: its submission may have "
                  f"started a run (no answer came back) and Hermes at "
                  f"{getattr(self.client, 'base_url', 'its URL')} ignores Idempotency-Key, so it "
                  "is not submitted again; its answer is looked for in Hermes' session "
                  "transcript, and a new message starts over", problem=not said)
        return False

    def _find_lost_run(self, thread, entry, body):
        """Deliver the answer of the run the lost submission started, once Hermes' transcript
        of the session shows it finished."""
        try:
            answer = self.client.session_messages(body["session_id"])
        except HermesUnreachable as exc:
            self.unreachable = str(exc)
            return
        rows = answer.body.get("data") if answer.status == 200 and isinstance(
            answer.body, dict) else None
        since_s = entry.get("submitting_ms", 0) / 1000 - CLOCK_SLACK_S
        output = answer_in_transcript(rows, body["input"], since_s) \
            if isinstance(rows, list) else None
        if output is None:
            return
        self._deliver(thread, {**entry, "run_id": "(started by the submission that got no "
                                                  "answer; found in the session transcript)"},
                      {"output": output})
