"""Rate-limit windows (state/quotas.py) on a namespace's clock, counted into one row by every
worker; `Database.write`; a service's request id header naming the journal entry."""
import threading

from emulators.pytest_plugin import test_app
from emulators.runtime import Service, instance_of
from emulators.runtime.state.db import Database
from emulators.runtime.state.quotas import Quotas, Window, window_end
from testkit.counter_service import OPENAPI, provider_app

from .conftest import START, ns

HOUR = 3_600_000


def test_a_window_counts_to_its_limit_then_refuses_without_counting(db):
    quotas = Quotas(Database(db), "svc")
    taken = [quotas.take("w1", "ip:1", "core", 3, HOUR, START) for _ in range(3)]
    assert [w.used for w in taken] == [1, 2, 3] and all(w.taken for w in taken)
    assert {w.reset_ms for w in taken} == {window_end(START, HOUR)}
    refused = quotas.take("w1", "ip:1", "core", 3, HOUR, START + 1000)
    assert refused == Window(3, window_end(START, HOUR), taken=False)
    assert quotas.peek("w1", "ip:1", "core", HOUR, START + 2000).used == 3


def test_a_window_ends_on_a_whole_second_and_begins_anew_after_it(db):
    quotas = Quotas(Database(db), "svc")
    first = quotas.take("w1", "ip:1", "core", 1, HOUR, START + 250)
    assert first.reset_ms == START + HOUR + 1000  # 250 ms past a second: the next whole one
    assert not quotas.take("w1", "ip:1", "core", 1, HOUR, first.reset_ms - 1).taken
    again = quotas.take("w1", "ip:1", "core", 1, HOUR, first.reset_ms)
    assert again == Window(1, window_end(first.reset_ms, HOUR))


def test_a_clock_set_back_before_a_window_begins_a_new_one(db):
    quotas = Quotas(Database(db), "svc")
    later = START + 10 * HOUR
    assert not quotas.take("w1", "ip:1", "core", 0, HOUR, later).taken  # limit 0: never
    quotas.take("w1", "ip:1", "core", 1, HOUR, later)
    assert not quotas.take("w1", "ip:1", "core", 1, HOUR, later).taken
    back = quotas.take("w1", "ip:1", "core", 1, HOUR, START)
    assert back == Window(1, window_end(START, HOUR))


def test_windows_are_per_namespace_caller_resource_and_service(db):
    base = Database(db)
    quotas, other = Quotas(base, "svc"), Quotas(base, "other")
    for namespace, who, resource, window in (("w1", "a", "core", HOUR), ("w2", "a", "core", HOUR),
                                             ("w1", "b", "core", HOUR),
                                             ("w1", "a", "search", 60_000)):
        assert quotas.take(namespace, who, resource, 1, window, START).taken
    assert other.take("w1", "a", "core", 1, HOUR, START).taken
    assert quotas.windows("w1", "a", START, {"core": HOUR, "search": 60_000, "scim": HOUR}) == {
        "core": Window(1, window_end(START, HOUR)),
        "search": Window(1, window_end(START, 60_000)),
        "scim": Window(0, window_end(START, HOUR))}
    quotas.reset("w1")
    assert quotas.peek("w1", "a", "core", HOUR, START).used == 0
    assert quotas.peek("w2", "a", "core", HOUR, START).used == 1
    assert other.peek("w1", "a", "core", HOUR, START).used == 1


def test_workers_count_into_one_window(db):
    """Four threads with connections of their own, as gunicorn workers are: no count lost, and
    exactly the limit taken."""
    quotas = Quotas(Database(db), "svc")
    results = []

    def client():
        mine = Quotas(Database(db), "svc")
        results.extend(mine.take("w1", "ip:1", "core", 150, HOUR, START) for _ in range(50))
    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(w.taken for w in results) == 150
    assert sorted(w.used for w in results if w.taken) == list(range(1, 151))
    assert quotas.peek("w1", "ip:1", "core", HOUR, START).used == 150


def test_a_write_joins_an_open_transaction_and_else_commits_alone(db):
    base = Database(db)
    base.execute("CREATE TABLE t (n INTEGER)")
    try:
        with base.transaction():
            base.write("INSERT INTO t VALUES (1)")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert base.write("INSERT INTO t VALUES (2) RETURNING n") == [(2,)]
    assert Database(db).all("SELECT n FROM t") == [(2,)]  # committed: another connection sees it


class Windows:
    """`GET /windows`: count one request of the caller `?who=` (limit 2), show the window."""

    def on_get(self, req, resp):
        window = instance_of(req).quotas.take(req.get_param("who"), "core", 2, HOUR)
        resp.media = window._asdict()


def counted_service(**options):
    def app():
        built = provider_app()
        built.add_route("/windows", Windows())
        return built
    document = {**OPENAPI, "paths": {**OPENAPI["paths"], "/windows": {"get": {
        "operationId": "windows", "responses": {"200": {"description": "ok"}}}}}}
    return Service(name="counted", openapi=document, provider_app=app, **options)


def test_an_instance_counts_on_its_namespaces_clock_and_a_reset_forgets(db, wall):
    app = test_app(counted_service(), db, wall=wall)
    app.post_json("/__admin/clock?namespace=w1", {"set": START, "freeze": True})
    assert app.get("/windows?who=a", headers=ns("w1")).json == {
        "used": 1, "reset_ms": START + HOUR, "taken": True}
    app.get("/windows?who=a", headers=ns("w1"))
    assert app.get("/windows?who=a", headers=ns("w1")).json["taken"] is False
    assert app.get("/windows?who=a", headers=ns("w2")).json["used"] == 1  # its own windows
    app.post_json("/__admin/clock?namespace=w1", {"advance": "1h"})
    assert app.get("/windows?who=a", headers=ns("w1")).json == {
        "used": 1, "reset_ms": START + 2 * HOUR, "taken": True}
    app.post("/__admin/reset?namespace=w1&keep=clock")
    assert app.get("/windows?who=a", headers=ns("w1")).json["used"] == 1


def test_the_request_id_header_names_the_journal_entry_of_every_answer(db):
    app = test_app(counted_service(request_id_header="X-Request-Id"), db)
    app.post_json("/__admin/faults", {"operationId": "getInfo", "status": 503, "count": 1})
    answers = [app.get("/items"), app.post_json("/items", {"name": "x"}),
               app.get("/items/9", status=404), app.get("/info", status=503),
               app.get("/boom", status=500)]
    seqs = [int(answer.headers["X-Request-Id"]) for answer in answers]
    assert seqs == sorted(set(seqs))
    for answer, seq in zip(answers, seqs):
        found = app.get(f"/__admin/requests?seq={seq}").json["requests"]
        assert [(e["seq"], e["status"]) for e in found] == [(seq, answer.status_int)]
    assert "X-Request-Id" not in test_app(counted_service(), db).get("/items").headers
