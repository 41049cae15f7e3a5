"""SessionBook: the sessions the real server keeps (Hermes 0.19.0), as rows in the
instance records. Chat completions, responses, runs, session chat and jobs record their turns
here; `/api/sessions…` reads and edits them. No agent runs in this module.
"""
import re

from . import canonical
from .errors import (InvalidRequest, InvalidSessionIdCode, InvalidSystemPrompt, InvalidTitle,
                      SessionExists, SessionNotFound, UnsupportedSessionFields)
from .upstream import arguments_text, path_unsafe, result_text

SESSIONS = "hermes-sessions"          # id -> session row (public fields + system_prompt, ...)
MESSAGES = "hermes-messages"          # "<session id>:<message id>" -> message object
MESSAGE_SEQUENCE = "session-message"  # one integer sequence for the whole server
SESSION_FIELDS = (
    "id", "source", "user_id", "model", "title", "started_at", "ended_at", "end_reason",
    "message_count", "tool_call_count", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd",
    "api_call_count", "parent_session_id", "has_system_prompt", "has_model_config")
MESSAGE_FIELDS = ("id", "session_id", "role", "content", "tool_call_id", "tool_calls",
                  "tool_name", "timestamp", "token_count", "finish_reason", "reasoning",
                  "reasoning_content")
COUNTERS = ("message_count", "tool_call_count", "input_tokens", "output_tokens",
            "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "api_call_count")
# /v1/capabilities `endpoints` rows of the sessions API, in upstream order (oracle capabilities).
SESSION_ENDPOINTS = {
    "sessions": {"method": "GET", "path": "/api/sessions"},
    "session_create": {"method": "POST", "path": "/api/sessions"},
    "session": {"method": "GET", "path": "/api/sessions/{session_id}"},
    "session_update": {"method": "PATCH", "path": "/api/sessions/{session_id}"},
    "session_delete": {"method": "DELETE", "path": "/api/sessions/{session_id}"},
    "session_messages": {"method": "GET", "path": "/api/sessions/{session_id}/messages"},
    "session_fork": {"method": "POST", "path": "/api/sessions/{session_id}/fork"},
    "session_chat": {"method": "POST", "path": "/api/sessions/{session_id}/chat"},
    "session_chat_stream": {"method": "POST", "path": "/api/sessions/{session_id}/chat/stream"},
}
MAX_ID = 256
MAX_TITLE = 100
DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET = 50, 200, 1_000_000
PREVIEW_CHARS = 60
PATCHABLE = ("title", "end_reason")
# Upstream SessionDB.sanitize_title: control characters, then invisible format characters
# (zero-width, bidi overrides, word joiners, BOM, object replacement) go; whitespace collapses.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
INVISIBLE = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffc]")
LINE_BREAKS = re.compile(r"[\r\n\x00]")
TRAILING_NUMBER = re.compile(r" #\d+\Z")


def public(row):
    """The session object, in wire order."""
    return {name: row[name] for name in SESSION_FIELDS}


def list_row(row):
    """A list row: the session object with `last_active` and `preview` after the parent id."""
    out = {}
    for name in SESSION_FIELDS:
        out[name] = row[name]
        if name == "parent_session_id":
            out["last_active"] = row["last_active"]
            out["preview"] = preview(row.get("first_user") or "")
    return out


def preview(text):
    text = text.replace("\r", " ").replace("\n", " ")
    return text[:PREVIEW_CHARS] + "..." if len(text) > PREVIEW_CHARS else text


def sanitize_title(value):
    """Upstream title sanitising; None when nothing visible is left, InvalidTitle when long."""
    cleaned = re.sub(r"\s+", " ", INVISIBLE.sub("", CONTROL.sub("", value))).strip()
    if not cleaned:
        return None
    if len(cleaned) > MAX_TITLE:
        raise InvalidTitle(f"Title too long ({len(cleaned)} chars, max {MAX_TITLE})")
    return cleaned


def _int_param(raw, default, maximum):
    """Upstream paging: non-integers and negatives fall back to the default; capped."""
    try:
        value = int(raw) if raw is not None else default
    except ValueError:
        return default
    return default if value < 0 else min(value, maximum)


def json_object(raw):
    """The JSON rules shared by the sessions routes."""
    try:
        body = canonical.parse_strict(canonical.decode_body(raw or b""))
    except canonical.InvalidJSONText:
        raise InvalidRequest("Invalid JSON in request body") from None
    if not isinstance(body, dict):
        raise InvalidRequest("Request body must be a JSON object")
    return body


class Turn:
    """One stored exchange: the user text and what the agent answered (`compat.Result`)."""

    def __init__(self, user_text, result, *, model):
        self.user_text = user_text
        self.result = result
        self.model = model


class SessionBook:
    """Session rules over one instance; callers need no transaction (each method takes one)."""

    def __init__(self, instance, *, model_name=None, hex_digits=None):
        self.instance = instance
        self.records = instance.records
        self.model_name = model_name
        self.hex = hex_digits

    def now(self):
        return self.instance.now_ms() / 1000

    def new_id(self):
        return f"api_{int(self.now())}_{self.hex(8)}"

    def _row(self, session_id):
        row = self.records.get(SESSIONS, session_id)
        if row is None:
            raise SessionNotFound(session_id)
        return row

    def require(self, session_id):
        """Raise SessionNotFound unless the session exists (checked before bodies are read)."""
        self._row(session_id)

    def _blank(self, session_id, *, model, system_prompt=None, source="api_server", title=None,
               parent=None, at=None):
        now = self.now() if at is None else at
        row = {name: None for name in SESSION_FIELDS}
        row.update({name: 0 for name in COUNTERS})
        row.update(id=session_id, source=source, model=model, title=title, started_at=now,
                   parent_session_id=parent, has_system_prompt=bool(system_prompt),
                   has_model_config=False, system_prompt=system_prompt, last_active=now,
                   first_user=None)
        return row

    def _title_owner(self, title, other_than=None):
        for row in self.records.list(SESSIONS, where={"title": title}):
            if row["id"] != other_than:
                return row["id"]
        return None

    # --- /api/sessions ---------------------------------------------------------------------
    def create(self, raw):
        """POST /api/sessions; return the session object."""
        body = json_object(raw)
        # upstream: `id or session_id`, turned into a string (12345 -> "12345") and stripped
        given = body.get("id") or body.get("session_id")
        session_id = str(given).strip() if given else ""
        if not given:
            session_id = self.new_id()
        elif not session_id or LINE_BREAKS.search(session_id) or path_unsafe(session_id):
            raise InvalidSessionIdCode("Invalid session ID")
        elif len(session_id) > MAX_ID:
            raise InvalidSessionIdCode("Session ID too long")
        model = body.get("model") or self.model_name
        system_prompt = body.get("system_prompt")
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise InvalidSystemPrompt()
        with self.instance.transaction():
            if self.records.get(SESSIONS, session_id) is not None:
                raise SessionExists(session_id)
            title = body.get("title")
            if title is not None:
                # 0.19.0 answers a 500 for a long title here; PATCH's 400 is the documented one.
                title = sanitize_title(str(title))
                owner = title and self._title_owner(title)
                if owner:
                    raise InvalidTitle(f"Title already in use by session {owner}")
            row = self._blank(session_id, model=model, system_prompt=system_prompt, title=title)
            self.records.put(SESSIONS, session_id, row)
        return public(row)

    def get(self, session_id):
        return public(self._row(session_id))

    def patch(self, session_id, raw):
        """PATCH /api/sessions/{id}."""
        self.require(session_id)
        body = json_object(raw)
        unknown = sorted(key for key in body if key not in PATCHABLE)
        if unknown:
            raise UnsupportedSessionFields(", ".join(unknown))
        with self.instance.transaction():
            row = self._row(session_id)
            if "title" in body:
                title = body["title"]
                title = None if title is None else sanitize_title(str(title))
                owner = title and self._title_owner(title, other_than=session_id)
                if owner:
                    raise InvalidTitle(f"Title '{title}' is already in use by session {owner}")
                row["title"] = title
            if body.get("end_reason") and row["ended_at"] is None:
                row["ended_at"] = self.now()
                row["end_reason"] = str(body["end_reason"])
            self.records.put(SESSIONS, session_id, row)
        return public(row)

    def delete(self, session_id):
        """DELETE /api/sessions/{id}: messages go; forks are orphaned."""
        with self.instance.transaction():
            self._row(session_id)
            for message in self.records.list(MESSAGES, where={"session_id": session_id}):
                self.records.delete(MESSAGES, f"{session_id}:{message['id']:012d}")
            for child in self.records.list(SESSIONS, where={"parent_session_id": session_id}):
                self.records.put(SESSIONS, child["id"], {**child, "parent_session_id": None})
            self.records.delete(SESSIONS, session_id)
        return {"object": "hermes.session.deleted", "id": session_id, "deleted": True}

    def messages(self, session_id):
        """GET /api/sessions/{id}/messages: the transcript, oldest first."""
        self._row(session_id)
        rows = self.records.list(MESSAGES, where={"session_id": session_id}, order_by="id")
        return {"object": "list", "session_id": session_id,
                "data": [{name: row[name] for name in MESSAGE_FIELDS} for row in rows]}

    def history(self, session_id):
        """The stored transcript as chat messages (what the agent continues from)."""
        rows = self.records.list(MESSAGES, where={"session_id": session_id}, order_by="id")
        return [{"role": row["role"], "content": row["content"]} for row in rows]

    def page(self, params):
        """GET /api/sessions: newest activity first, `has_more` = a full page."""
        limit = _int_param(params.get("limit"), DEFAULT_LIMIT, MAX_LIMIT)
        offset = _int_param(params.get("offset"), 0, MAX_OFFSET)
        source = params.get("source") or None
        # include_children only adds sub-agent children, which nothing here creates.
        rows = self.records.list(SESSIONS, where={"source": source} if source else None)
        rows.sort(key=lambda row: (row["last_active"], row["started_at"], row["id"]),
                  reverse=True)
        data = [list_row(row) for row in rows[offset:offset + limit]]
        return {"object": "list", "data": data, "limit": limit, "offset": offset,
                "has_more": len(data) == limit}

    def fork(self, session_id, raw):
        """POST /api/sessions/{id}/fork; return the new session object."""
        self.require(session_id)
        body = json_object(raw)
        given = body.get("id") or body.get("session_id")
        new_id = str(given).strip() if given else ""
        if not new_id:
            new_id = self.new_id()
        elif LINE_BREAKS.search(new_id) or path_unsafe(new_id) or len(new_id) > MAX_ID:
            # 0.19.0 accepts "../x" here (oracle sessions_fork_path_unsafe); we refuse it as
            # create does, so no session id can name a path.
            raise InvalidSessionIdCode("Invalid session ID")
        with self.instance.transaction():
            source = self._row(session_id)
            if self.records.get(SESSIONS, new_id) is not None:
                raise SessionExists(new_id)
            if source["ended_at"] is None:
                source.update(ended_at=self.now(), end_reason="branched")
                self.records.put(SESSIONS, session_id, source)
            row = self._blank(new_id, model=source["model"],
                              system_prompt=source["system_prompt"], parent=session_id)
            row.update(has_system_prompt=source["has_system_prompt"],
                       first_user=source["first_user"], last_active=source["last_active"])
            copied = self.records.list(MESSAGES, where={"session_id": session_id},
                                       order_by="id")
            for message in copied:
                self._put_message({**message, "id": self.records.next_id(MESSAGE_SEQUENCE),
                                   "session_id": new_id})
            row["message_count"] = len(copied)
            title = body.get("title")
            if title is None:
                row["title"] = self._lineage_title(source["title"])
            self.records.put(SESSIONS, new_id, row)
        if title is not None:
            # Upstream sets a requested title after the fork is made: a refused title leaves
            # the untitled fork in place (oracle sessions_fork_title_conflict).
            with self.instance.transaction():
                title = sanitize_title(str(title))
                owner = title and self._title_owner(title, other_than=new_id)
                if owner:
                    raise InvalidTitle(f"Title '{title}' is already in use by session {owner}")
                row["title"] = title
                self.records.put(SESSIONS, new_id, row)
        return public(row)

    def _lineage_title(self, title):
        """The next title of a lineage: base, else `base #N` after the highest number taken."""
        base = TRAILING_NUMBER.sub("", title or "fork")
        numbers = []
        for row in self.records.list(SESSIONS):
            other = row["title"]
            if other == base:
                numbers.append(1)
            elif other and other.startswith(base + " #") and other[len(base) + 2:].isdigit():
                numbers.append(int(other[len(base) + 2:]))
        return base if not numbers else f"{base} #{max(numbers) + 1}"

    # --- turns from the agent endpoints ---------------------------------------------------
    def _put_message(self, message):
        self.records.put(MESSAGES, f"{message['session_id']}:{message['id']:012d}", message)

    def _message(self, session_id, role, content, at, **fields):
        message = {name: None for name in MESSAGE_FIELDS}
        message.update(id=self.records.next_id(MESSAGE_SEQUENCE), session_id=session_id,
                       role=role, content=content, timestamp=at, **fields)
        self._put_message(message)
        return message

    def record(self, session_id, turn, *, source="api_server", title=None, ended=None):
        """Append one turn (user text, tool exchanges, reply) to a session, creating it with
        the flags a session has after a turn when it does not exist yet; return the session row."""
        with self.instance.transaction():
            return self.append(session_id, turn, source=source, title=title, ended=ended)

    def append(self, session_id, turn, *, source="api_server", title=None, ended=None,
               at=None):
        """`record` inside the caller's transaction; `at` dates a turn the ticker ran late."""
        at = self.now() if at is None else at
        self.begin_turn(session_id, turn.user_text, model=turn.model, source=source,
                        title=title, at=at)
        return self.finish_turn(session_id, turn.result, model=turn.model, ended=ended, at=at)

    def begin_turn(self, session_id, user_text, *, model, source="api_server", title=None,
                   at=None):
        """The agent starts a turn: its session is created if need be and the user message
        stored at once (`finish_reason` null), as 0.19.0 does before it calls the model.
        The caller holds the transaction; return the session row."""
        at = self.now() if at is None else at
        row = self.records.get(SESSIONS, session_id)
        if row is None:
            row = self._blank(session_id, model=model, source=source, title=title, at=at)
        self._message(session_id, "user", user_text, at)
        row.update(model=model, has_system_prompt=True, has_model_config=True, last_active=at,
                   first_user=row["first_user"] or user_text)
        row["message_count"] += 1
        self.records.put(SESSIONS, session_id, row)
        return row

    def finish_turn(self, session_id, result, *, model, finish_reason="stop", ended=None,
                    at=None):
        """The agent ends the turn `begin_turn` started: tool exchanges, then the reply.
        `finish_reason=None` is a reply cut short (a stopped run keeps the text it had
        streamed, 0.19.0): no model call is counted for it. Return the session row."""
        at = self.now() if at is None else at
        row = self.records.get(SESSIONS, session_id)
        if row is None:  # deleted while the agent worked: the agent's write makes it again
            row = self._blank(session_id, model=model, at=at)
            row.update(has_system_prompt=True, has_model_config=True)
        added, tools = 0, 0
        for step in result.tools():
            call = {"id": step["id"], "type": "function",
                    "function": {"name": step["tool"], "arguments": arguments_text(step)}}
            self._message(session_id, "assistant", "", at, tool_calls=[call],
                          finish_reason="tool_calls")
            self._message(session_id, "tool", result_text(step), at,
                          tool_call_id=step["id"], tool_name=step["tool"])
            added, tools = added + 2, tools + 1
        self._message(session_id, "assistant", result.text, at, finish_reason=finish_reason)
        row.update(model=model, last_active=at)
        row["message_count"] += added + 1
        row["tool_call_count"] += tools
        if finish_reason is not None:
            usage = result.usage
            row["estimated_cost_usd"] = row["estimated_cost_usd"] or 0.0
            row["api_call_count"] += 1 + tools
            row["input_tokens"] += int(usage.get("input_tokens") or 0)
            row["output_tokens"] += int(usage.get("output_tokens") or 0)
        if ended is not None and row["ended_at"] is None:
            row["ended_at"], row["end_reason"] = at, ended
        self.records.put(SESSIONS, session_id, row)
        return row


def input_text(value):
    """The user text of a run's `input`: the string, or the last user message's text."""
    if isinstance(value, str):
        return value
    for item in reversed(value if isinstance(value, list) else []):
        if isinstance(item, dict) and item.get("role", "user") == "user":
            content = item.get("content")
            if isinstance(content, list):
                return "\n".join(str(part.get("text")) for part in content
                                 if isinstance(part, dict) and part.get("text"))
            return "" if content is None else str(content)
        if isinstance(item, str):
            return item
    return ""


class StoredResult:
    """A run's outcome in the shape `SessionBook.record` reads (no tool steps)."""

    def __init__(self, text, usage):
        self.text = text
        self.usage = usage or {}

    @staticmethod
    def tools():
        return []
