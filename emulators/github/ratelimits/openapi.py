"""The OpenAPI answers of `GET /rate_limit` (its row is in the operation table, operations.py)."""

ANSWER = {"description": "Every resource's window and `rate` (core's)",
          "content": {"application/json": {"schema": {"type": "object"}}}}
FAILURES = {"304": {"description": "Not modified"}, "404": {"description": "Not Found"}}
