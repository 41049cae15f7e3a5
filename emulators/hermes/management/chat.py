"""Chatting inside a session (`/api/sessions/{id}/chat[/stream]`): one agent turn over the stored
transcript, answered as JSON or as a stream of named events, and stored in the session.
"""
from ..errors import AgentCrashed, InvalidSystemMessage, MissingMessage
from ..inputs import memory_key_of
from ..sse import frame
from ..sessions import Turn as StoredTurn
from ..sessions import json_object
from ..upstream import arguments_text, flatten, result_text, visible, words

THINKING_PREVIEW = 500   # upstream's "_thinking" progress carries the first 500 characters


class ChatTurn:
    """A validated session chat request."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class SessionChat:
    """Session chat over a CompatBackend (the scripted-reply agent) and its SessionBook."""

    def __init__(self, compat):
        self.compat = compat
        self.book = compat.sessions()

    def validate(self, session_id, raw, *, session_key_header):
        """Upstream order: session key header, session exists, JSON, message, system message."""
        session_key = memory_key_of(session_key_header)
        self.book.require(session_id)
        body = json_object(raw)
        message = body.get("message")
        if message is None:
            message = body.get("input")
        if not isinstance(message, (str, list)) or not visible(message):
            raise MissingMessage()
        system = body.get("system_message") or body.get("instructions")
        if system and not isinstance(system, str):
            raise InvalidSystemMessage()
        user_text = flatten(message)
        history = self.book.history(session_id)
        prompt = [system or ""] + [flatten(m["content"]) for m in history] + [user_text]
        return ChatTurn(session_id=session_id, session_key=session_key, message=message,
                        user_text=user_text, prompt_words=sum(words(text) for text in prompt))

    def headers(self, turn):
        headers = {"X-Hermes-Session-Id": turn.session_id}
        if turn.session_key:
            headers["X-Hermes-Session-Key"] = turn.session_key
        return headers

    def run(self, turn):
        """Run the agent and store the turn; a scripted exception is a 500 (nothing stored)."""
        result = self.compat.run_agent(turn.user_text, turn.prompt_words, turn.session_id)
        if result.exception is None:
            self.book.record(turn.session_id, StoredTurn(turn.user_text, result,
                                                         model=self.compat.model_name()))
        return result

    def reply(self, turn):
        """POST …/chat: (body, headers)."""
        result = self.run(turn)
        if result.exception is not None:
            raise AgentCrashed(result.exception)
        usage = result.usage
        return ({"object": "hermes.session.chat.completion", "session_id": turn.session_id,
                 "message": {"role": "assistant", "content": result.text},
                 "usage": {"input_tokens": usage.get("input_tokens", 0),
                           "output_tokens": usage.get("output_tokens", 0),
                           "total_tokens": usage.get("total_tokens", 0)}},
                self.headers(turn))

    def stream(self, turn):
        """POST …/chat/stream: (headers, frames, delay_s); the turn is stored up front."""
        result = self.run(turn)
        run_id = "run_" + self.compat.hex(32)
        message_id = "msg_" + self.compat.hex(32)
        return self.headers(turn), list(self.frames(turn, result, run_id, message_id)), (
            result.delay_s)

    def frames(self, turn, result, run_id, message_id):
        """Named SSE events, each ending with session_id, run_id, seq and ts."""
        seq = 0

        def event(name, payload):
            nonlocal seq
            seq += 1
            common = {"session_id": turn.session_id, "run_id": run_id, "seq": seq,
                      "ts": self.compat.now_s()}
            data = {**payload, **{k: v for k, v in common.items() if k not in payload}}
            return frame(data, name)

        yield event("run.started", {"user_message": {"role": "user", "content": turn.message}})
        yield event("message.started", {"message": {"id": message_id, "role": "assistant"}})
        if result.exception is not None:
            yield event("error", {"message": str(result.exception)})
            yield event("done", {"session_id": turn.session_id, "run_id": run_id})
            return
        messages = []
        for step in result.steps:
            if isinstance(step, str):
                yield event("assistant.delta", {"message_id": message_id, "delta": step})
                continue
            preview = arguments_text(step)
            yield event("tool.started", {"message_id": message_id, "tool_name": step["tool"],
                                         "preview": preview, "args": step.get("arguments", {})})
            yield event("tool.completed", {"message_id": message_id, "tool_name": step["tool"],
                                           "preview": preview,
                                           "args": step.get("arguments", {})})
            messages.append({"role": "assistant", "content": "", "finish_reason": "tool_calls",
                             "reasoning": None})
            messages.append({"role": "tool", "content": result_text(step),
                             "tool_call_id": step["id"]})
        if result.text:
            yield event("tool.progress", {"message_id": message_id, "tool_name": "_thinking",
                                          "delta": result.text[:THINKING_PREVIEW]})
        yield event("assistant.completed", {
            "session_id": turn.session_id, "message_id": message_id, "content": result.text,
            "completed": result.completed, "partial": result.partial, "interrupted": False})
        messages.append({"role": "assistant", "content": result.text, "finish_reason": "stop",
                         "reasoning": None})
        usage = result.usage
        yield event("run.completed", {
            "session_id": turn.session_id, "message_id": message_id, "completed": True,
            "messages": messages,
            "usage": {"input_tokens": usage.get("input_tokens", 0),
                      "output_tokens": usage.get("output_tokens", 0),
                      "total_tokens": usage.get("total_tokens", 0)}})
        yield event("done", {"session_id": turn.session_id, "run_id": run_id})
