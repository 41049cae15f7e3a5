"""Hermes domain errors: each carries its HTTP status and the Hermes wire envelope as data.

The envelope is `{"error": {"message", "type", "param", "code"}}` (as Hermes 0.19.0 answers);
a few upstream errors omit `param`/`code`, which `fields` expresses. A leaf that is only data
declares it in its class line (`class X(HermesError, status=409, code=…)`); one with behaviour
keeps its attributes in its body.
"""
from emulators.runtime.errors import EmulatorError


class HermesError(EmulatorError):
    """Base of every error the Hermes emulator answers with a Hermes envelope."""

    status = 400
    type = "invalid_request_error"
    code = None
    message = "Bad request"
    # The keys of the `error` object, in wire order (upstream omits some on a few errors).
    fields = ("message", "type", "param", "code")
    headers = {}

    def __init__(self, message=None, *, code=None):
        super().__init__(message if message is not None else self.message)
        if code is not None:
            self.code = code

    def body(self):
        """Return the wire body."""
        full = {"message": self.message, "type": self.type, "param": None, "code": self.code}
        return {"error": {key: full[key] for key in self.fields}}


class SubjectError(HermesError):
    """An error about one run, session or response: `prefix` followed by its id."""

    prefix = ""

    def __init__(self, subject):
        super().__init__(f"{self.prefix}{subject}")


class InvalidRequest(HermesError):
    """A plain 400 `invalid_request_error` with a null code (e.g. "Invalid JSON")."""


class Unsupported(HermesError):
    """Emulator-only 501: the input is outside the modelled subset (never a Hermes answer)."""

    status = 501
    type = "mockingbird_unsupported"
    code = "operation_not_implemented"

    def __init__(self, message):
        super().__init__("Mockingbird: " + message)


class InvalidSessionKey(HermesError, fields=("message", "type")):
    """400 for an unusable X-Hermes-Session-Key; upstream sends only message and type."""


class InvalidIdempotencyKey(HermesError,
                            message="Idempotency-Key must be 1-255 visible ASCII characters",
                            code="invalid_idempotency_key"):
    ...


class IdempotencyConflict(
        HermesError, status=409, code="idempotency_key_conflict",
        message="Idempotency-Key was already used with a different request payload"):
    ...


class RunNotFound(SubjectError, status=404, code="run_not_found", prefix="Run not found: "):
    ...


class RunNotActive(SubjectError, status=409, code="run_not_active",
                   prefix="Run is not active in this gateway process: "):
    ...


class TerminalRun(HermesError, status=409, message="observe: terminal runs cannot be changed",
                  code="mock_terminal_run"):
    """An observation tried to change a terminal run (emulator control)."""


class ApprovalNotActive(SubjectError, status=409, code="approval_not_active",
                        prefix="Run has no active approval session: "):
    ...


class ApprovalNotPending(SubjectError, status=409, code="approval_not_pending",
                         prefix="Run has no pending approval: "):
    ...


class InvalidApprovalChoice(HermesError, code="invalid_approval_choice"):
    ...


class SteerNotAccepting(SubjectError, status=409, code="run_not_accepting_steer",
                        prefix="Run is not currently accepting steer input: "):
    ...


class InvalidSteerInput(
        HermesError, code="invalid_steer_input",
        message="Missing non-empty steer text; expected 'input', 'message', or 'text'."):
    ...


class Throttled(HermesError):
    """429 of the concurrency cap (upstream default max 10)."""

    status = 429
    type = "rate_limit_error"
    message = "Too many concurrent runs (max 10)"
    code = "rate_limit_exceeded"
    headers = {"Retry-After": "1"}

    def __init__(self, limit=10):
        super().__init__(f"Too many concurrent runs (max {limit})")


class BodyTooLarge(HermesError, status=413, message="Request body too large.",
                   code="body_too_large"):
    ...


class InvalidContentLength(HermesError, message="Invalid Content-Length header.",
                           code="invalid_content_length"):
    ...


class Unauthorized(HermesError, status=401, message="Invalid API key", code="invalid_api_key",
                   fields=("message", "type", "code")):
    """401 of bearer auth; upstream's body has `code` but no `param`."""


class InternalError(HermesError, status=500, type="server_error", message="Internal server error"):
    ...


# The OpenAI-compatible surface (chat completions, responses). Upstream builds several of these
# errors inline with only `message` and `type` (oracle: chat_completions_missing_messages,
# chat_completions_only_system, chat_completions_session_id_unsafe, responses_invalid_json).


class MessageTypeOnly(HermesError, fields=("message", "type")):
    """A 400 whose upstream body has only `message` and `type`."""


class InvalidMessages(MessageTypeOnly, message="Missing or invalid 'messages' field"):
    ...


class NoUserMessage(MessageTypeOnly, message="No user message found in messages"):
    ...


class InvalidSessionId(MessageTypeOnly, message="Invalid session ID"):
    ...


class SessionIdTooLong(MessageTypeOnly, message="Session ID too long"):
    ...


class ResponseNotFound(SubjectError, status=404, prefix="Response not found: "):
    ...


class PreviousResponseNotFound(SubjectError, status=404, prefix="Previous response not found: "):
    ...


class AgentIncomplete(HermesError):
    """502 of a chat completion whose scripted run failed without any text."""

    status = 502
    type = "server_error"
    message = "Agent run did not produce a response."
    code = "agent_incomplete"

    def __init__(self, message, *, completed, partial, failed, headers):
        super().__init__(message or None)
        self.flags = {"completed": completed, "partial": partial, "failed": failed}
        self.headers = headers

    def body(self):
        body = super().body()
        body["error"]["hermes"] = self.flags
        return body


class AgentCrashed(InternalError):
    """500 of a scripted exception: upstream says "Internal server error: <exception>"."""

    def __init__(self, detail):
        super().__init__(f"Internal server error: {detail}")


# Sessions API (`/api/sessions…`): the full envelope with a code.


class SessionNotFound(SubjectError, status=404, code="session_not_found",
                      prefix="Session not found: "):
    ...


class SessionExists(SubjectError, status=409, code="session_exists",
                    prefix="Session already exists: "):
    ...


class InvalidSessionIdCode(HermesError, code="invalid_session_id"):
    """400 `invalid_session_id` of the sessions routes (the chat one has no code)."""


class InvalidSystemPrompt(HermesError, message="system_prompt must be a string",
                          code="invalid_system_prompt"):
    ...


class InvalidTitle(HermesError, code="invalid_title"):
    ...


class UnsupportedSessionFields(SubjectError, code="unsupported_session_field",
                               prefix="Unsupported session fields: "):
    ...


class MissingMessage(HermesError, message="Missing 'message' field", code="missing_message"):
    ...


class InvalidSystemMessage(HermesError, message="system_message must be a string",
                           code="invalid_system_message"):
    ...


# Jobs API (`/api/jobs…`) and cron fire: a flat `{"error": "<text>"}` body.


class JobError(HermesError):
    """A jobs-API error; 0.19.0's 500s for client mistakes are answered as 400 (never a 5xx)."""

    def body(self):
        return {"error": self.message}


class InvalidJobId(JobError, message="Invalid job ID format"):
    ...


class JobNotFound(JobError, status=404, message="Job not found"):
    ...


class InvalidFireToken(JobError, status=401, message="invalid fire token"):
    ...


# Platform events ingress (`/api/platforms/{platform}/events`).


class InvalidPlatform(HermesError, message="Invalid platform name", code="invalid_platform"):
    ...


class PlatformUnavailable(HermesError, status=503, message="Platform adapter is not connected",
                          code="platform_unavailable"):
    ...


class PlatformEventsUnsupported(HermesError, status=503,
                                message="Platform adapter does not support HTTP events",
                                code="platform_http_events_unsupported"):
    ...
