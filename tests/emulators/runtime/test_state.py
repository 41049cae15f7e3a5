"""The state API: overview, pages, records, writes that commit main checkpoints."""
import pytest

from tests.emulators.runtime.conftest import ns


def error(message):
    return {"error": {"type": "mockingbird_admin", "message": message}}


def head(app, namespace="default"):
    return app.get(f"/__admin/timeline?namespace={namespace}").json["branches"]["main"]


def test_post_defaults_the_id_to_collection_and_seq_and_commits_a_checkpoint(app):
    res = app.post_json("/__admin/state/notes", {"value": {"text": "hi"}}, status=201)
    assert res.json == {"id": "notes_1", "seq": 1, "value": {"text": "hi"}}
    assert res.headers["x-mockingbird-checkpoint"] == head(app)
    second = app.post_json("/__admin/state/notes", {"value": 7}, status=201)
    assert second.json == {"id": "notes_2", "seq": 2, "value": 7}
    assert second.headers["x-mockingbird-checkpoint"] > res.headers["x-mockingbird-checkpoint"]
    assert app.get("/__admin/state/notes/notes_1").json == {"id": "notes_1", "seq": 1,
                                                            "value": {"text": "hi"}}


def test_post_with_an_id_and_a_taken_id_is_409(app):
    app.post_json("/__admin/state/notes", {"id": "a", "value": None}, status=201)
    res = app.post_json("/__admin/state/notes", {"id": "a", "value": 2}, status=409)
    assert res.json == error("record a already exists")
    assert "x-mockingbird-checkpoint" not in res.headers
    assert app.get("/__admin/state/notes/a").json["value"] is None


def test_default_id_skips_a_number_a_client_took_explicitly(app):
    app.post_json("/__admin/state/notes", {"id": "notes_2", "value": 1}, status=201)
    assert app.post_json("/__admin/state/notes", {"value": 2}).json["id"] == "notes_3"
    assert app.post_json("/__admin/state/notes", {"value": 3}).json == {
        "id": "notes_4", "seq": 3, "value": 3}


@pytest.mark.parametrize("body,message", [
    ([1], 'expected {"id?": "<id>", "value": <json>}'),
    ({"id": "x"}, 'expected {"id?": "<id>", "value": <json>}'),
    ({"id": 5, "value": 1}, "id must be a string"),
    ({"id": None, "value": 1}, "id must be a string"),
    ({"id": "has space", "value": 1}, "id must be a single path segment"),
    ({"id": "a/b", "value": 1}, "id must be a single path segment"),
    ({"id": "", "value": 1}, "id must be a single path segment"),
    ({"id": "x" * 257, "value": 1}, "id must be a single path segment"),
])
def test_post_shape_errors_are_400_and_write_nothing(app, body, message):
    before = head(app)
    res = app.post_json("/__admin/state/notes", body, status=400)
    assert res.json == error(message)
    assert head(app) == before
    assert app.get("/__admin/state/notes").json["count"] == 0


def test_post_without_a_body_and_with_a_non_finite_value_are_400(app):
    assert app.post("/__admin/state/notes", status=400).json == error(
        'expected {"id?": "<id>", "value": <json>}')
    res = app.post("/__admin/state/notes", b'{"value": NaN}', content_type="application/json",
                   status=400)
    assert res.json == error("value must be JSON")


def test_longest_id_is_accepted(app):
    long_id = "x" * 256
    app.post_json("/__admin/state/notes", {"id": long_id, "value": 1}, status=201)
    assert app.get(f"/__admin/state/notes/{long_id}").json["id"] == long_id


@pytest.mark.parametrize("path", ["/__admin/state/bad%21name", "/__admin/state/caf%C3%A9",
                                  "/__admin/state/bad%20name", "/__admin/state/" + "c" * 201])
def test_collection_names_outside_the_pattern_are_400(app, path):
    assert app.get(path, status=400).json == error("collection name is not allowed")
    assert app.post_json(path, {"value": 1}, status=400).json == error(
        "collection name is not allowed")
    assert app.get(path + "/x", status=400).json == error("collection name is not allowed")
    assert app.delete(path + "/x", status=400).json == error("collection name is not allowed")


def test_collection_names_may_use_dots_colons_at_and_dashes(app):
    app.post_json("/__admin/state/a.b:c@d-e_f", {"id": "1", "value": 1}, status=201)
    assert app.get("/__admin/state/a.b:c@d-e_f/1").json["value"] == 1


def test_non_ascii_ids_travel_percent_encoded_and_bad_encoding_is_400(app):
    app.post_json("/__admin/state/notes", {"id": "caf\u00e9", "value": 1}, status=201)
    assert app.get("/__admin/state/notes/caf%C3%A9").json == {"id": "caf\u00e9", "seq": 1,
                                                              "value": 1}
    assert app.get("/__admin/state/notes/caf%FF", status=400).json == error(
        "invalid path encoding")


def test_get_record_errors(app):
    assert app.get("/__admin/state/notes/nope", status=404).json == error(
        "no record nope in notes")
    assert app.get("/__admin/state/notes/a%20b", status=400).json == error(
        "record id is not allowed")


def fill(app, count, collection="notes"):
    for index in range(1, count + 1):
        app.post_json(f"/__admin/state/{collection}", {"value": {"n": index}}, status=201)


def seqs(page):
    return [record["seq"] for record in page["records"]]


def test_pages_go_newest_first_by_default_with_an_after_cursor(app):
    fill(app, 5)
    first = app.get("/__admin/state/notes?limit=2").json
    assert first["collection"] == "notes" and first["count"] == 5
    assert seqs(first) == [5, 4] and first["next"] == 4
    assert first["records"][0] == {"id": "notes_5", "seq": 5, "value": {"n": 5}}
    second = app.get("/__admin/state/notes?limit=2&after=4").json
    assert seqs(second) == [3, 2] and second["next"] == 2
    last = app.get("/__admin/state/notes?limit=2&after=2").json
    assert seqs(last) == [1] and last["next"] is None
    exact = app.get("/__admin/state/notes?limit=5").json
    assert seqs(exact) == [5, 4, 3, 2, 1] and exact["next"] is None


def test_pages_oldest_first(app):
    fill(app, 3)
    page = app.get("/__admin/state/notes?order=oldest&limit=2").json
    assert seqs(page) == [1, 2] and page["next"] == 2
    rest = app.get("/__admin/state/notes?order=oldest&limit=2&after=2").json
    assert seqs(rest) == [3] and rest["next"] is None


def test_default_limit_is_50_and_200_is_the_most(app):
    with app.runtime.db.transaction():
        records = app.runtime.instance("default").records
        for index in range(205):
            records.put("bulk", f"r{index}", index)
    assert len(app.get("/__admin/state/bulk").json["records"]) == 50
    page = app.get("/__admin/state/bulk?limit=200").json
    assert len(page["records"]) == 200 and page["next"] == 6 and page["count"] == 205


@pytest.mark.parametrize("query,message", [
    ("limit=0", "limit must be an integer from 1 to 200"),
    ("limit=201", "limit must be an integer from 1 to 200"),
    ("limit=-3", "limit must be an integer from 1 to 200"),
    ("limit=ten", "limit: expected an integer"),
    ("limit=1.5", "limit: expected an integer"),
    ("limit=%D9%A1", "limit: expected an integer"),  # an Arabic-Indic digit
    ("after=x", "after: expected a sequence number"),
    ("order=sideways", 'order must be "newest" or "oldest"'),
])
def test_page_query_errors_are_400(app, query, message):
    assert app.get(f"/__admin/state/notes?{query}", status=400).json == error(message)


def test_an_unused_collection_is_an_empty_page(app):
    assert app.get("/__admin/state/nothing").json == {"collection": "nothing", "count": 0,
                                                      "records": [], "next": None}


def test_put_replaces_and_keeps_the_seq(app):
    fill(app, 2)
    res = app.put_json("/__admin/state/notes/notes_1", {"value": {"other": True}})
    assert res.json == {"id": "notes_1", "seq": 1, "value": {"other": True}}
    assert res.headers["x-mockingbird-checkpoint"] == head(app)


def test_patch_merges_objects_shallowly(app):
    app.post_json("/__admin/state/notes", {"id": "a", "value": {"x": 1, "deep": {"k": 1},
                                                                "keep": "y"}})
    res = app.patch_json("/__admin/state/notes/a", {"value": {"x": 2, "deep": {"j": 2}}})
    assert res.json["value"] == {"x": 2, "deep": {"j": 2}, "keep": "y"}
    assert res.headers["x-mockingbird-checkpoint"] == head(app)
    # A non-object on either side replaces the value.
    assert app.patch_json("/__admin/state/notes/a", {"value": [1]}).json["value"] == [1]
    assert app.patch_json("/__admin/state/notes/a", {"value": {"z": 0}}).json["value"] == {
        "z": 0}


@pytest.mark.parametrize("verb", ["put_json", "patch_json"])
def test_put_and_patch_errors(app, verb):
    send = getattr(app, verb)
    assert send("/__admin/state/notes/none", {"value": 1}, status=404).json == error(
        "no record none in notes")
    app.post_json("/__admin/state/notes", {"id": "a", "value": 1})
    before = head(app)
    assert send("/__admin/state/notes/a", {"val": 1}, status=400).json == error(
        'expected {"value": <json>}')
    assert send("/__admin/state/notes/a", [1], status=400).json == error(
        'expected {"value": <json>}')
    assert send("/__admin/state/notes/a%09b", {"value": 1}, status=400).json == error(
        "id must be a single path segment")
    assert head(app) == before
    assert app.get("/__admin/state/notes/a").json["value"] == 1


def test_delete_answers_the_id_then_404(app):
    app.post_json("/__admin/state/notes", {"id": "a", "value": 1})
    res = app.delete("/__admin/state/notes/a")
    assert res.json == {"id": "a"}
    assert res.headers["x-mockingbird-checkpoint"] == head(app)
    before = head(app)
    missing = app.delete("/__admin/state/notes/a", status=404)
    assert missing.json == error("no record a in notes")
    assert "x-mockingbird-checkpoint" not in missing.headers and head(app) == before


def test_each_write_is_a_checkpoint_that_restores_the_state_before_the_next(app):
    created = app.post_json("/__admin/state/notes", {"id": "a", "value": {"v": 1}})
    app.put_json("/__admin/state/notes/a", {"value": {"v": 2}})
    app.delete("/__admin/state/notes/a")
    app.post_json("/__admin/branches/main/checkout",
                  {"checkpoint": created.headers["x-mockingbird-checkpoint"]})
    assert app.get("/__admin/state/notes/a").json["value"] == {"v": 1}


def test_reads_commit_nothing(app):
    app.post_json("/__admin/state/notes", {"value": 1})
    before = head(app)
    for path in ("/__admin/state", "/__admin/state/notes", "/__admin/state/notes/notes_1"):
        assert "x-mockingbird-checkpoint" not in app.get(path).headers
    assert head(app) == before


def test_state_routes_read_and_write_what_the_provider_sees(app):
    app.post_json("/__admin/state/counter", {"id": "c", "value": {"value": 41}})
    assert app.post("/counter").json["value"] == 42
    assert app.get("/__admin/state/counter/c").json["value"] == {"value": 42}


def test_state_is_per_namespace(app):
    app.post_json("/__admin/state/notes?namespace=w1", {"value": 1})
    app.post_json("/items", {"name": "a"}, headers=ns("w2"))
    assert [c["name"] for c in app.get("/__admin/state?namespace=w1").json["collections"]] == [
        "notes"]
    assert [c["name"] for c in app.get("/__admin/state",
                                       headers=ns("w2")).json["collections"]] == ["items"]
    assert app.get("/__admin/state/notes").json["count"] == 0
    assert "w1" in app.get("/__admin/namespaces").json["namespaces"]


def test_overview_lists_stored_collections_with_inferred_fields(app):
    app.post_json("/items", {"name": "a", "tag": "t"})
    app.post_json("/__admin/state/hermes-runs", {"value": {"id": "r1", "n": 1, "ok": True,
                                                           "meta": {"a": 1, "b": None},
                                                           "tags": []}})
    app.post_json("/__admin/state/hermes-runs", {"value": {"id": "r2", "n": None,
                                                           "meta": {"a": "x"}}})
    app.post_json("/__admin/state/scalars", {"value": "text"})
    app.post_json("/__admin/state/scalars", {"value": 3})
    body = app.get("/__admin/state?namespace=default").json
    assert body["namespace"] == "default" and body["storageNamespace"] == "default"
    by_name = {c["name"]: c for c in body["collections"]}
    assert [c["name"] for c in body["collections"]] == ["hermes-runs", "items", "scalars"]
    runs = by_name["hermes-runs"]
    assert runs["label"] == "Hermes runs" and runs["count"] == 2
    assert runs["source"] == "inferred"
    assert runs["fields"] == [
        {"name": "id", "kind": "string", "optional": False},
        {"name": "meta", "kind": "object", "optional": False, "fields": [
            {"name": "a", "kind": "unknown", "optional": False},
            {"name": "b", "kind": "null", "optional": True}]},
        {"name": "n", "kind": "unknown", "optional": True},
        {"name": "ok", "kind": "boolean", "optional": True},
        {"name": "tags", "kind": "array", "optional": True},
    ]
    assert by_name["items"]["fields"] == [
        {"name": "created", "kind": "number", "optional": False},
        {"name": "id", "kind": "number", "optional": False},
        {"name": "name", "kind": "string", "optional": False},
        {"name": "tag", "kind": "string", "optional": False}]
    assert by_name["scalars"]["fields"] == [{"name": "(value)", "kind": "unknown",
                                             "optional": False}]


def test_overview_infers_fields_from_the_25_newest_rows(app):
    with app.runtime.db.transaction():
        records = app.runtime.instance("default").records
        for index in range(5):
            records.put("rows", f"old{index}", {"old": index})
        for index in range(25):
            records.put("rows", f"new{index}", {"new": index})
    (rows,) = app.get("/__admin/state").json["collections"]
    assert rows["count"] == 30
    assert rows["fields"] == [{"name": "new", "kind": "number", "optional": False}]


def test_state_routes_need_the_admin_key(locked):
    locked.get("/__admin/state", status=401)
    locked.post_json("/__admin/state/notes", {"value": 1}, status=401)
    key = {"x-mockingbird-admin-key": "s3cret-key"}
    locked.post_json("/__admin/state/notes", {"value": 1}, headers=key, status=201)
    assert locked.get("/__admin/state/notes", headers=key).json["count"] == 1
