"""CompatBackend: the OpenAI-compatible surface (health, models, capabilities, chat completions,
responses) over one emulator instance. No model runs: each reply is the namespace's next scripted
reply, or one derived deterministically from the input. All state lives in the instance records.
"""
import datetime
import os
import random
import re
import shutil

from .. import canonical, schemas, sse
from ..errors import (AgentCrashed, AgentIncomplete, InvalidMessages, InvalidRequest,
                      InvalidSessionId, MessageTypeOnly, NoUserMessage, PreviousResponseNotFound,
                      ResponseNotFound, SessionIdTooLong, Throttled)
from ..inputs import checked_history, memory_key_of
from ..runs.backend import EFFECT_KEYS_IGNORED, EFFECT_NO_STEER, EFFECT_THROTTLE
from ..schemas import TERMINAL
from ..sessions import SESSION_ENDPOINTS, SessionBook
from ..sessions import Turn as StoredTurn
from ..store import HermesStore
from ..upstream import (arguments_text, chat_usage, coerce_bool, derive_session_id, fingerprint,
                        flatten, json_type, message_item, normalize, path_unsafe, result_text,
                        visible, words)

HERMES_VERSION = "0.19.0"           # the Hermes release whose answers we copy
DEFAULT_MODEL = "hermes-agent"
MAX_STORED_RESPONSES = 100          # upstream ResponseStore max_size
RESULT_CACHE_TTL = 300              # upstream _IdempotencyCache: 300 s, 1000 entries
RESULT_CACHE_SIZE = 1000
MAX_SESSION_HEADER = 256
# Upstream fingerprints only these body keys, as sha256(repr(subset)) (Hermes' api_server.py).
CHAT_FINGERPRINT = ("model", "messages", "tools", "tool_choice", "stream")
RESPONSES_FINGERPRINT = ("input", "instructions", "previous_response_id", "conversation", "model",
                         "tools")
WORDS = re.compile(r"\S+\s*|\s+")


class Result:
    """What the "agent" produced for one turn: upstream's result dict plus its usage."""

    def __init__(self, data):
        self.data = data

    text = property(lambda self: self.data["text"])
    steps = property(lambda self: self.data["steps"])
    usage = property(lambda self: self.data["usage"])
    failed = property(lambda self: self.data["failed"])
    partial = property(lambda self: self.data["partial"])
    completed = property(lambda self: self.data["completed"])
    error = property(lambda self: self.data.get("error"))
    exception = property(lambda self: self.data.get("exception"))
    delay_s = property(lambda self: self.data.get("delay_ms", 0) / 1000)

    def tools(self):
        return [step for step in self.steps if isinstance(step, dict)]

    def finish(self):
        """Upstream's finish_reason decision (length for truncation, error for failure)."""
        if self.partial and self.error and "truncat" in self.error.lower():
            return "length"
        if self.failed or (not self.completed and self.error):
            return "error"
        return "stop"

    def hermes(self, finish):
        return {"completed": self.completed, "partial": self.partial, "failed": self.failed,
                "error": self.error,
                "error_code": "output_truncated" if finish == "length" else "agent_error"}


class Turn:
    """A validated request: its parsed body and everything derived before the agent runs."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class CompatBackend:
    """The OpenAI-compatible rules over one emulator instance (namespace or branch)."""

    def __init__(self, instance, settings):
        self.instance = instance
        self.settings = settings
        self.store = HermesStore(instance.records)

    # plumbing
    def now_s(self):
        return self.instance.now_ms() / 1000

    def model_name(self):
        return self.settings.model_name or DEFAULT_MODEL

    def hex(self, n):
        """n hex digits from the namespace RNG (deterministic, restored with checkpoints)."""
        bits = random.Random(self.instance.rng.randint(0, 2 ** 32 - 1)).getrandbits(4 * n)
        return f"{bits:0{n}x}"

    def uuid4(self):
        digits = self.hex(32)
        return (f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-"
                f"{'89ab'[int(digits[16], 16) % 4]}{digits[17:20]}-{digits[20:]}")

    def sessions(self):
        """The session book of this instance (sessions.py); turns are recorded there."""
        return SessionBook(self.instance, model_name=self.model_name(), hex_digits=self.hex)

    def agent_turn(self, turn):
        """Run the agent for a validated turn and store the exchange in its session;
        a replayed idempotent result is not run, so not stored again."""
        result = self.run_agent(turn.user_text, turn.prompt_words, turn.session_id)
        if result.exception is None and (result.text or not (result.failed or result.partial)):
            self.sessions().record(turn.session_id, StoredTurn(turn.user_text, result,
                                                               model=self.model_name()))
        return result

    def throttle(self):
        """The concurrency cap as a fault effect: checked first, after auth."""
        params = self.instance.fault_effect(EFFECT_THROTTLE)
        if params is not None:
            raise Throttled(params.get("max", 10))

    @staticmethod
    def parse(raw, error):
        try:
            body = canonical.parse_strict(canonical.decode_body(raw or b""))
        except canonical.InvalidJSONText:
            raise error from None
        if not isinstance(body, dict):
            # The real server crashes (500 "Server got itself in trouble") on a non-object root:
            # a bug we do not copy; the client's mistake is a 400 in the route's envelope.
            raise type(error)("Request body must be a JSON object")
        return body

    # health, models, capabilities
    @staticmethod
    def health():
        return {"status": "ok", "platform": "hermes-agent", "version": HERMES_VERSION}

    def health_detailed(self):
        """The shape of oracle health_detailed; counts come from the emulator's own runs."""
        now = datetime.datetime.fromtimestamp(self.now_s(), datetime.timezone.utc).isoformat()
        active = sum(1 for run in self.store.cached_runs() if run["status"] not in TERMINAL)
        try:
            disk = shutil.disk_usage(os.getcwd())
            disk_check = {"status": "ok", "used_percent": round(disk.used / disk.total * 100, 1),
                          "free_bytes": disk.free}
        except OSError:
            disk_check = {"status": "ok", "used_percent": 0.0, "free_bytes": 0}
        readiness = {"status": "ok", "checks": {
            "state_db": {"status": "ok"}, "config": {"status": "ok"}, "model": {"status": "ok"},
            "disk": disk_check,
            "gateway": {"status": "ok", "state": "running", "connected_platforms": 1,
                        "platforms": 1},
            "background_queues": {"status": "ok", "active_api_runs": active,
                                  "process_completions": 0, "active_delegations": 0}}}
        return {"status": "ok", "readiness": readiness, "platform": "hermes-agent",
                "version": HERMES_VERSION, "gateway_state": "running",
                "platforms": {"api_server": {"state": "connected", "error_code": None,
                                             "error_message": None, "updated_at": now}},
                "active_agents": active, "gateway_busy": active > 0, "gateway_drainable": True,
                "exit_reason": None, "updated_at": now, "pid": os.getpid()}

    def models(self):
        name = self.model_name()
        return {"object": "list", "data": [{
            "id": name, "object": "model", "created": int(self.now_s()), "owned_by": "hermes",
            "permission": [], "root": name, "parent": None}]}

    def capabilities(self):
        """The 0.19.0 shape (oracle capabilities), true to what this emulator serves."""
        # 0.19.0 has no steer route, so its map names none (preset hermes_run_keys_ignored).
        steer = self.instance.fault_effect(EFFECT_NO_STEER) is None
        return {
            "object": "hermes.api_server.capabilities", "platform": "hermes-agent",
            "model": self.model_name(),
            "auth": {"type": "bearer", "required": self.settings.api_key is not None},
            "runtime": {"mode": "server_agent", "tool_execution": "server",
                        "split_runtime": False,
                        "description": "Hermes Agent emulator: no model runs; replies are"
                                       " scripted through /__admin/hermes/replies or derived"
                                       " from the input."},
            "features": {
                "chat_completions": True, "chat_completions_streaming": True,
                "responses_api": True, "responses_streaming": True,
                "run_submission": True, "run_status": True, "run_events_sse": True,
                "run_stop": True, "run_approval_response": True,
                **({"run_steer": True} if steer else {}),
                "tool_progress_events": True, "approval_events": True,
                "session_resources": True, "session_chat": True,
                "session_chat_streaming": True, "session_fork": True,
                "admin_config_rw": False, "jobs_admin": False, "memory_write_api": False,
                "skills_api": True, "audio_api": False, "realtime_voice": False,
                "session_continuity_header": "X-Hermes-Session-Id",
                "session_key_header": "X-Hermes-Session-Key",
                "cors": bool(self.settings.cors_origins)},
            # Hermes' newer source (after 0.19.0) adds this block; the runs
            # reservations are durable rows in the shared SQLite.
            **({} if self.instance.fault_effect(EFFECT_KEYS_IGNORED) is not None else {
                "idempotency": {"supported": True, "durable": True,
                                "retention_seconds": 86400}}),
            "endpoints": {
                "health": {"method": "GET", "path": "/health"},
                "health_detailed": {"method": "GET", "path": "/health/detailed"},
                "models": {"method": "GET", "path": "/v1/models"},
                "chat_completions": {"method": "POST", "path": "/v1/chat/completions"},
                "responses": {"method": "POST", "path": "/v1/responses"},
                "runs": {"method": "POST", "path": "/v1/runs"},
                "run_status": {"method": "GET", "path": "/v1/runs/{run_id}"},
                "run_events": {"method": "GET", "path": "/v1/runs/{run_id}/events"},
                "run_approval": {"method": "POST", "path": "/v1/runs/{run_id}/approval"},
                "run_stop": {"method": "POST", "path": "/v1/runs/{run_id}/stop"},
                **({"run_steer": {"method": "POST", "path": "/v1/runs/{run_id}/steer"}}
                   if steer else {}),
                "skills": {"method": "GET", "path": "/v1/skills"},
                "toolsets": {"method": "GET", "path": "/v1/toolsets"},
                **SESSION_ENDPOINTS},
        }

    # scripted replies
    def queue_replies(self, body):
        """Append scripted replies to this namespace's queue; return the queue."""
        replies = schemas.replies(body)
        with self.instance.transaction():
            for reply in replies:
                self.store.queue_reply(reply)
        return self.queued()

    def queued(self):
        return {"replies": [row["reply"] for row in self.store.queued_replies()]}

    def clear_replies(self):
        with self.instance.transaction():
            self.store.clear_replies()
        return {"replies": []}

    def run_agent(self, user_text, prompt_words, session_id):
        """Take the next scripted reply (or synthesize one); return the turn's Result."""
        with self.instance.transaction():
            reply = self.store.take_reply()
        if reply is None:
            reply = {"text": "Hermes emulator reply to: " + user_text[:200]}
        steps = reply.get("deltas")
        text = reply.get("text")
        if text is None:
            text = "".join(step for step in steps or () if isinstance(step, str))
        if steps is None:
            steps = WORDS.findall(text)  # word chunks, as a streaming model sends them
        # Every tool call gets an id, as the model's tool_calls carry one.
        steps = [step if isinstance(step, str) or step.get("id")
                 else {**step, "id": "call_" + self.hex(24)} for step in steps]
        failed, partial = reply.get("failed", False), reply.get("partial", False)
        usage = reply.get("usage") or {"input_tokens": prompt_words,
                                       "output_tokens": words(text),
                                       "total_tokens": prompt_words + words(text)}
        data = {"text": text, "steps": steps, "usage": usage, "failed": failed,
                "partial": partial, "completed": reply.get("completed", not (failed or partial)),
                "session_id": session_id, "delay_ms": reply.get("delay_ms", 0)}
        for name in ("error", "exception", "reasoning"):
            if name in reply:
                data[name] = reply[name]
        return Result(data)

    def settled_turn(self, turn, idempotency_key, fingerprint_keys):
        """Run a non-stream turn through the result cache; a scripted exception is a 500."""
        result = self.cached_run(idempotency_key, fingerprint(turn.body, fingerprint_keys),
                                 lambda: self.agent_turn(turn))
        if result.exception is not None:
            raise AgentCrashed(result.exception)
        return result

    def cached_run(self, key, print_, compute):
        """Upstream's non-stream Idempotency-Key cache: same fingerprint replays the result."""
        if not key:
            return compute()
        now = self.now_s()
        with self.instance.transaction():
            entry = self.store.cached_result(key)
        if entry is not None and entry["fingerprint"] == print_ and (
                now - entry["at"] <= RESULT_CACHE_TTL):
            return Result(entry["result"])
        result = compute()
        if result.exception is None:  # upstream caches only a run that returned
            with self.instance.transaction():
                self.store.put_cached_result(key, {"fingerprint": print_, "result": result.data},
                                             limit=RESULT_CACHE_SIZE, ttl=RESULT_CACHE_TTL,
                                             now=now)
        return result

    # chat completions
    def chat_turn(self, raw, *, session_key_header, session_id_header):
        """Validate a chat completion in upstream order; return the Turn."""
        self.throttle()
        body = self.parse(raw, InvalidRequest("Invalid JSON in request body"))
        messages = body.get("messages")
        if not messages or not isinstance(messages, list):
            raise InvalidMessages()
        stream = coerce_bool(body.get("stream"), False)
        system_prompt, conversation = None, []
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                # A crash upstream (500) too; OpenAI's own wording for the same mistake.
                raise InvalidRequest(f"Invalid type for 'messages[{index}]': expected an object,"
                                     f" but got {json_type(message)} instead.",
                                     code="invalid_type")
            role = message.get("role", "")
            if role == "system":
                text = flatten(message.get("content", ""))
                system_prompt = text if system_prompt is None else system_prompt + "\n" + text
            elif role in ("user", "assistant"):
                conversation.append({"role": role, "content": normalize(message.get("content"))})
        # The last user/assistant message is the input, even an assistant one (oracle
        # chat_completions_last_is_assistant).
        user_message = conversation[-1]["content"] if conversation else ""
        if not visible(user_message):
            raise NoUserMessage()
        session_key = memory_key_of(session_key_header)
        provided = (session_id_header or "").strip()
        if provided:
            if re.search(r"[\r\n\x00]", provided) or path_unsafe(provided):
                raise InvalidSessionId()
            if len(provided) > MAX_SESSION_HEADER:
                raise SessionIdTooLong()
            session_id = provided
        else:
            first_user = next((m["content"] for m in conversation if m["role"] == "user"), "")
            session_id = derive_session_id(system_prompt, first_user)
        prompt = [system_prompt or ""] + [flatten(m["content"]) for m in conversation]
        if provided:  # the stored session, not the request, is the history
            prompt = [system_prompt or ""] + [
                flatten(m["content"]) for m in self.sessions().history(session_id)] + [
                flatten(user_message)]
        return Turn(body=body, stream=stream, user_text=flatten(user_message),
                    prompt_words=sum(words(text) for text in prompt), session_id=session_id,
                    session_key=session_key, model=body.get("model", self.model_name()),
                    completion_id="chatcmpl-" + self.hex(29), created=int(self.now_s()))

    def chat_headers(self, turn, session_id=None):
        headers = {"X-Hermes-Session-Id": session_id or turn.session_id}
        if turn.session_key:
            headers["X-Hermes-Session-Key"] = turn.session_key
        return headers

    def chat(self, turn, idempotency_key):
        """A non-stream completion: (body, headers), or AgentIncomplete/AgentCrashed."""
        result = self.settled_turn(turn, idempotency_key, CHAT_FINGERPRINT)
        headers = self.chat_headers(turn, result.data.get("session_id"))
        if not result.text and (result.failed or result.partial):
            raise AgentIncomplete(result.error, completed=result.completed,
                                  partial=result.partial, failed=result.failed,
                                  headers={**headers, "X-Hermes-Completed": "false",
                                           "X-Hermes-Partial": str(result.partial).lower()})
        finish = result.finish()
        body = {"id": turn.completion_id, "object": "chat.completion", "created": turn.created,
                "model": turn.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                             "finish_reason": finish}],
                "usage": chat_usage(result.usage)}
        if result.partial or result.failed or not result.completed:
            body["hermes"] = result.hermes(finish)
            headers["X-Hermes-Completed"] = "false"
            headers["X-Hermes-Partial"] = str(result.partial).lower()
            if result.error:
                headers["X-Hermes-Error"] = result.error[:200]
        return body, headers

    def chat_stream(self, turn):
        """Run the turn now; return (headers, frames, delay_s) of the chat SSE stream."""
        result = self.agent_turn(turn)
        return self.chat_headers(turn), list(sse.chat_frames(turn, result)), result.delay_s

    # responses
    def response_turn(self, raw, *, session_key_header):
        """Validate a Responses request in upstream order; return the Turn."""
        self.throttle()
        session_key = memory_key_of(session_key_header)
        # oracle responses_invalid_json: this one has only message and type
        body = self.parse(raw, MessageTypeOnly("Invalid JSON in request body"))
        raw_input = body.get("input")
        if raw_input is None:
            raise InvalidRequest("Missing 'input' field")
        instructions = body.get("instructions")
        previous = body.get("previous_response_id")
        conversation = body.get("conversation")
        store = coerce_bool(body.get("store"), True)
        if conversation and previous:
            raise InvalidRequest("Cannot use both 'conversation' and 'previous_response_id'")
        if conversation:
            previous = self.store.conversation(conversation)  # unknown name: a new conversation
        if isinstance(raw_input, str):
            inputs = [{"role": "user", "content": raw_input}]
        elif isinstance(raw_input, list):
            inputs = [{"role": "user", "content": item} if isinstance(item, str) else
                      {"role": item.get("role", "user"), "content": normalize(item.get("content"))}
                      for item in raw_input if isinstance(item, (str, dict))]
        else:
            raise InvalidRequest("'input' must be a string or array")
        history = [{"role": str(entry["role"]), "content": normalize(entry["content"])}
                   for entry in checked_history(body)]
        stored_session = None
        if not history and previous:
            with self.instance.transaction():
                stored = self.store.response(previous)
                if stored is None:
                    raise PreviousResponseNotFound(previous)
                self.store.touch_response(stored)  # upstream get() refreshes the LRU time
            history = list(stored["conversation_history"])
            stored_session = stored["session_id"]
            if instructions is None:
                instructions = stored.get("instructions")
        history.extend(inputs[:-1])
        user_message = inputs[-1]["content"] if inputs else ""
        if not visible(user_message):
            raise InvalidRequest("No user message found in input")
        if body.get("truncation") == "auto" and len(history) > 100:
            history = history[-100:]
        prompt = [flatten(instructions)] + [flatten(m["content"]) for m in history]
        return Turn(body=body, stream=coerce_bool(body.get("stream"), False),
                    user_message=user_message, user_text=flatten(user_message),
                    prompt_words=sum(words(text) for text in prompt) + words(
                        flatten(user_message)),
                    history=history, instructions=instructions, conversation=conversation,
                    store=store, session_id=stored_session or self.uuid4(),
                    session_key=session_key, model=body.get("model", self.model_name()))

    def respond(self, turn, idempotency_key):
        """A non-stream response: (body, headers); the turn is stored when `store` is on."""
        result = self.settled_turn(turn, idempotency_key, RESPONSES_FINGERPRINT)
        text = result.text or result.error or "(No response generated)"
        output = []
        for step in result.tools():
            output.append({"type": "function_call", "name": step["tool"],
                           "arguments": arguments_text(step), "call_id": step["id"]})
            output.append({"type": "function_call_output", "call_id": step["id"],
                           "output": result_text(step)})
        output.append(message_item(text))
        response = {"id": "resp_" + self.hex(28), "object": "response", "status": "completed",
                    "created_at": int(self.now_s()), "model": turn.model, "output": output,
                    "usage": dict(result.usage)}
        self.save(turn, response, text)
        return response, self.chat_headers(turn)

    def save(self, turn, response, text):
        """Store a response snapshot for GET and chaining (when `store` is on)."""
        if not turn.store:
            return
        history = [*turn.history, {"role": "user", "content": turn.user_message}]
        if text is not None:
            history.append({"role": "assistant", "content": text})
        with self.instance.transaction():
            self.store.put_response({"response": response, "conversation_history": history,
                                     "instructions": turn.instructions,
                                     "session_id": turn.session_id},
                                    limit=MAX_STORED_RESPONSES)
            if turn.conversation:
                self.store.put_conversation(turn.conversation, response["id"])

    def response_stream(self, turn):
        """Run the turn; store the in-progress snapshot; return (headers, events, delay_s)."""
        result = self.agent_turn(turn)
        turn.response_id = "resp_" + self.hex(28)
        turn.created = int(self.now_s())
        turn.message_id = "msg_" + self.hex(24)
        turn.item_ids = [("fc_" + self.hex(24), "fco_" + self.hex(24)) for _ in result.tools()]
        events = list(sse.response_events(turn, result))
        self.save(turn, events[0][1]["response"], None)
        return self.chat_headers(turn), events, result.delay_s

    def get_response(self, response_id):
        with self.instance.transaction():
            stored = self.store.response(response_id)
            if stored is None:
                raise ResponseNotFound(response_id)
            self.store.touch_response(stored)
        return stored["response"]

    def delete_response(self, response_id):
        with self.instance.transaction():
            if not self.store.delete_response(response_id):
                raise ResponseNotFound(response_id)
        return {"id": response_id, "object": "response", "deleted": True}
