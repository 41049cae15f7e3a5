"""OpenAPI 3 document of the Hermes routes the emulator serves (runs operationIds as reference;
the OpenAI-compatible operations are named by us)."""
from .management import openapi as openapi_sessions

_ERROR = {"$ref": "#/components/schemas/Error"}
_RESPONSE_ID = {"name": "response_id", "in": "path", "required": True,
                "schema": {"type": "string"}}
_OBJECT = {"type": "object"}
_IDEMPOTENCY_KEY, _SESSION_KEY, _SESSION_ID = (
    {"name": name, "in": "header", "schema": {"type": "string"}}
    for name in ("Idempotency-Key", "X-Hermes-Session-Key", "X-Hermes-Session-Id"))
_SSE = {"text/event-stream": {"schema": {"type": "string"}}}
_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}


def _json(schema, description):
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses):
    return {str(status): _json(_ERROR, "Hermes error envelope") for status in statuses}


DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "Hermes Agent API server (emulator)", "version": "v2026.8.31"},
    "paths": {
        "/health": {"get": {
            "operationId": "Health", "summary": "Liveness (no auth)",
            "responses": {"200": _json(_OBJECT, "status, platform, version")}}},
        "/v1/health": {"get": {
            "operationId": "HealthV1", "summary": "Liveness (no auth)",
            "responses": {"200": _json(_OBJECT, "status, platform, version")}}},
        "/health/detailed": {"get": {
            "operationId": "HealthDetailed", "summary": "Readiness and gateway state",
            "responses": {"200": _json(_OBJECT, "readiness"), **_errors(401)}}},
        "/v1/models": {"get": {
            "operationId": "ModelList", "summary": "The advertised model",
            "responses": {"200": _json(_OBJECT, "object: list"), **_errors(401)}}},
        "/v1/capabilities": {"get": {
            "operationId": "Capabilities", "summary": "Features and endpoints served",
            "responses": {"200": _json(_OBJECT, "hermes.api_server.capabilities"),
                          **_errors(401)}}},
        "/v1/chat/completions": {"post": {
            "operationId": "ChatCompletionCreate", "summary": "OpenAI chat completion",
            "parameters": [_IDEMPOTENCY_KEY, _SESSION_ID, _SESSION_KEY],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["messages"], "properties": {
                    "messages": {"type": "array", "items": _OBJECT}, "model": {},
                    "stream": {}, "tools": {}, "tool_choice": {}}}}}},
            "responses": {"200": {"description": "chat.completion, or SSE chunks",
                                  "content": {"application/json": {"schema": _OBJECT}, **_SSE}},
                          **_errors(400, 401, 413, 429, 500, 502)}}},
        "/v1/responses": {"post": {
            "operationId": "ResponseCreate", "summary": "OpenAI Responses create",
            "parameters": [_IDEMPOTENCY_KEY, _SESSION_KEY],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["input"], "properties": {
                    "input": {"oneOf": [{"type": "string"}, {"type": "array"}]},
                    "instructions": {}, "previous_response_id": {}, "conversation": {},
                    "conversation_history": {}, "store": {}, "stream": {}, "model": {},
                    "truncation": {}}}}}},
            "responses": {"200": {"description": "response, or SSE events",
                                  "content": {"application/json": {"schema": _OBJECT}, **_SSE}},
                          **_errors(400, 401, 404, 413, 429, 500)}}},
        "/v1/responses/{response_id}": {
            "get": {"operationId": "ResponseGet", "summary": "A stored response",
                    "parameters": [_RESPONSE_ID],
                    "responses": {"200": _json(_OBJECT, "response"), **_errors(401, 404)}},
            "delete": {"operationId": "ResponseDelete", "summary": "Delete a stored response",
                       "parameters": [_RESPONSE_ID],
                       "responses": {"200": _json(_OBJECT, "deleted"), **_errors(401, 404)}}},
        "/v1/runs": {"post": {
            "operationId": "RunCreate",
            "summary": "Admit a run (202) or replay an idempotent delivery",
            "parameters": [_IDEMPOTENCY_KEY, _SESSION_KEY],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["input"], "properties": {
                    "input": {"oneOf": [{"type": "string"}, {"type": "array"}]},
                    "session_id": {"type": "string"}, "model": {},
                    "instructions": {"type": "string"}, "previous_response_id": {"type": "string"},
                    "conversation_history": {"type": "array", "items": {"type": "object"}}}}}}},
            "responses": {"202": _json({"$ref": "#/components/schemas/Admission"}, "Admitted"),
                          **_errors(400, 401, 409, 413, 429, 501, 503)}}},
        "/v1/runs/{run_id}": {"get": {
            "operationId": "RunGet", "summary": "Poll a run", "parameters": [_RUN_ID],
            "responses": {"200": _json({"$ref": "#/components/schemas/Run"}, "The run"),
                          **_errors(401, 404)}}},
        "/v1/runs/{run_id}/stop": {"post": {
            "operationId": "RunStop", "summary": "Request a stop", "parameters": [_RUN_ID],
            "responses": {"200": _json({"type": "object"}, "stopping, or the settled run"),
                          **_errors(401, 404, 409)}}},
        "/v1/runs/{run_id}/events": {"get": {
            "operationId": "RunEvents", "summary": "Server-Sent Events of the run",
            "parameters": [_RUN_ID],
            "responses": {"200": {"description": "data-only SSE frames",
                                  "content": {"text/event-stream": {"schema": {"type": "string"}}}},
                          **_errors(401, 404)}}},
        "/v1/runs/{run_id}/approval": {"post": {
            "operationId": "RunApproval", "summary": "Resolve a pending approval",
            "parameters": [_RUN_ID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "properties": {
                    "choice": {"type": "string"}, "all": {}, "resolve_all": {}}}}}},
            "responses": {"200": _json({"type": "object"}, "hermes.run.approval_response"),
                          **_errors(400, 401, 404, 409)}}},
        "/v1/runs/{run_id}/steer": {"post": {
            "operationId": "RunSteer", "summary": "Inject guidance into a running run",
            "parameters": [_RUN_ID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "properties": {
                    "input": {}, "message": {}, "text": {}}}}}},
            "responses": {"200": _json({"type": "object"}, "hermes.run.steer"),
                          **_errors(400, 401, 404, 409)}}},
    },
    "components": {"schemas": {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {
            "type": "object", "properties": {
                "message": {"type": "string"}, "type": {"type": "string"},
                "param": {"nullable": True}, "code": {"type": "string", "nullable": True}}}}},
        "Admission": {"type": "object", "required": ["run_id", "status", "replayed"],
                      "properties": {"run_id": {"type": "string", "pattern": "^run_[0-9a-f]{32}$"},
                                     "status": {"type": "string"},
                                     "replayed": {"type": "boolean"}}},
        "Run": {"type": "object", "required": ["object", "run_id", "status", "created_at",
                                               "updated_at", "session_id", "model"],
                "properties": {"object": {"enum": ["hermes.run"]},
                               "run_id": {"type": "string"}, "status": {"type": "string"},
                               "created_at": {"type": "number"}, "updated_at": {"type": "number"},
                               "session_id": {"type": "string"}, "model": {},
                               "last_event": {"type": "string"}, "output": {"type": "string"},
                               "usage": {"type": "object"}, "error": {"type": "string"},
                               "pending_steer": {"type": "string"}}},
    }},
}
DOCUMENT["paths"].update(openapi_sessions.PATHS)  # sessions, jobs, skills, toolsets, cron fire
