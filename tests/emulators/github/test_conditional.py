"""Conditional requests: a weak ETag from what an answer shows, Last-Modified from `updated_at`,
304s that carry no body and count against no window, and the cache headers GitHub sends."""
import pytest

from .conftest import B

REPO = "/repos/synthetic-org/example"
PULL = f"{REPO}/pulls/1"
FRONT = "Accept-Encoding, Accept, X-Requested-With"


@pytest.fixture
def pulled(seeded):
    seeded.create_ref("refs/heads/topic", B, status=201)
    seeded.open_pull(status=201)
    seeded.rate_limits(core=1000)
    return seeded


def test_a_read_has_a_weak_etag_last_modified_and_githubs_cache_headers(pulled):
    anonymous = pulled.get(PULL)
    assert anonymous.headers["ETag"].startswith('W/"') and len(anonymous.headers["ETag"]) == 68
    assert anonymous.headers["Last-Modified"] == "Tue, 14 Nov 2023 22:13:20 GMT"
    assert anonymous.headers["Cache-Control"] == "public, max-age=60, s-maxage=60"
    assert anonymous.headers["Vary"] == "Accept, " + FRONT
    authed = pulled.get(PULL, headers={"Authorization": "token t"})
    assert authed.headers["Cache-Control"] == "private, max-age=60, s-maxage=60"
    assert authed.headers["Vary"] == "Accept, Authorization, Cookie, X-GitHub-OTP, " + FRONT
    assert "Last-Modified" not in pulled.get(f"{REPO}/pulls").headers  # a list has none


def test_answers_without_a_body_or_with_an_error_carry_no_cache_headers(pulled):
    for answer in (pulled.get("/repos/x/y", status=404),
                   pulled.app.delete(f"{REPO}/git/refs/heads/topic", status=204)):
        assert "ETag" not in answer.headers and "Cache-Control" not in answer.headers
        assert answer.headers["Vary"] == FRONT


def test_a_write_answer_has_cache_headers_but_no_validators(pulled):
    answer = pulled.patch(PULL, {"title": "renamed"}, 200)
    assert answer.headers["Cache-Control"] == "public, max-age=60, s-maxage=60"
    assert "ETag" not in answer.headers and "Last-Modified" not in answer.headers


def test_a_matching_if_none_match_is_a_304_without_a_body_and_uncounted(pulled):
    first = pulled.get(PULL)
    tag, used = first.headers["ETag"], int(first.headers["X-RateLimit-Used"])
    for value in (tag, tag.removeprefix("W/"), f'"nope", {tag}', "*"):
        again = pulled.get(PULL, headers={"If-None-Match": value}, status=304)
        assert again.body == b"" and "Content-Type" not in again.headers
        assert again.headers["ETag"] == tag
        assert again.headers["X-RateLimit-Used"] == str(used)  # not counted
    other = pulled.get(PULL, headers={"If-None-Match": '"nope"'}, status=200)
    assert other.headers["X-RateLimit-Used"] == str(used + 1)


def test_a_change_to_the_answer_changes_its_etag(pulled):
    tag = pulled.get(PULL).headers["ETag"]
    pulled.patch(PULL, {"title": "renamed"}, 200)
    fresh = pulled.get(PULL, headers={"If-None-Match": tag}, status=200)
    assert fresh.json["title"] == "renamed" and fresh.headers["ETag"] != tag
    main = f"{REPO}/git/ref/heads/main"
    moved = pulled.get(main).headers["ETag"]
    pulled.post("/__admin/github/refs/move", {"owner": "synthetic-org", "repo": "example",
                                              "ref": "refs/heads/main", "sha": B}, 200)
    assert pulled.get(main, headers={"If-None-Match": moved}, status=200).json["object"]["sha"] \
        == B


def test_the_media_type_and_the_credential_are_part_of_the_etag(pulled):
    raw = pulled.get(PULL).headers["ETag"]
    full = pulled.get(PULL, headers={"Accept": "application/vnd.github.full+json"})
    assert full.headers["ETag"] != raw
    assert pulled.get(PULL, headers={"Accept": "application/vnd.github.full+json",
                                     "If-None-Match": raw}, status=200)
    tokened = pulled.get(PULL, headers={"Authorization": "token t"}).headers["ETag"]
    assert tokened != raw
    pulled.get(PULL, headers={"Authorization": "token u", "If-None-Match": tokened}, status=200)
    pulled.get(PULL, headers={"Authorization": "token t", "If-None-Match": tokened}, status=304)


def test_if_modified_since_counts_only_without_if_none_match(pulled):
    modified = pulled.get(PULL).headers["Last-Modified"]
    pulled.get(PULL, headers={"If-Modified-Since": modified}, status=304)
    pulled.get(PULL, headers={"If-Modified-Since": "Tue, 14 Nov 2023 22:13:19 GMT"}, status=200)
    pulled.get(PULL, headers={"If-Modified-Since": "not a date"}, status=200)
    pulled.get(PULL, headers={"If-Modified-Since": modified, "If-None-Match": '"x"'}, status=200)
    pulled.advance(5000)
    pulled.patch(PULL, {"title": "later"}, 200)
    pulled.get(PULL, headers={"If-Modified-Since": modified}, status=200)


def test_a_conditional_read_on_a_full_window_is_refused(pulled):
    tag = pulled.get(PULL).headers["ETag"]
    pulled.rate_limits(core=1)
    refused = pulled.get(PULL, headers={"If-None-Match": tag}, status=403)
    assert refused.headers["X-RateLimit-Remaining"] == "0" and "ETag" not in refused.headers


def test_two_namespaces_with_the_same_state_answer_each_their_own(app):
    from .conftest import GitHubClient, graph_body
    first, second = GitHubClient(app, namespace="n1"), GitHubClient(app, namespace="n2")
    tags = []
    for client in (first, second):
        client.post("/__admin/clock", {"set": 1_700_000_000_000, "freeze": True}, 200)
        client.seed(graph_body())
        tags.append(client.get(REPO).headers["ETag"])
    # the URLs each answer carries name its namespace, so the answers (and ETags) differ
    assert tags[0] != tags[1]
    second.get(REPO, headers={"If-None-Match": tags[0]}, status=200)
