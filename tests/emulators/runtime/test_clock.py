"""Clock: set, advance, freeze, resume per namespace; atomic on bad input; handlers read it."""
import pytest

from tests.emulators.runtime.conftest import START, ns


def clock(app, body=None, name="default", status=200):
    if body is None:
        return app.get(f"/__admin/clock?namespace={name}").json
    return app.post_json(f"/__admin/clock?namespace={name}", body, status=status).json


def test_live_clock_follows_wall_time(app, wall):
    assert clock(app) == {"now": START, "frozen": False, "offsetMs": 0}
    wall.now += 1234
    assert clock(app)["now"] == START + 1234


def test_set_and_freeze_pin_the_instant(app, wall):
    state = clock(app, {"set": "2030-01-01T00:00:00Z", "freeze": True})
    assert state["now"] == 1893456000000 and state["frozen"] is True
    wall.now += 10_000
    assert clock(app)["now"] == 1893456000000
    assert app.get("/info").json["now"] == 1893456000000


def test_set_on_live_clock_moves_offset(app, wall):
    state = clock(app, {"set": START + 60_000})
    assert state == {"now": START + 60_000, "frozen": False, "offsetMs": 60_000}
    wall.now += 5
    assert clock(app)["now"] == START + 60_005


@pytest.mark.parametrize("amount, delta", [(1500, 1500), ("15m", 900_000), ("2h", 7_200_000),
                                           ("1d", 86_400_000), ("-30s", -30_000),
                                           ("1.5s", 1500), (" 250 ms ", 250)])
def test_advance_units(app, amount, delta):
    clock(app, {"freeze": True})
    assert clock(app, {"advance": amount})["now"] == START + delta


def test_resume_continues_from_frozen_instant(app, wall):
    clock(app, {"freeze": True, "advance": "1m"})
    wall.now += 999
    state = clock(app, {"resume": True})
    assert state == {"now": START + 60_000, "frozen": False, "offsetMs": 60_000 - 999}
    wall.now += 1
    assert clock(app)["now"] == START + 60_001
    assert clock(app, {"freeze": False})["frozen"] is False


@pytest.mark.parametrize("body, message", [
    ({"freeze": True, "advance": "5000"}, 'advance: expected ms or "15m"-style'),
    ({"reset": True, "set": "yesterday"}, "set: expected epoch ms or ISO-8601"),
    ({"freeze": "yes"}, "freeze: expected true or false"),
    ({"freeze": True, "tick": 1}, "unknown clock field(s): tick"),
    ([1, 2], "expected a JSON object"),
    # beyond a JavaScript Date's range, or not finite (they were 500s before)
    ({"set": 10 ** 20}, "set: expected epoch ms or ISO-8601"),
    ({"set": "99999999999999999999"}, "set: expected epoch ms or ISO-8601"),
    ({"set": 1e300}, "set: expected epoch ms or ISO-8601"),
    ({"set": "\u00b2"}, "set: expected epoch ms or ISO-8601"),
    ({"advance": "99999999999999999999d"}, 'advance: expected ms or "15m"-style'),
    ({"advance": -8_640_000_000_000_001}, 'advance: expected ms or "15m"-style'),
    ({"set": 8_640_000_000_000_000, "advance": 1},
     "the clock would leave the date range (\u00b18640000000000000 ms)"),
])
def test_bad_clock_input_changes_nothing(app, body, message):
    clock(app, {"advance": "1h"})
    before = clock(app)
    res = app.post_json("/__admin/clock", body, status=400).json
    assert res["error"]["message"] == message
    assert clock(app) == before


@pytest.mark.parametrize("raw, message", [
    (b'{"set": Infinity}', "set: expected epoch ms or ISO-8601"),
    (b'{"set": 1e400}', "set: expected epoch ms or ISO-8601"),
    (b'{"advance": NaN}', 'advance: expected ms or "15m"-style'),
    (b'{"advance": -Infinity}', 'advance: expected ms or "15m"-style'),
])
def test_non_finite_numbers_python_json_reads_are_refused(app, raw, message):
    res = app.post("/__admin/clock", raw, headers={"Content-Type": "application/json"},
                   status=400)
    assert res.json["error"]["message"] == message


def test_the_date_range_edges_are_accepted(app):
    assert clock(app, {"set": -8_640_000_000_000_000, "freeze": True})["now"] == \
        -8_640_000_000_000_000
    assert clock(app, {"set": "8640000000000000"})["now"] == 8_640_000_000_000_000


def test_reset_flag_returns_to_live_time(app):
    clock(app, {"set": 5, "freeze": True})
    assert clock(app, {"reset": True}) == {"now": START, "frozen": False, "offsetMs": 0}


def test_clocks_are_per_namespace(app):
    clock(app, {"set": 1000, "freeze": True}, name="w1")
    assert clock(app, name="w2")["now"] == START
    assert app.get("/info", headers=ns("w1")).json["now"] == 1000
    assert app.get("/info", headers=ns("w2")).json["now"] == START


def test_journal_at_uses_namespace_clock(app):
    clock(app, {"set": "2031-05-06T07:08:09.010Z", "freeze": True}, name="w1")
    app.get("/info", headers=ns("w1"))
    entry = app.get("/__admin/requests?namespace=w1").json["requests"][0]
    assert entry["at"] == "2031-05-06T07:08:09.010Z"
