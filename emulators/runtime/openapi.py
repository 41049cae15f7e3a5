"""Resolve a request to an operationId from an OpenAPI document; build the admin document."""
import re

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class OperationMatcher:
    """Match (method, path) to an operationId; fewer path parameters win, trailing / optional.

    A path parameter flagged `x-slash-bearing: true` (on the parameter or its schema, declared
    on the operation or the path item) matches one or more whole segments (`heads/feature/x`);
    every other parameter matches exactly one. Templates without such a parameter win ties.
    """

    def __init__(self, document):
        document = document or {}
        self.has_document = bool(document.get("paths"))
        entries = []
        for template, item in document.get("paths", {}).items():
            if not isinstance(item, dict):
                continue
            shared = _slash_bearing(document, item.get("parameters"))
            params = template.count("{")
            for method, operation in item.items():
                if method not in METHODS or not isinstance(operation, dict):
                    continue
                greedy = shared | _slash_bearing(document, operation.get("parameters"))
                regex = re.compile("^" + _pattern(template, greedy) + "/?$")
                entries.append(((params, len(greedy), template), method.upper(), regex,
                                operation.get("operationId")))
        entries.sort(key=lambda entry: entry[0])
        self._by_method = {}
        for _, method, regex, operation_id in entries:
            self._by_method.setdefault(method, []).append((regex, operation_id))
        self._seen = {}  # (method, path) -> operationId: a large document is a long regex scan

    def match(self, method, path):
        """Return the operationId or None."""
        key = (method, path)
        found = self._seen.get(key, self)
        if found is not self:
            return found
        found = None
        for regex, operation_id in self._by_method.get(method.upper(), ()):
            if regex.match(path):
                found = operation_id
                break
        if len(self._seen) >= 4096:
            self._seen.clear()
        self._seen[key] = found
        return found


def _slash_bearing(document, parameters):
    """Return the names of path parameters flagged `x-slash-bearing: true`."""
    names = set()
    for parameter in parameters or ():
        if isinstance(parameter, dict) and "$ref" in parameter:
            parameter = _resolve(document, parameter["$ref"])
        if not isinstance(parameter, dict) or parameter.get("in") != "path":
            continue
        schema = parameter.get("schema") if isinstance(parameter.get("schema"), dict) else {}
        if parameter.get("x-slash-bearing") is True or schema.get("x-slash-bearing") is True:
            names.add(parameter.get("name"))
    return names


def _resolve(document, ref):
    """Follow a local `#/...` reference; anything else resolves to None."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node = document
    for part in ref[2:].split("/"):
        node = node.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(node, dict) \
            else None
    return node


def _pattern(template, greedy):
    """Turn a path template into a regex body: `{name}` is one segment, or several if greedy."""
    out, position = [], 0
    base = template.rstrip("/") or "/"
    for match in re.finditer(r"\{([^/{}]+)\}", base):
        out.append(re.escape(base[position:match.start()]))
        out.append(".+" if match.group(1) in greedy else "[^/]+")
        position = match.end()
    out.append(re.escape(base[position:]))
    return "".join(out)


def admin_document(emulator, route_keys):
    """Return the service's OpenAPI document plus every admin route (`route_keys`, sorted
    "METHOD /path" strings) under the admin prefix."""
    document = dict(emulator.service.openapi or {})
    paths = dict(document.get("paths", {}))
    error = {"description": "admin error envelope", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "object", "properties": {
            "type": {"type": "string"}, "message": {"type": "string"}}}}}}}}
    for key in route_keys:
        method, path = key.split(" ", 1)
        if method == "HEAD":
            continue
        template = emulator.admin_prefix + re.sub(r":([A-Za-z_]+)", r"{\1}", path.rstrip("/"))
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
        paths.setdefault(template or emulator.admin_prefix, {})[method.lower()] = operation
    document["paths"] = paths
    document.setdefault("openapi", "3.0.3")
    document.setdefault("info", {"title": emulator.name, "version": emulator.version})
    return document
