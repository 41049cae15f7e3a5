"""The OpenAPI operation of `GET /rate_limit` (merged into the service's document)."""

PATHS = {"/rate_limit": {"get": {
    "operationId": "rate-limit/get",
    "summary": "Get rate limit status for the caller (not counted against any window)",
    "responses": {
        "200": {"description": "Every resource's window and `rate` (core's)",
                "content": {"application/json": {"schema": {"type": "object"}}}},
        "304": {"description": "Not modified"},
        "404": {"description": "Not Found"}}}}}
