"""A test-only key-value/counter service that exercises every part of the runtime contract."""
import os

import falcon

from emulators.runtime import EmulatorError, Service, instance_of


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


class WorkerPid:
    """Tell which process answered (the gunicorn tests prove state crosses workers)."""

    def process_response(self, req, resp, resource, req_succeeded):
        resp.set_header("x-worker-pid", str(os.getpid()))


def provider_app():
    app = falcon.App(middleware=[WorkerPid()])
    app.add_route("/items", Items())
    app.add_route("/items/{item_id}", Item())
    app.add_route("/counter", Counter())
    app.add_route("/info", Info())
    app.add_route("/stream", Stream())
    app.add_route("/boom", Boom())
    app.add_sink(files_sink, prefix="/files/")
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
        "/files/{path}": {"get": {**_op("getFile"), "parameters": [
            {"name": "path", "in": "path", "required": True, "x-slash-bearing": True,
             "schema": {"type": "string"}}]}},
        "/files/{folder}/meta": {"get": _op("getFolderMeta")},
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


# The same provider routes with credential routing (spec §3 step 3).
keyed_service = Service(name="counter", version="1.2.3", openapi=OPENAPI,
                        provider_app=provider_app, credential=bearer)
