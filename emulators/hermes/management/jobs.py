"""JobBoard: the cron jobs API of the real server (Hermes 0.19.0) on the emulator's
clock. Jobs are rows of the instance records; a job becomes due when the namespace clock says so
and runs at the next tick of a 60-second ticker (upstream's period), lazily, when any jobs or
sessions route is served. A run is one agent turn (the scripted-reply queue) in a `cron_…`
session, and its execution record is what `GET /api/jobs` shows as `latest_execution`.
"""
import json
import math
import os
import re

from ..errors import InvalidJobId, JobError, JobNotFound
from ..sessions import SessionBook, Turn
from ..upstream import flatten
from . import schedule as schedules

# job id -> {id, job, latest}: the job and its latest execution as JSON text, since records do
# not keep key order and upstream's is part of the answer
JOBS = "hermes-jobs"
JOB_ID = re.compile(r"^[a-f0-9]{12}$")
TICK_S = 60              # upstream's ticker looks for due jobs every 60 s
MAX_NAME, MAX_PROMPT = 200, 5000
PATCHABLE = ("name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled")
# The fixed preamble the cron runner puts before a job's prompt (oracle
# jobs_sched_cron_session_messages).
CRON_PREAMBLE = (
    "[IMPORTANT: You are running as a scheduled cron job. DELIVERY: Your final response will be"
    " automatically delivered to the user \u2014 do NOT use send_message or try to deliver the"
    " output yourself. Just produce your report/output as your final response and the system"
    " handles the rest. SILENT: If there is genuinely nothing new to report, respond with"
    " exactly \"[SILENT]\" (nothing else) to suppress delivery. Never combine [SILENT] with"
    " content \u2014 either report your findings normally, or say [SILENT] and nothing more.]"
    "\n\n")
# Upstream's cron prompt scanner (tools/cronjob_tools.py): the pattern ids are upstream's, the
# expressions our reading of their descriptions.
SECRET_VAR = r"\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|API)"
THREATS = (
    ("prompt_injection",
     r"ignore\s+(?:\w+\s+)*(?:previous|all|above|prior)\s+(?:\w+\s+)*instructions"),
    ("deception_hide", r"do\s+not\s+tell\s+the\s+user"),
    ("sys_prompt_override", r"system\s+prompt\s+override"),
    ("disregard_rules", r"disregard\s+(?:your|all|any)\s+(?:\w+\s+)*"
                        r"(?:instructions|rules|guidelines)"),
    ("exfil_curl_auth_header", r"curl\s+[^\n]*(?:-H|--header)\s+[^\n]*" + SECRET_VAR),
    ("exfil_curl_data", r"curl\s+[^\n]*(?:-d|--data[\w-]*)\s+[^\n]*" + SECRET_VAR),
    ("exfil_wget_post", r"wget\s+[^\n]*--post-(?:data|file)[^\n]*" + SECRET_VAR),
    ("exfil_curl_url", r"curl\s+[^\n]*" + SECRET_VAR),
    ("exfil_wget_url", r"wget\s+[^\n]*" + SECRET_VAR),
    ("read_secrets", r"cat\s+[^\n]*(?:\.env|credentials|\.netrc|\.pgpass)"),
    ("ssh_backdoor", r"authorized_keys"),
    ("sudoers_mod", r"/etc/sudoers|visudo"),
    ("destructive_root_rm", r"rm\s+-rf\s+/"),
)
THREAT_PATTERNS = tuple((name, re.compile(pattern, re.I)) for name, pattern in THREATS)
INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
LIFECYCLE = re.compile(
    r"hermes\s+gateway\s+(?:restart|stop|kill)|systemctl\s+[^\n]*(?:restart|stop|kill)\s+"
    r"[^\n]*hermes|(?:pkill|killall)\s+[^\n]*hermes|launchctl\s+[^\n]*hermes", re.I)
LIFECYCLE_ERROR = (
    "Blocked: cron job contains a gateway lifecycle command (restart/stop/kill). This is blocked"
    " to prevent agent-driven SIGTERM-respawn loops under launchd/systemd supervision (#30719)."
    " Run `hermes gateway restart` from a shell outside the running gateway instead.")


def scan_prompt(prompt):
    """Refuse invisible characters and injection/exfiltration patterns (upstream texts)."""
    invisible = INVISIBLE.search(prompt)
    if invisible:
        raise JobError(f"Blocked: prompt contains invisible unicode "
                       f"U+{ord(invisible.group()):04X} (possible injection).")
    for name, pattern in THREAT_PATTERNS:
        if pattern.search(prompt):
            raise JobError(f"Blocked: prompt matches threat pattern '{name}'. Cron prompts"
                           " must not contain injection or exfiltration payloads.")


def check_text(body, field, limit, label):
    """Length rules of name/prompt; 0.19.0 crashes (500) on non-strings, we answer 400."""
    value = body.get(field)
    if value is not None and not isinstance(value, str):
        raise JobError(f"{label} must be a string")
    if value is not None and len(value) > limit:
        raise JobError(f"{label} must be \u2264 {limit} characters")
    return value


def normalize_skills(value):
    """A string becomes one skill; lists lose duplicates (order kept) and blanks."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    skills = []
    for item in items:
        text = str(item).strip()
        if text and text not in skills:
            skills.append(text)
    return skills


def parse_body(raw):
    try:
        body = json.loads((raw or b"").decode("utf-8", "replace"))
    except ValueError as exc:
        raise JobError(f"Invalid JSON in request body: {exc}") from None
    if not isinstance(body, dict):
        raise JobError("Request body must be a JSON object")
    return body


class JobBoard:
    """The jobs rules over one instance; the agent is the CompatBackend's scripted replies.
    Callers run `tick()` first, so answers show every run the clock has made due."""

    def __init__(self, compat):
        self.compat = compat
        self.instance = compat.instance
        self.records = compat.instance.records

    def now(self):
        return self.instance.now_ms() / 1000

    @staticmethod
    def check_id(job_id):
        if not JOB_ID.match(job_id):
            raise InvalidJobId()

    def _row(self, job_id):
        row = self.records.get(JOBS, job_id)
        if row is None:
            raise JobNotFound()
        return row

    def _save(self, row, job):
        row["job"] = json.dumps(job)
        self.records.put(JOBS, row["id"], row)

    def get(self, job_id):
        self.check_id(job_id)
        return {"job": json.loads(self._row(job_id)["job"])}

    def listing(self, include_disabled):
        jobs = []
        for row in self.records.list(JOBS):
            job = json.loads(row["job"])
            if job.get("enabled") or include_disabled:
                latest = row.get("latest")
                jobs.append({**job, "latest_execution": latest and json.loads(latest)})
        return {"jobs": jobs}

    def create(self, raw, origin):
        """POST /api/jobs: checks in upstream order, then the job."""
        body = parse_body(raw)
        for field in ("name", "schedule"):
            if body.get(field) is not None and not isinstance(body[field], str):
                raise JobError(f"{field.capitalize()} must be a string")
        name = (body.get("name") or "").strip()
        if not name:
            raise JobError("Name is required")
        if len(name) > MAX_NAME:
            raise JobError(f"Name must be \u2264 {MAX_NAME} characters")
        text = (body.get("schedule") or "").strip()
        if not text:
            raise JobError("Schedule is required")
        prompt = check_text(body, "prompt", MAX_PROMPT, "Prompt") or ""
        if prompt:
            scan_prompt(prompt)
        repeat = body.get("repeat")
        if repeat is not None and (not isinstance(repeat, int) or isinstance(repeat, bool)
                                   or repeat < 1):
            raise JobError("Repeat must be a positive integer")
        now = self.now()
        parsed = schedules.parse(text, now)
        if LIFECYCLE.search(prompt):
            raise JobError(LIFECYCLE_ERROR)
        skills = normalize_skills(body.get("skills"))
        deliver = body["deliver"] if "deliver" in body else "local"
        job = {
            "id": self.compat.hex(12), "name": name, "prompt": prompt, "skills": skills,
            "skill": skills[0] if skills else None, "model": None, "provider": None,
            # the provider/model the agent was configured with at creation: a custom
            # provider (as the oracle's) serving the advertised model
            "provider_snapshot": "custom", "model_snapshot": self.compat.model_name(),
            "base_url": None, "script": None, "no_agent": False, "context_from": None,
            "schedule": parsed, "schedule_display": parsed["display"],
            "repeat": {"times": repeat if repeat is not None else (
                1 if parsed["kind"] == "once" else None), "completed": 0},
            "enabled": True, "state": "scheduled", "paused_at": None, "paused_reason": None,
            "created_at": schedules.isoformat(now), "next_run_at": schedules.first_run(parsed, now),
            "last_run_at": None, "last_status": None, "last_error": None,
            "last_delivery_error": None,
            # an explicit null means "back to where it came from": the HTTP origin
            "deliver": "origin" if deliver is None else deliver,
            "origin": origin, "enabled_toolsets": None, "workdir": None}
        with self.instance.transaction():
            self._save({"id": job["id"], "latest": None}, job)
        return {"job": job}

    def patch(self, job_id, raw):
        """PATCH /api/jobs/{id}: refusals first, then the lookup, then the changes."""
        self.check_id(job_id)
        body = parse_body(raw)
        updates = {key: body[key] for key in PATCHABLE if key in body}
        if not updates:
            raise JobError("No valid fields to update")
        check_text(updates, "name", MAX_NAME, "Name")
        prompt = check_text(updates, "prompt", MAX_PROMPT, "Prompt")
        if prompt:
            scan_prompt(prompt)
        with self.instance.transaction():
            row = self._row(job_id)
            job = json.loads(row["job"])
            now = self.now()
            if "schedule" in updates:
                if not isinstance(updates["schedule"], str):
                    raise JobError("Schedule must be a string")
                parsed = schedules.parse(updates["schedule"], now)
                job.update(schedule=parsed, schedule_display=parsed["display"])
                if job.get("state") != "paused":
                    job["next_run_at"] = schedules.first_run(parsed, now)
            if "prompt" in updates and LIFECYCLE.search(updates["prompt"] or ""):
                raise JobError(LIFECYCLE_ERROR)
            for key in ("name", "prompt", "deliver", "repeat", "enabled"):
                if key in updates:
                    job[key] = updates[key]  # stored as given (upstream: `{"repeat": 3}` too)
            if "skills" in updates:
                job["skills"] = normalize_skills(updates["skills"])
                job["skill"] = job["skills"][0] if job["skills"] else None
            elif "skill" in updates and not isinstance(job.get("skills"), list):
                job["skill"] = updates["skill"]
            self._save(row, job)
        return {"job": job}

    def delete(self, job_id):
        self.check_id(job_id)
        with self.instance.transaction():
            self._row(job_id)
            self.records.delete(JOBS, job_id)
        return {"ok": True}

    def _change(self, job_id, change):
        self.check_id(job_id)
        with self.instance.transaction():
            row = self._row(job_id)
            job = json.loads(row["job"])
            change(job, self.now())
            self._save(row, job)
        return {"job": job}

    def pause(self, job_id):
        """Paused: hidden from the default list, `next_run_at` kept."""
        def change(job, now):
            job.update(enabled=False, state="paused", paused_at=schedules.isoformat(now),
                       paused_reason=None)
        return self._change(job_id, change)

    def resume(self, job_id):
        def change(job, now):
            due = schedules.first_run(job["schedule"], now)
            if job["schedule"].get("kind") == "once" and (
                    due is None or schedules.epoch_of(due) < now):
                raise JobError(f"Cannot resume: one-shot time {due} will never fire.")
            job.update(enabled=True, state="scheduled", paused_at=None, paused_reason=None,
                       next_run_at=due)
        return self._change(job_id, change)

    def run_now(self, job_id):
        """Due now; nothing runs inside the request: the next tick runs it."""
        def change(job, now):
            job.update(enabled=True, state="scheduled", paused_at=None, paused_reason=None,
                       next_run_at=schedules.isoformat(now))
        return self._change(job_id, change)

    # the ticker
    def tick(self):
        """Run every job whose next run falls on a ticker instant that the clock has passed."""
        now = self.now()
        for row in self.records.list(JOBS):
            job = json.loads(row["job"])
            if not job.get("enabled") or job.get("state") != "scheduled":
                continue
            due = job.get("next_run_at")
            if not due:
                continue
            ran_at = math.ceil(schedules.epoch_of(due) / TICK_S) * TICK_S
            if ran_at <= now:
                self._execute(row["id"], ran_at, now)

    def _execute(self, job_id, ran_at, now):
        with self.instance.transaction():
            row = self.records.get(JOBS, job_id)
            if row is None:
                return
            job = json.loads(row["job"])
            if job.get("next_run_at") is None or math.ceil(
                    schedules.epoch_of(job["next_run_at"]) / TICK_S) * TICK_S != ran_at:
                return  # another worker ran it first
            session_id = f"cron_{job_id}_{schedules.iso_compact(ran_at)}"
            prompt = CRON_PREAMBLE + flatten(job.get("prompt") or "")
            result = self.compat.run_agent(prompt, len(prompt.split()), session_id)
            failed = result.exception is not None or result.failed
            title = f"{job.get('name')} \u00b7 {schedules.title_time(ran_at)}"
            SessionBook(self.instance).append(
                session_id, Turn(prompt, result, model=self.compat.model_name()),
                source="cron", title=title, ended="cron_complete", at=ran_at)
            stamp = schedules.isoformat(ran_at)
            job.update(last_run_at=stamp, last_status="error" if failed else "ok",
                       last_error=(result.error or str(result.exception)) if failed else None)
            repeat = job.get("repeat")
            if isinstance(repeat, dict):
                repeat["completed"] = int(repeat.get("completed") or 0) + 1
            job["next_run_at"] = schedules.after_run(job["schedule"], ran_at, now)
            job["fire_claim"] = None
            row["latest"] = json.dumps({
                "id": self.compat.hex(32), "job_id": job_id, "source": "builtin",
                "process_id": self.compat.hex(32), "pid": os.getpid(), "process_started_at": 0,
                "status": "failed" if failed else "completed", "claimed_at": stamp,
                "started_at": stamp, "finished_at": stamp,
                "error": job["last_error"]})
            spent = isinstance(repeat, dict) and repeat.get("times") and (
                repeat["completed"] >= repeat["times"])
            if spent or job["next_run_at"] is None:
                # upstream removes a job whose repeats are used up (a one-shot after its run)
                self.records.delete(JOBS, job_id)
            else:
                self._save(row, job)
