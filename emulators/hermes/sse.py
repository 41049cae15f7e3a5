"""Server-Sent Events as upstream frames them: one frame, the comment lines, and the frames of a
streamed chat completion and Responses turn. Plain Python; the resources send them.
"""
import json

from .upstream import arguments_text, chat_usage, message_item, result_text

HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
DONE = "data: [DONE]\n\n"
CLOSED = b": stream closed\n\n"      # after a run's terminal event
KEEPALIVE = b": keepalive\n\n"       # while a run's stream is idle
BATCH_WINDOW_MS = 50                  # upstream batches Responses text deltas for 50 ms


def frame(data, event=None):
    """One SSE frame as upstream writes it (`event:` line only for named events)."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def paced(frames, delay_s, pause):
    """Yield encoded frames, waiting `delay_s` between them (a scripted slow model) with
    `pause(seconds)`, which says when the server stops (the stream then ends)."""
    for n, text in enumerate(frames):
        if n and delay_s and pause(delay_s):
            return
        yield text.encode("utf-8")


def chat_frames(turn, result):
    """The chat SSE frames: role chunk, deltas, tool progress, finish, [DONE]."""
    def chunk(delta, finish=None):
        return {"id": turn.completion_id, "object": "chat.completion.chunk",
                "created": turn.created, "model": turn.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield frame(chunk({"role": "assistant"}))
    for step in result.steps:
        if isinstance(step, str):
            yield frame(chunk({"content": step}))
        elif not step["tool"].startswith("_"):  # upstream keeps internal tools off the wire
            tool_call = step["id"]
            yield frame({"tool": step["tool"], "emoji": step.get("emoji", "⚡"),
                         "label": step.get("label", step["tool"]), "toolCallId": tool_call,
                         "status": "running"}, "hermes.tool.progress")
            yield frame({"tool": step["tool"], "toolCallId": tool_call, "status": "completed"},
                        "hermes.tool.progress")
    failed, error = result.failed, result.error
    if result.exception is not None:
        failed, error = True, error or result.exception
    finish = "length" if result.partial and error and "truncat" in error.lower() else (
        "error" if failed or (not result.completed and error) else "stop")
    final = chunk({}, finish)
    final["usage"] = chat_usage(result.usage)
    if finish != "stop":
        if error:
            final["error"] = {"message": error,
                              "type": "RuntimeError" if result.exception else "agent_error"}
        final["hermes"] = {"completed": result.completed, "partial": result.partial,
                           "failed": failed, "error": error,
                           "error_code": "output_truncated" if finish == "length"
                           else "agent_error"}
    yield frame(final)
    yield DONE


def response_events(turn, result):
    """The Responses SSE events as (type, data) pairs, without sequence numbers."""
    def envelope(status):
        return {"id": turn.response_id, "object": "response", "status": status,
                "created_at": turn.created, "model": turn.model}

    yield "response.created", {"type": "response.created",
                               "response": {**envelope("in_progress"), "output": []}}
    state = {"next_index": 0, "message_index": None, "parts": []}
    emitted = []

    def open_message():
        if state["message_index"] is None:
            state["message_index"] = state["next_index"]
            state["next_index"] += 1
            return [("response.output_item.added", {
                "type": "response.output_item.added", "output_index": state["message_index"],
                "item": {"id": turn.message_id, "type": "message", "status": "in_progress",
                         "role": "assistant", "content": []}})]
        return []

    def text_delta(delta):
        events = open_message()
        state["parts"].append(delta)
        events.append(("response.output_text.delta", {
            "type": "response.output_text.delta", "item_id": turn.message_id,
            "output_index": state["message_index"], "content_index": 0, "delta": delta,
            "logprobs": []}))
        return events

    # Upstream batches text deltas that arrive within 50 ms into one delta.
    batch = result.data.get("delay_ms", 0) < BATCH_WINDOW_MS
    pending, tool_number = [], 0
    for step in [*result.steps, None]:
        if isinstance(step, str):
            if batch:
                pending.append(step)
            else:
                yield from text_delta(step)
            continue
        if pending:
            yield from text_delta("".join(pending))
            pending = []
        if step is None:
            break
        fc_id, fco_id = turn.item_ids[tool_number]
        tool_number += 1
        call = step["id"]
        arguments = arguments_text(step)
        index = state["next_index"]
        state["next_index"] += 2
        item = {"id": fc_id, "type": "function_call", "status": "in_progress",
                "name": step["tool"], "call_id": call, "arguments": arguments}
        yield "response.output_item.added", {"type": "response.output_item.added",
                                             "output_index": index, "item": item}
        yield "response.output_item.done", {"type": "response.output_item.done",
                                            "output_index": index,
                                            "item": {**item, "status": "completed"}}
        parts = [{"type": "input_text", "text": result_text(step)}]
        output_item = {"id": fco_id, "type": "function_call_output", "call_id": call,
                       "output": parts, "status": "completed"}
        for name in ("response.output_item.added", "response.output_item.done"):
            yield name, {"type": name, "output_index": index + 1, "item": output_item}
        emitted.append({"type": "function_call", "name": step["tool"], "arguments": arguments,
                        "call_id": call})
        emitted.append({"type": "function_call_output", "call_id": call, "output": parts})
    if result.text and not state["parts"]:
        yield from text_delta(result.text)  # upstream's fallback single delta
    text = "".join(state["parts"]) or result.text
    error = result.exception
    if error is None and result.error and not text:
        error = result.error
    if state["message_index"] is not None:
        yield "response.output_text.done", {
            "type": "response.output_text.done", "item_id": turn.message_id,
            "output_index": state["message_index"], "content_index": 0, "text": text,
            "logprobs": []}
        yield "response.output_item.done", {
            "type": "response.output_item.done", "output_index": state["message_index"],
            "item": {"id": turn.message_id, "type": "message", "status": "completed",
                     "role": "assistant", "content": [{"type": "output_text", "text": text}]}}
    final = {**envelope("failed" if error else "completed"),
             "output": [*emitted, message_item(text or error or "")]}
    if error:
        final["error"] = {"message": error, "type": "server_error"}
    final["usage"] = dict(result.usage)
    name = "response.failed" if error else "response.completed"
    yield name, {"type": name, "response": final}
