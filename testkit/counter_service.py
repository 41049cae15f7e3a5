"""A test-only key-value/counter service that exercises every part of the runtime contract."""
import os

import falcon

from emulators.runtime import EmulatorError, Service, add_fallback_handlers, instance_of


class ItemNotFound(EmulatorError):
    status = 404
    type = "not_found"
    message = "no such item"


class CounterRejected(EmulatorError):
    """The counter's own wire envelope, unlike the runtime's admin one."""

    status = 422
    headers = {"x-counter-error": "rejected"}

    def body(self):
        return {"counter_error": {"reason": self.message}}


class Items:
    def on_get(self, req, resp):
        inst = instance_of(req)
        where = {"tag": req.get_param("tag")} if req.get_param("tag") else None
        resp.media = {"items": inst.records.list("items", where=where)}

    def on_post(self, req, resp):
        inst = instance_of(req)
        body = req.get_media(default_when_empty={}) or {}
        drop = inst.fault_effect("accepted_drop")  # params {"inside": true}: within the block
        with inst.transaction():
            item_id = inst.records.next_id("items")
            item = {"id": item_id, "name": body.get("name"), "tag": body.get("tag"),
                    "created": inst.now_ms()}
            inst.records.put("items", item_id, item)
            inst.report_ids(itemId=item_id)
            if drop is not None and drop.get("inside"):
                inst.accept()
                inst.drop()
        if drop is not None:
            inst.accept()
            inst.drop()
        resp.status = falcon.HTTP_201
        resp.location = f"/items/{item_id}"
        resp.media = item


class Item:
    def on_get(self, req, resp, item_id):
        item = instance_of(req).records.get("items", item_id)
        if item is None:
            raise ItemNotFound()
        resp.media = item

    def on_delete(self, req, resp, item_id):
        instance_of(req).records.delete("items", item_id)
        resp.media = {"deleted": item_id}


class Counter:
    def on_get(self, req, resp):
        resp.media = instance_of(req).records.get("counter", "c") or {"value": 0}

    def on_post(self, req, resp):
        inst = instance_of(req)
        with inst.transaction():
            value = (inst.records.get("counter", "c") or {"value": 0})["value"] + 1
            inst.records.put("counter", "c", {"value": value})
        effect = inst.fault_effect("double")
        resp.media = {"value": value, "effect": effect}

    def on_patch(self, req, resp):
        """A first block that fails (rolled back), then a write that stays."""
        inst = instance_of(req)
        try:
            with inst.transaction():
                inst.records.put("counter", "c", {"value": -1})
                raise CounterRejected("not this one")
        except CounterRejected:
            pass
        inst.records.put("counter", "c", {"value": 7})
        resp.media = {"value": 7}

    def on_put(self, req, resp):
        """Write, commit a checkpoint mid-request, then (unless ?once) write again."""
        inst = instance_of(req)
        inst.records.put("counter", "c", {"value": 100})
        mid = inst.checkpoint()
        if not req.get_param_as_bool("once"):
            inst.records.put("counter", "c", {"value": 101})
        resp.media = {"mid": mid}


class Info:
    def on_get(self, req, resp):
        inst = instance_of(req)
        resp.media = {"now": inst.now_ms(), "namespace": inst.namespace, "key": inst.key,
                      "base_url": inst.base_url, "random": inst.rng.random()}


class Stream:
    def on_get(self, req, resp):
        count = req.get_param_as_int("n", default=3)
        release = req.get_param("wait")

        def events():
            for index in range(count):
                yield f"data: {index}\n\n".encode()
                if release:
                    import time
                    time.sleep(0.2)

        resp.content_type = "text/event-stream"
        resp.stream = events()


class Boom:
    def on_get(self, req, resp):
        raise RuntimeError("secret internal detail")


def files_sink(req, resp):
    """`GET /files/{path}`: the path is slash-bearing (`a/b/c`)."""
    resp.media = {"path": req.path[len("/files/"):]}


PAGE = (b'<a href="/items/1">item</a> <a HREF=\'/counter\'>counter</a> <img src=/logo.png>'
        b' <form action="/items"></form> <a href="//cdn.example/x">cdn</a>'
        b' <a href="https://other.example/y">other</a> <a href="relative/z">rel</a>'
        b' <div data-src="/lazy"></div> <style>body{background:url( "/bg.png" )}</style>'
        b' <a href="PREFIX/already">mounted</a>')


class Page:
    """`GET /page`: HTML with local and foreign links (`?gzip=1` compressed, `?stream=1` as a
    stream, `?plain=1` with no root-relative link); `{PREFIX}` becomes the mount prefix."""

    def on_get(self, req, resp):
        import gzip
        body = PAGE.replace(b"PREFIX", req.env.get("SCRIPT_NAME", "").encode())
        if req.get_param_as_bool("plain"):
            body = b'<a href="https://other.example/">out</a>'
        resp.content_type = "text/html; charset=utf-8"
        resp.set_header("etag", '"page-v1"')
        if req.get_param_as_bool("gzip"):
            body = gzip.compress(body)
            resp.set_header("content-encoding", "gzip")
        if req.get_param_as_bool("stream"):
            resp.stream = iter([body])
        else:
            resp.data = body

    on_head = on_get


class Blob:
    """`GET /blob`: the same bytes as /page, but binary: never rewritten."""

    def on_get(self, req, resp):
        resp.content_type = "application/octet-stream"
        resp.data = PAGE


class Links:
    """`GET /links`: `Link`, `Location`, `Set-Cookie` with local and foreign targets."""

    def on_get(self, req, resp):
        here = f"{req.scheme}://{req.env.get('HTTP_HOST') or req.host}"
        resp.set_header("link", f'</items?page=2>; rel="next", <{here}/items?page=3>; rel="last",'
                                f' <https://other.example/items>; rel="other",'
                                f' <//cdn.example/x>; rel="cdn", <{here}>; rel="home"')
        resp.set_header("location", f"{here}/items/7")
        resp.set_cookie("session", "abc", path="/", secure=False)
        resp.set_cookie("pref", "1", path="/items")
        resp.set_cookie("free", "1", max_age=60, secure=False, http_only=False)
        resp.media = {"here": here}


class WorkerPid:
    """Tell which process answered (the gunicorn tests prove state crosses workers)."""

    def process_response(self, req, resp, resource, req_succeeded):
        resp.set_header("x-worker-pid", str(os.getpid()))


MIRROR = "/mirror"


def unmirrored(path):
    """Return the route a `/mirror/…` path stands for (`mirrored_service`'s operation_path)."""
    return path[len(MIRROR):] if path.startswith(MIRROR + "/") else path


class Mirror:
    """Every route also answers under `/mirror/`, as a vendor may serve aliases of its paths."""

    def process_request(self, req, resp):
        req.path = unmirrored(req.path)  # falcon routes on req.path as process_request leaves it


class Rpc:
    """`POST /rpc {"call": name, "write": bool}`: one route for many calls, as GraphQL has;
    a write call stores what it was called with."""

    def on_post(self, req, resp):
        body = req.get_media(default_when_empty={}) or {}
        inst = instance_of(req)
        if body.get("write"):
            inst.records.put("calls", str(inst.records.next_id("calls")), body)
        resp.media = {"call": body.get("call"), "calls": inst.records.count("calls")}


def rpc_operation(body):
    """Name an `/rpc` call by its body: `rpc/<call>`, a read unless it writes (`rpc` itself
    for a body that names none)."""
    import json
    try:
        parsed = json.loads(body)
        return f"rpc/{parsed['call']}", not parsed.get("write")
    except (ValueError, TypeError, KeyError):
        return "rpc", False


def provider_app(middleware=()):
    app = add_fallback_handlers(falcon.App(middleware=[WorkerPid(), *middleware]))
    app.add_route("/items", Items())
    app.add_route("/items/{item_id}", Item())
    app.add_route("/counter", Counter())
    app.add_route("/info", Info())
    app.add_route("/stream", Stream())
    app.add_route("/boom", Boom())
    app.add_route("/page", Page())
    app.add_route("/blob", Blob())
    app.add_route("/links", Links())
    app.add_sink(files_sink, prefix="/files/")
    app.add_route("/rpc", Rpc())
    return app


def seed_counter(call):
    body = call.body or {}
    if not isinstance(body.get("value"), int):
        raise CounterRejected("value must be an integer")
    call.instance.records.put("counter", "c", {"value": body["value"]})
    return 200, {"value": body["value"]}


def bump_counter(call):
    """Write, commit a checkpoint quoted in the body, then (`{"again": true}`) write once more."""
    records = call.instance.records
    value = (records.get("counter", "c") or {"value": 0})["value"] + 1
    records.put("counter", "c", {"value": value})
    checkpoint = call.instance.checkpoint()
    if (call.body or {}).get("again"):
        value += 1
        records.put("counter", "c", {"value": value})
    return 200, {"value": value, "checkpoint": checkpoint}


def ping_counter(call):
    """A control that writes nothing (it must still commit a checkpoint)."""
    return 200, {"pong": True}


def read_counter(call):
    return 200, call.instance.records.get("counter", "c") or {"value": 0}


def _op(operation_id):
    return {"operationId": operation_id, "responses": {"200": {"description": "ok"}}}


OPENAPI = {
    "openapi": "3.0.3",
    "info": {"title": "counter", "version": "1.0"},
    "paths": {
        "/items": {"get": _op("listItems"), "post": _op("createItem")},
        "/items/{item_id}": {"get": _op("getItem"), "delete": _op("deleteItem")},
        "/items/special": {"get": _op("getSpecial")},
        "/counter": {"get": _op("getCounter"), "post": _op("incrementCounter")},
        "/info": {"get": _op("getInfo")},
        "/stream": {"get": _op("stream")},
        "/boom": {"get": _op("boom")},
        "/page": {"get": _op("getPage")},
        "/blob": {"get": _op("getBlob")},
        "/links": {"get": _op("getLinks")},
        "/files/{path}": {"get": {**_op("getFile"), "parameters": [
            {"name": "path", "in": "path", "required": True, "x-slash-bearing": True,
             "schema": {"type": "string"}}]}},
        "/files/{folder}/meta": {"get": _op("getFolderMeta")},
        "/rpc": {"post": _op("rpc")},
    },
}

PRESETS = {
    "counter_down": {"description": "every counter call fails with 503",
                     "rules": [{"operationId": "incrementCounter", "status": 503,
                                "body": {"error": "down"}}]},
    "flaky_pair": {"description": "two rules",
                   "rules": [{"operationId": "getInfo", "status": 500},
                             {"operationId": "listItems", "status": 502}]},
}

service = Service(
    name="counter", version="1.2.3", default_port=8899, openapi=OPENAPI,
    provider_app=provider_app, presets=PRESETS,
    admin_routes=[("POST", "/counter/seed", seed_counter), ("POST", "/counter/bump", bump_counter),
                  ("POST", "/counter/ping", ping_counter), ("GET", "/counter", read_counter)],
    describe=lambda instance: {"status": "shadowed?", "flavour": "counter"},
)


def bearer(environ):
    """The credential hook of `keyed_service`: the token of `Authorization: Bearer <token>`."""
    scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


# The same provider routes with credential routing (a request naming no namespace
# goes to the namespace `PUT /__admin/credentials` mapped its bearer token to).
keyed_service = Service(name="counter", version="1.2.3", openapi=OPENAPI,
                        provider_app=provider_app, credential=bearer)


# The same service whose routes also answer under `/mirror/…`, matched as the routes they mirror,
# with a body limit of its own for createItem (a larger one than a test's Settings.max_body).
mirrored_service = Service(name="counter", version="1.2.3", openapi=OPENAPI,
                           provider_app=lambda: provider_app([Mirror()]), presets=PRESETS,
                           operation_path=unmirrored, body_limits={"createItem": 1_000})


# The same service naming each `/rpc` call from its body (`rpc/<call>`), as GitHub names its
# GraphQL operations.
named_service = Service(name="counter", version="1.2.3", openapi=OPENAPI,
                        provider_app=provider_app, body_operations={"rpc": rpc_operation})
