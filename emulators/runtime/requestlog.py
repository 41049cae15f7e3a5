"""Request log sinks (`--log`, `--log-requests`, `Settings.on_log`): each finished vendor
request's journal entry (no `at`), as a `pretty` line or a `json` RequestLog object; metadata
only, like the journal."""
import json
import logging
import sys
import threading

log = logging.getLogger("emulators")

MODES = ("pretty", "json", "off")


def guarded_sink(sink):
    """Wrap `sink(entry)` so an error in it is logged and never reaches the request; None stays
    None (the runtime then does nothing extra per request)."""
    if sink is None:
        return None

    def call(entry):
        try:
            sink(dict(entry))  # a copy: the sink cannot change what the runtime still uses
        except Exception:
            log.exception("emulators: the request log sink failed (request answered anyway)")
    return call


def pretty(entry):
    """Format an entry as one line:
    `<service> <METHOD> <path> <status> <operationId|UNMATCHED|-> <ms>ms[ [ns]][ fault=<id>]
    [ adopted][ received=<n>B|? ct=<ct|-> [te=<te>]][ issues=<up to 3>(+k)]`."""
    operation = entry.get("operationId") or ("UNMATCHED" if entry.get("unmatched") else "-")
    parts = [entry["service"], entry["method"], entry["path"], str(entry["status"]), operation,
             f"{_number(entry.get('durationMs', 0))}ms"]
    if entry.get("namespace", "default") != "default":
        parts.append(f"[{entry['namespace']}]")
    if entry.get("faultId"):
        parts.append(f"fault={entry['faultId']}")
    if entry.get("adopted"):
        parts.append("adopted")
    request = entry.get("request")
    if request is not None:
        size = request.get("bodyBytes")
        parts.append("received=?" if size is None else f"received={size}B")
        parts.append(f"ct={request.get('contentType') or '-'}")
        if request.get("transferEncoding"):
            parts.append(f"te={request['transferEncoding']}")
    issues = entry.get("issues")
    if issues:
        shown = ",".join(_issue(issue) for issue in issues[:3])
        more = f"(+{len(issues) - 3})" if len(issues) > 3 else ""
        parts.append(f"issues={shown}{more}")
    return " ".join(parts)


def as_json(entry):
    """Format an entry as one compact JSON object (a RequestLog record)."""
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


def sink(mode, stream=None):
    """Return the `on_log` callable for a CLI `--log` mode (None for `off`), writing whole lines
    to `stream` (default stdout) under a lock so threads never interleave."""
    if mode not in MODES:
        raise ValueError(f"--log must be pretty, json or off (got {mode})")
    if mode == "off":
        return None
    format_ = pretty if mode == "pretty" else as_json
    lock = threading.Lock()

    def write(entry):
        line = format_(entry) + "\n"
        out = stream or sys.stdout
        with lock:
            out.write(line)
            out.flush()
    return write


def _number(value):
    # JavaScript's number printing, as the reference's log shows it: 3 not 3.0, 1.25 as is.
    return str(int(value)) if float(value).is_integer() else str(value)


def _issue(issue):
    if not isinstance(issue, dict):
        return str(issue)
    path = issue.get("path")
    if isinstance(path, (list, tuple)):
        path = ".".join(str(part) for part in path)
    return f"{path or '$'}:{issue.get('kind') or issue.get('message') or '?'}"
