"""The admin UI shell: `GET /ui` is a small self-contained HTML page (open even
with an admin key: it holds no data) that reads `GET /ui/manifest` and other admin routes.
"""
import base64
import hashlib


class Page:
    """A non-JSON admin answer: its content type and bytes."""

    __slots__ = ("content_type", "body")

    def __init__(self, content_type, body):
        self.content_type = content_type
        self.body = body


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}h2{font-size:1.05em;margin:1.2em 0 .3em}
label{margin-right:1em}input{font:inherit}
ul{margin:0;padding-left:1.2em;font-family:ui-monospace,monospace;font-size:13px}
#status{color:#a00}button.ns{font:inherit;border:0;background:none;color:#05c;cursor:pointer;
padding:0}
"""

# Every value lands in the page through textContent, never as markup.
SCRIPT = """
const base = location.pathname.replace(/\\/ui\\/?$/, "");
const $ = (id) => document.getElementById(id);
$("key").value = sessionStorage.getItem("adminKey") || "";
async function get(path) {
  const key = $("key").value;
  const res = await fetch(base + path,
                          {headers: key ? {"x-mockingbird-admin-key": key} : {}});
  const body = await res.json();
  if (!res.ok) throw new Error(body.error ? body.error.message : "HTTP " + res.status);
  return body;
}
function fill(id, items, make) {
  $(id).replaceChildren(...items.map((item) => {
    const li = document.createElement("li");
    li.append(make ? make(item) : item);
    return li;
  }));
}
function pick(name) {
  const button = document.createElement("button");
  button.className = "ns";
  button.textContent = name;
  button.onclick = () => { $("ns").value = name; load(); };
  return button;
}
async function load() {
  sessionStorage.setItem("adminKey", $("key").value);
  $("status").textContent = "";
  try {
    const manifest = await get("/ui/manifest");
    if (!$("ns").value) $("ns").value = manifest.namespace;
    const ns = encodeURIComponent($("ns").value);
    $("title").textContent = manifest.service + "@" + manifest.version + " admin";
    fill("routes", manifest.routes);
    fill("namespaces", (await get("/namespaces")).namespaces, pick);
    const journal = await get("/requests?limit=50&namespace=" + ns);
    fill("journal", journal.requests.reverse().map((entry) => [entry.at, entry.method,
      entry.path, entry.status, entry.operationId || "-"].join(" ")));
  } catch (error) {
    $("status").textContent = error.message;
  }
}
$("load").onclick = load;
load();
"""

HTML = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>emulator admin</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{STYLE}</style></head>
<body>
<h1 id="title">emulator admin</h1>
<p><label>admin key <input id="key" type="password" autocomplete="off"></label>
<label>namespace <input id="ns" size="16"></label>
<button id="load">load</button> <span id="status"></span></p>
<h2>namespaces</h2><ul id="namespaces"></ul>
<h2>journal (newest first)</h2><ul id="journal"></ul>
<h2>admin routes</h2><ul id="routes"></ul>
<script>{SCRIPT}</script>
</body></html>
""".encode()


def _digest(text):
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# Only this page's own script and style run; it talks to this origin only.
HEADERS = [("content-security-policy",
            f"default-src 'none'; script-src {_digest(SCRIPT)}; style-src {_digest(STYLE)};"
            " connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
           ("x-content-type-options", "nosniff"), ("cache-control", "no-store")]


class UiRoutes:
    """`GET /ui`, `GET /ui/` (the shell) and `GET /ui/manifest`."""

    def __init__(self, emulator, route_keys):
        self.emulator = emulator
        self.route_keys = route_keys  # the admin plane's, for the manifest

    def routes(self):
        """Return (method, path, handler) of every UI route."""
        return [("GET", "/ui", self.shell), ("GET", "/ui/", self.shell),
                ("GET", "/ui/manifest", self.manifest)]

    def shell(self, request):
        return 200, Page("text/html; charset=utf-8", HTML), list(HEADERS)

    def manifest(self, request):
        emulator = self.emulator
        prefix = emulator.admin_prefix
        return 200, {"service": emulator.name, "version": emulator.version,
                     "namespace": request.namespace, "adminPrefix": prefix,
                     "adminUi": prefix + "/ui", "openapi": prefix + "/openapi.json",
                     "routes": self.route_keys()}
