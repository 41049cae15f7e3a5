"""The Hermes fault presets: rules matched by operationId, one-shot unless they model a state.

`hermes_throttled` is an effect rather than a canned answer: upstream checks its concurrency cap
only for a genuinely new run, after the idempotent replay lookup (Hermes' source after 0.19.0), so a
lost-acceptance replay still succeeds while the cap is full. Draining precedes the handler
upstream, so it stays a canned 503.
"""
from .runs.backend import EFFECT_DROP, EFFECT_KEYS_IGNORED, EFFECT_NO_STEER, EFFECT_THROTTLE

PRESETS = {
    "hermes_submit_accepted_drop": {
        "description": "Admit the next new run, commit it, then drop the connection without"
                       " a response; retry with the same Idempotency-Key to recover it",
        "rules": [{"operationId": "RunCreate", "count": 1, "effect": EFFECT_DROP}],
    },
    "hermes_poll_timeout": {
        "description": "Delay the next run poll by 1000 ms of wall time (client deadlines)",
        "rules": [{"operationId": "RunGet", "count": 1, "delayMs": 1000}],
    },
    "hermes_throttled": {
        "description": "Answer the next new run submission 429 rate_limit_exceeded with"
                       " Retry-After: 1 (replays of admitted keys still succeed)",
        "rules": [{"operationId": "RunCreate", "count": 1, "effect": EFFECT_THROTTLE}],
    },
    # One cap is shared by chat, responses and runs upstream; the
    # effect answers 429 after auth and before the body is parsed, as upstream orders it.
    # The cap stays full until the rules are deleted: a one-shot rule would be spent by any
    # matching request, even one that auth then refuses, which upstream never counts.
    "hermes_chat_throttled": {
        "description": "The concurrency cap is full: every chat completion and response answers"
                       " 429 rate_limit_exceeded (\"Too many concurrent runs (max 10)\"),"
                       " Retry-After: 1, until DELETE /__admin/faults",
        "rules": [{"operationId": "ChatCompletionCreate", "effect": EFFECT_THROTTLE},
                  {"operationId": "ResponseCreate", "effect": EFFECT_THROTTLE}],
    },
    # Hermes 0.19.0 (the newest release, as observed side by side) predates the runs API's
    # idempotency and the steer route: it never reads the header, answers 202 without
    # `replayed`, answers any method of /v1/runs/{id}/steer as an unknown path, and its
    # capabilities name neither. The /p/{profile}/ mirrors match the same operationIds; a
    # wrong method of the steer path has none, so the steer rules match by path, the mirror's
    # path too. A behaviour, not a one-off: it holds until the rules are deleted.
    "hermes_run_keys_ignored": {
        "description": "Hermes 0.19.0: POST /v1/runs ignores Idempotency-Key (every submission"
                       " is a new run, 202 without `replayed`), /v1/runs/{run_id}/steer is an"
                       " unknown path (plain-text 404 `404: Not Found`, before auth, any"
                       " method) and /v1/capabilities has no idempotency block and no steer"
                       " feature or endpoint, the /p/{profile}/ mirrors too, until DELETE"
                       " /__admin/faults",
        "rules": [{"operationId": "RunCreate", "effect": EFFECT_KEYS_IGNORED},
                  {"operationId": "Capabilities", "effect": EFFECT_KEYS_IGNORED},
                  {"operationId": "Capabilities", "effect": EFFECT_NO_STEER},
                  {"path": "/v1/runs/{run_id}/steer", "effect": EFFECT_NO_STEER},
                  {"path": "/p/{profile}/v1/runs/{run_id}/steer", "effect": EFFECT_NO_STEER}],
    },
    "hermes_draining": {
        "description": "Answer the next run submission 503 gateway_draining with Retry-After: 1",
        "rules": [{"operationId": "RunCreate", "count": 1, "status": 503,
                   "headers": {"Retry-After": "1"},
                   "body": {"error": {
                       "message": "Gateway is draining existing work; retry shortly.",
                       "type": "invalid_request_error", "param": None,
                       "code": "gateway_draining"}}}],
    },
}
