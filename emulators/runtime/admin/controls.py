"""The standard admin controls (emulators/README.md, "Standard admin routes") as route parts,
one per feature, like state_api.py, credentials.py, snapshots.py and ui.py: each part's `routes()`
gives (method, path, handler), and a handler takes the admin Request and returns
(status, body[, headers])."""
import json
import re
import time

from ..errors import AdminError
from ..names import NAME
from ..openapi import admin_document
from ..state.clock import parse_duration, parse_instant
from ..state.faults import validate_rule
from ..state.timeline import MAIN, TimelineError

RESET_PARTS = {"faults", "clock", "journal", "metrics"}


class Basics:
    """The index, health, OpenAPI document, reset and the namespace list."""

    def __init__(self, emulator, route_keys):
        self.emulator = emulator
        self.route_keys = route_keys  # the admin plane's

    def routes(self):
        return [("GET", "/", self.index), ("GET", "/health", self.health),
                ("HEAD", "/health", self.health), ("GET", "/openapi.json", self.openapi),
                ("POST", "/reset", self.reset), ("GET", "/namespaces", self.namespaces)]

    def index(self, request):
        return 200, {"service": self.emulator.name, "routes": self.route_keys()}

    def health(self, request):
        emulator = self.emulator
        body = {k: v for k, v in emulator.service.describe(
            emulator.instance(request.namespace)).items()}
        body.update({
            "status": "ok", "service": emulator.name, "version": emulator.version,
            "uptimeMs": int((time.monotonic() - emulator.started) * 1000),
            "namespace": request.namespace,
            "clock": emulator.clocks.state(request.namespace),
            "namespaces": len(emulator.namespaces()),
            "adminPrefix": emulator.admin_prefix,
            "adminUi": emulator.admin_prefix + "/ui",
            "adminKey": bool(emulator.settings.admin_key),
        })
        return 200, body

    def openapi(self, request):
        return 200, admin_document(self.emulator, self.route_keys())

    def reset(self, request):
        keep = {part.strip() for part in request.query.get("keep", "").split(",") if part.strip()}
        unknown = keep - RESET_PARTS
        if unknown:
            raise AdminError(f"keep: expected a comma list of {', '.join(sorted(RESET_PARTS))}")
        every = request.flag("all")
        reset = self.emulator.reset(None if every else request.namespace, keep=keep)
        return 200, {"status": "ok", "reset": reset}

    def namespaces(self, request):
        return 200, {"default": "default", "namespaces": self.emulator.namespaces()}


class ClockControls:
    """`GET`/`POST /clock`."""

    def __init__(self, emulator):
        self.emulator = emulator

    def routes(self):
        return [("GET", "/clock", self.clock), ("POST", "/clock", self.set_clock)]

    def clock(self, request):
        self.emulator.touch(request.namespace)
        return 200, self.emulator.clocks.state(request.namespace)

    def set_clock(self, request):
        body = request.body  # an empty body too: the clock takes a JSON object
        if not isinstance(body, dict):
            raise AdminError("expected a JSON object")
        unknown = sorted(set(body) - {"reset", "set", "advance", "freeze", "resume"})
        if unknown:
            raise AdminError(f"unknown clock field(s): {', '.join(unknown)}")
        changes = {}
        for flag in ("reset", "freeze", "resume"):
            if flag in body:
                if not isinstance(body[flag], bool):
                    raise AdminError(f"{flag}: expected true or false")
        if body.get("reset"):
            changes["reset"] = True
        if "freeze" in body:
            changes["freeze"] = body["freeze"]
        if body.get("resume"):
            if body.get("freeze") is True:
                raise AdminError("freeze and resume contradict each other")
            changes["freeze"] = False
        if "set" in body:
            instant = parse_instant(body["set"])
            if instant is None:
                raise AdminError("set: expected epoch ms or ISO-8601")
            changes["set"] = instant
        if "advance" in body:
            amount = parse_duration(body["advance"])
            if amount is None:
                raise AdminError('advance: expected ms or "15m"-style')
            changes["advance"] = amount
        self.emulator.touch(request.namespace)
        return 200, self.emulator.clocks.apply(request.namespace, changes)


class FaultControls:
    """`/faults` and its presets."""

    def __init__(self, emulator):
        self.emulator = emulator

    def routes(self):
        return [("GET", "/faults", self.list_faults), ("POST", "/faults", self.add_fault),
                ("DELETE", "/faults", self.delete_faults),
                ("DELETE", "/faults/:id", self.delete_fault),
                ("GET", "/faults/presets", self.presets),
                ("POST", "/faults/presets/:name", self.apply_preset)]

    def list_faults(self, request):
        scope = None if request.flag("all") else request.namespace
        return 200, {"faults": self.emulator.faults.list(scope)}

    def add_fault(self, request):
        body = request.body
        if isinstance(body, dict) and "preset" in body and not any(
                key in body for key in ("status", "delayMs", "latencyMs", "drop", "effect")):
            overrides = {k: v for k, v in body.items() if k != "preset"}
            return self._preset(request, body["preset"], overrides, quoted=True)
        rule = validate_rule(body, request.namespace)
        return 201, self.emulator.faults.add(rule)

    def delete_faults(self, request):
        faults = self.emulator.faults
        rule_id = request.query.get("id")
        every = request.flag("all")
        count = faults.delete(request.namespace, rule_id, everywhere=every)
        if rule_id is not None and not count:
            raise AdminError(f"no fault {rule_id}", status=404)
        return 200, {"status": "ok"}  # exactly this: the count is GET /faults' business

    def delete_fault(self, request):
        request.query["id"] = request.params["id"]
        return self.delete_faults(request)

    def presets(self, request):
        return 200, {"presets": [{"name": name, **preset}
                                 for name, preset in self.emulator.service.presets.items()]}

    def apply_preset(self, request):
        overrides = request.body if request.body is not None else {}
        return self._preset(request, request.params["name"], overrides, quoted=False)

    def _preset(self, request, name, overrides, *, quoted):
        presets = self.emulator.service.presets
        if not presets:
            raise AdminError(f"{self.emulator.name} has no fault presets")
        if not isinstance(overrides, dict):
            raise AdminError("expected a JSON object of rule overrides")
        if not isinstance(name, str):
            raise AdminError("preset: expected a preset name")
        if name not in presets:
            shown = json.dumps(name) if quoted else name
            raise AdminError(f"no fault preset {shown}"
                             + ("" if quoted else f"; GET {self.emulator.admin_prefix}"
                                "/faults/presets"), status=404)
        rules = presets[name].get("rules", [])
        expanded = []
        for index, base in enumerate(rules, start=1):
            rule = {"namespace": request.namespace, **base,
                    **{k: v for k, v in overrides.items() if k != "id"}, "preset": name}
            rule_id = overrides.get("id", name)
            rule["id"] = f"{rule_id}_{index}" if len(rules) > 1 else rule_id
            expanded.append(validate_rule(rule, request.namespace))
        with self.emulator.db.transaction():  # the rules and the webhook fault, or neither
            answer = {"preset": name, "rules": [self.emulator.faults.add(r) for r in expanded]}
            webhook, hub = presets[name].get("webhook"), self.emulator.webhooks
            if webhook is not None and hub is not None:
                answer["webhook"] = self._webhook_fault(request, webhook, overrides)
        return 201, answer

    def _webhook_fault(self, request, webhook, overrides):
        """Arm a preset's `webhook: {mode, count?}` part: an override `count` and
        `namespace` apply to it too."""
        namespace = overrides.get("namespace", request.namespace)
        if not (isinstance(namespace, str) and NAME.match(namespace)):
            raise AdminError("a preset's webhook fault needs one namespace, not"
                             f" {json.dumps(namespace)}")
        body = {**webhook, **({"count": overrides["count"]} if "count" in overrides else {})}
        return self.emulator.webhooks.set_fault(namespace, body)


class TimelineControls:
    """`/timeline`, `/checkpoints` and `/branches`."""

    def __init__(self, emulator):
        self.emulator = emulator

    def routes(self):
        return [("GET", "/timeline", self.timeline), ("POST", "/checkpoints", self.checkpoint),
                ("POST", "/branches/:name", self.branch),
                ("POST", "/branches/:name/checkout", self.checkout),
                ("DELETE", "/branches/:name", self.delete_branch)]

    def timeline(self, request):
        self.emulator.touch(request.namespace)
        return 200, self.emulator.timeline.describe(request.namespace)

    def checkpoint(self, request):
        body = request.body if request.body is not None else {}
        if not isinstance(body, dict):
            raise AdminError('expected {"branch":"<name>"} or no body')
        branch = body.get("branch", MAIN)
        if not isinstance(branch, str) or not NAME.match(branch):
            raise TimelineError(f"bad branch name {json.dumps(branch)}")
        self.emulator.touch(request.namespace)
        timeline = self.emulator.timeline
        with self.emulator.db.transaction():
            checkpoint = timeline.commit(request.namespace, branch)
            return 201, {**checkpoint, "records": timeline.count(request.namespace, branch)}

    def branch(self, request):
        body = request.body if request.body is not None else {}
        name = request.params["name"]
        if not NAME.match(name):
            raise TimelineError(f"bad branch name {json.dumps(name)}")
        if not isinstance(body, dict) or ("at" in body and not isinstance(body["at"], str)):
            raise AdminError('expected {"at":"cp_..."} or no body')
        self.emulator.touch(request.namespace)
        return 201, self.emulator.timeline.branch(request.namespace, name, body.get("at"))

    def checkout(self, request):
        body = request.body
        name = request.params["name"]
        if not isinstance(body, dict) or not isinstance(body.get("checkpoint"), str):
            raise AdminError('expected {"checkpoint":"cp_..."}')
        if not NAME.match(name):
            raise TimelineError(f"bad branch name {json.dumps(name)}")
        self.emulator.touch(request.namespace)
        cp = self.emulator.timeline.checkout(request.namespace, name, body["checkpoint"])
        return 200, {"status": "ok", "branch": name, "checkpoint": cp}

    def delete_branch(self, request):
        self.emulator.timeline.delete_branch(request.namespace, request.params["name"])
        return 200, {"status": "ok"}


class JournalControls:
    """`/requests` and `/metrics`."""

    def __init__(self, emulator):
        self.emulator = emulator

    def routes(self):
        return [("GET", "/requests", self.requests), ("DELETE", "/requests", self.clear_requests),
                ("GET", "/metrics", self.metrics), ("DELETE", "/metrics", self.clear_metrics)]

    def requests(self, request):
        query = request.query
        filters = {}
        if "operationId" in query:
            filters["operation_id"] = query["operationId"]
        if "status" in query:
            if not re.fullmatch(r"\d{3}", query["status"]) and query["status"] != "0":
                raise AdminError("status: expected an HTTP status")
            filters["status"] = int(query["status"])
        if "since" in query:
            since = parse_instant(query["since"])
            if since is None:
                raise AdminError("since: expected epoch ms or ISO-8601")
            filters["since_ms"] = since
        for name, key in (("limit", "limit"), ("after", "after"), ("seq", "seq")):
            if name in query:
                if not re.fullmatch(r"[0-9]+", query[name]):
                    raise AdminError(f"{name}: expected a count")
                # Past SQLite's 64-bit INTEGER no entry is left to skip or cut anyway.
                filters[key] = min(int(query[name]), 2 ** 63 - 1)
        scope = None if request.flag("all") else request.namespace
        journal = self.emulator.journal
        return 200, {"size": journal.size, "requests": journal.entries(scope, **filters)}

    def clear_requests(self, request):
        self.emulator.journal.clear(None if request.flag("all") else request.namespace)
        return 200, {"status": "ok"}

    def metrics(self, request):
        scope = request.query.get("namespace")
        return 200, self.emulator.journal.metrics(scope)

    def clear_metrics(self, request):
        self.emulator.journal.clear_metrics(request.query.get("namespace"))
        return 200, {"status": "ok"}
