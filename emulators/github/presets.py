"""The GitHub fault presets (`/__admin/faults/presets`): exact statuses, bodies, headers."""
from .errors import TROUBLESHOOTING

MUTATIONS = ("git/create-ref", "git/update-ref", "pulls/create", "pulls/update",
             "git/receive-pack")
ACCEPTED_DROP = "github.accepted_drop"
LOST_UPDATE = "github.lost_update"  # a check run update answered 200 and never applied
MERGEABILITY_PENDING = "github.mergeability_pending"  # pulls/get before GitHub computed it


def _accepted_drop(operation):
    return {"description": f"Accept one successful {operation} mutation, then drop its response",
            "rules": [{"operationId": operation, "count": 1, "effect": ACCEPTED_DROP}]}


def _each_mutation(status, body, headers=None):
    rules = []
    for operation in MUTATIONS:
        rule = {"operationId": operation, "count": 1, "status": status, "body": body}
        if headers:
            rule["headers"] = dict(headers)
        rules.append(rule)
    return rules


# Description strings are the reference's, missing spaces included.
PRESETS = {
    "github_pr_create_accepted_drop": _accepted_drop("pulls/create"),
    "github_pr_update_accepted_drop": _accepted_drop("pulls/update"),
    "github_ref_create_accepted_drop": _accepted_drop("git/create-ref"),
    "github_ref_update_accepted_drop": _accepted_drop("git/update-ref"),
    "github_push_accepted_drop": _accepted_drop("git/receive-pack"),
    "github_pr_merge_accepted_drop": _accepted_drop("pulls/merge"),
    "github_check_run_update_lost": {
        "description": "Answer one check run update 200 as if applied, and apply nothing (the "
                       "run keeps its status: a reporter that trusts the answer is wrong)",
        "rules": [{"operationId": "checks/update", "count": 1, "effect": LOST_UPDATE}]},
    "github_mergeability_pending": {
        "description": "Answer the next three pull request reads with mergeable null and "
                       "mergeable_state unknown, as GitHub does while it computes them (a "
                       "client should poll)",
        "rules": [{"operationId": "pulls/get", "count": 3, "effect": MERGEABILITY_PENDING}]},
    "github_unavailable": {
        "description": "Reject one request per supported mutation operation before writing, "
                       "with503",
        "rules": _each_mutation(503, {"message": "Service Unavailable",
                                      "documentation_url": TROUBLESHOOTING, "status": "503"}),
    },
    "github_denied": {
        "description": "Script one integration-denied403 per supported mutation operation; "
                       "no policy evaluation",
        "rules": _each_mutation(403, {
            "message": "Resource not accessible by integration",
            "documentation_url": TROUBLESHOOTING + "#resource-not-accessible", "status": "403"}),
    },
    "github_rate_limited": {
        "description": "Script one secondary-limit429 per mutation operation, with a60second "
                       "retry hint",
        "rules": _each_mutation(429, {
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes "
                       "before you try again.",
            "documentation_url": "https://docs.github.com/rest/using-the-rest-api/"
                                 "rate-limits-for-the-rest-api#exceeding-the-rate-limit",
            "status": "429"},
            {"Retry-After": "60", "X-RateLimit-Remaining": "1", "X-RateLimit-Resource": "core"}),
    },
}
