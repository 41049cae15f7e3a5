"""OpenAPI paths of the real server's management routes (sessions, jobs, skills, toolsets, cron
fire, platform events); openapi.py merges them into the emulator's document."""

_OBJECT = {"type": "object"}
_ERROR = {"$ref": "#/components/schemas/Error"}
_FLAT_ERROR = {"type": "object", "required": ["error"],
               "properties": {"error": {"type": "string"}}}
_SSE = {"text/event-stream": {"schema": {"type": "string"}}}
_SESSION_ID = {"name": "session_id", "in": "path", "required": True,
               "schema": {"type": "string"}}
_JOB_ID = {"name": "job_id", "in": "path", "required": True,
           "schema": {"type": "string", "pattern": "^[a-f0-9]{12}$"}}
_SESSION_KEY = {"name": "X-Hermes-Session-Key", "in": "header", "schema": {"type": "string"}}


def _json(schema, description):
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses):
    return {str(status): _json(_ERROR, "Hermes error envelope") for status in statuses}


def _flat(*statuses):
    return {str(status): _json(_FLAT_ERROR, "flat {error: text}") for status in statuses}


def _body(**properties):
    return {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "properties": {name: schema or {} for name, schema in
                                         properties.items()}}}}}


def _op(operation_id, summary, responses, parameters=(), body=None):
    op = {"operationId": operation_id, "summary": summary, "responses": responses}
    if parameters:
        op["parameters"] = list(parameters)
    if body is not None:
        op["requestBody"] = body
    return op


_SESSION = _json(_OBJECT, "{object: hermes.session, session}")
_CHAT_BODY = _body(message={}, input={}, system_message={"type": "string"},
                   instructions={"type": "string"})
_JOB = _json(_OBJECT, "{job}")

PATHS = {
    "/api/sessions": {
        "get": _op("SessionList", "Sessions by latest activity (limit, offset, source)",
                   {"200": _json(_OBJECT, "object: list, data, limit, offset, has_more"),
                    **_errors(401)},
                   [{"name": name, "in": "query", "schema": {"type": "string"}}
                    for name in ("limit", "offset", "source", "include_children")]),
        "post": _op("SessionCreate", "Create an empty session",
                    {"201": _SESSION, **_errors(400, 401, 409)},
                    body=_body(id={"type": "string"}, session_id={"type": "string"},
                               title={"type": "string"}, model={"type": "string"},
                               system_prompt={"type": "string"}))},
    "/api/sessions/{session_id}": {
        "get": _op("SessionGet", "One session", {"200": _SESSION, **_errors(401, 404)},
                   [_SESSION_ID]),
        "patch": _op("SessionUpdate", "Change title / end_reason",
                     {"200": _SESSION, **_errors(400, 401, 404)}, [_SESSION_ID],
                     _body(title={"type": "string", "nullable": True},
                           end_reason={"type": "string"})),
        "delete": _op("SessionDelete", "Delete a session and its messages",
                      {"200": _json(_OBJECT, "hermes.session.deleted"), **_errors(401, 404)},
                      [_SESSION_ID])},
    "/api/sessions/{session_id}/messages": {
        "get": _op("SessionMessages", "The transcript, oldest first",
                   {"200": _json(_OBJECT, "object: list, session_id, data"),
                    **_errors(401, 404)}, [_SESSION_ID])},
    "/api/sessions/{session_id}/fork": {
        "post": _op("SessionFork", "Branch a copy of the session",
                    {"201": _SESSION, **_errors(400, 401, 404, 409)}, [_SESSION_ID],
                    _body(id={"type": "string"}, session_id={"type": "string"},
                          title={"type": "string"}))},
    "/api/sessions/{session_id}/chat": {
        "post": _op("SessionChat", "One agent turn in the session",
                    {"200": _json(_OBJECT, "hermes.session.chat.completion"),
                     **_errors(400, 401, 404, 500)}, [_SESSION_ID, _SESSION_KEY], _CHAT_BODY)},
    "/api/sessions/{session_id}/chat/stream": {
        "post": _op("SessionChatStream", "One agent turn as named SSE events",
                    {"200": {"description": "named SSE events", "content": _SSE},
                     **_errors(400, 401, 404)}, [_SESSION_ID, _SESSION_KEY], _CHAT_BODY)},
    "/api/jobs": {
        "get": _op("JobList", "Jobs in creation order (include_disabled=true shows paused ones)",
                   {"200": _json(_OBJECT, "{jobs: [job + latest_execution]}"), **_errors(401)},
                   [{"name": "include_disabled", "in": "query", "schema": {"type": "string"}}]),
        "post": _op("JobCreate", "Schedule a job", {"200": _JOB, **_flat(400), **_errors(401)},
                    body=_body(name={"type": "string"}, schedule={"type": "string"},
                               prompt={"type": "string"}, deliver={}, skills={},
                               repeat={"type": "integer", "minimum": 1}))},
    "/api/jobs/{job_id}": {
        "get": _op("JobGet", "One job", {"200": _JOB, **_flat(400, 404), **_errors(401)},
                   [_JOB_ID]),
        "patch": _op("JobUpdate", "Change a job", {"200": _JOB, **_flat(400, 404),
                                                   **_errors(401)}, [_JOB_ID],
                     _body(name={}, schedule={}, prompt={}, deliver={}, skills={}, skill={},
                           repeat={}, enabled={})),
        "delete": _op("JobDelete", "Delete a job",
                      {"200": _json(_OBJECT, "{ok: true}"), **_flat(400, 404), **_errors(401)},
                      [_JOB_ID])},
    "/api/jobs/{job_id}/pause": {
        "post": _op("JobPause", "Pause a job", {"200": _JOB, **_flat(400, 404), **_errors(401)},
                    [_JOB_ID])},
    "/api/jobs/{job_id}/resume": {
        "post": _op("JobResume", "Resume a job", {"200": _JOB, **_flat(400, 404),
                                                  **_errors(401)}, [_JOB_ID])},
    "/api/jobs/{job_id}/run": {
        "post": _op("JobRun", "Make a job due now", {"200": _JOB, **_flat(400, 404),
                                                     **_errors(401)}, [_JOB_ID])},
    "/v1/skills": {
        "get": _op("SkillList", "Skills the agent can load",
                   {"200": _json(_OBJECT, "object: list"), **_errors(401)})},
    "/v1/toolsets": {
        "get": _op("ToolsetList", "Toolsets of the api_server platform",
                   {"200": _json(_OBJECT, "object: list, platform, data"), **_errors(401)})},
    "/api/cron/fire": {
        "post": _op("CronFire", "Fire a job (NAS-minted token; none is valid here)",
                    {**_flat(401)}, body=_body(job_id={"type": "string"}))},
    "/api/platforms/{platform}/events": {
        "post": _op("PlatformEvents", "Callback ingress of other platform adapters",
                    {**_errors(400, 503)},
                    [{"name": "platform", "in": "path", "required": True,
                      "schema": {"type": "string"}}])},
}

OPERATIONS = tuple(op["operationId"] for item in PATHS.values() for op in item.values())
