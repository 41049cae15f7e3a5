"""Resolve a request to an operationId from an OpenAPI document; build the admin document."""
import re

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class OperationMatcher:
    """Match (method, path) to an operationId; fewer path parameters win, trailing / optional."""

    def __init__(self, document):
        self.has_document = bool(document and document.get("paths"))
        entries = []
        for template, item in (document or {}).get("paths", {}).items():
            params = template.count("{")
            pattern = re.escape(template.rstrip("/") or "/")
            pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", pattern)
            regex = re.compile("^" + pattern + "/?$")
            for method, operation in item.items():
                if method in METHODS and isinstance(operation, dict):
                    entries.append((params, template, method.upper(), regex,
                                    operation.get("operationId")))
        entries.sort(key=lambda entry: (entry[0], entry[1]))
        self._by_method = {}
        for _, _, method, regex, operation_id in entries:
            self._by_method.setdefault(method, []).append((regex, operation_id))

    def match(self, method, path):
        """Return the operationId or None."""
        for regex, operation_id in self._by_method.get(method.upper(), ()):
            if regex.match(path):
                return operation_id
        return None


def admin_document(runtime):
    """Return the service's OpenAPI document plus every admin route under the admin prefix."""
    document = dict(runtime.service.openapi or {})
    paths = dict(document.get("paths", {}))
    error = {"description": "admin error envelope", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "object", "properties": {
            "type": {"type": "string"}, "message": {"type": "string"}}}}}}}}
    for key in runtime.admin.route_keys():
        method, path = key.split(" ", 1)
        if method == "HEAD":
            continue
        template = runtime.admin_prefix + re.sub(r":([A-Za-z_]+)", r"{\1}", path.rstrip("/"))
        params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                  for name in re.findall(r":([A-Za-z_]+)", path)]
        slug = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_") or "index"
        operation = {"operationId": f"admin_{method.lower()}_{slug}", "tags": ["admin"],
                     "responses": {"200": {"description": "ok"}, "400": error, "401": error,
                                   "404": error, "409": error}}
        if params:
            operation["parameters"] = params
        if method in ("POST", "PUT", "PATCH"):
            operation["requestBody"] = {"required": False, "content": {
                "application/json": {"schema": {"type": "object"}}}}
        paths.setdefault(template or runtime.admin_prefix, {})[method.lower()] = operation
    document["paths"] = paths
    document.setdefault("openapi", "3.0.3")
    document.setdefault("info", {"title": runtime.name, "version": runtime.version})
    return document
