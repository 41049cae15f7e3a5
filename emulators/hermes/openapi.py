"""OpenAPI 3 document of the Hermes runs routes the emulator serves (operationIds as reference)."""

_ERROR = {"$ref": "#/components/schemas/Error"}
_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}


def _json(schema, description):
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses):
    return {str(status): _json(_ERROR, "Hermes error envelope") for status in statuses}


DOCUMENT = {
    "openapi": "3.0.3",
    "info": {"title": "Hermes Agent runs API (emulator)", "version": "v2026.8.31"},
    "paths": {
        "/v1/runs": {"post": {
            "operationId": "RunCreate",
            "summary": "Admit a run (202) or replay an idempotent delivery",
            "parameters": [
                {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}},
                {"name": "X-Hermes-Session-Key", "in": "header", "schema": {"type": "string"}}],
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
                    "choice": {"type": "string"}, "request_id": {"type": "string"},
                    "all": {}, "resolve_all": {}}}}}},
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
                               "approval": {"type": "object"},
                               "pending_steer": {"type": "string"}}},
    }},
}
