"""Contents, git data and commits through REST (in-process; every answer is checked against
GitHub's response schemas by the conftest): what a client relies on, errors included."""
import base64

import pytest

FILES = {"main": {"README.md": "# Demo\n", "src/app.py": "print(1)\n"},
         "topic": {"README.md": "# Demo\nMore.\n", "src/app.py": "print(1)\n",
                   "src/util.py": "X = 1\n"}}
REPO = "/repos/octo/demo"


@pytest.fixture
def repo(gh):
    gh.seed({"owner": "octo", "name": "demo", "files": FILES})
    return gh


def b64(text):
    return base64.b64encode(text.encode()).decode()


def tip(gh, branch="main"):
    return gh.get(f"{REPO}/git/ref/heads/{branch}").json["object"]["sha"]


def test_get_content_reads_a_file_a_folder_and_raw_bytes_at_a_ref(repo):
    file = repo.get(f"{REPO}/contents/src/app.py", 200).json
    assert (file["type"], file["path"], base64.b64decode(file["content"])) == \
        ("file", "src/app.py", b"print(1)\n")
    folder = repo.get(f"{REPO}/contents/src?ref=topic", 200).json
    assert [(e["name"], e["type"], e["size"]) for e in folder] == [("app.py", "file", 9),
                                                                   ("util.py", "file", 6)]
    root = repo.get(f"{REPO}/contents", 200).json
    assert [e["type"] for e in root] == ["file", "dir"]
    raw = repo.get(f"{REPO}/contents/README.md?ref=topic", 200,
                   headers={"Accept": "application/vnd.github.raw"})
    assert raw.body == b"# Demo\nMore.\n"
    assert repo.get(f"{REPO}/contents/nope.txt", 404).json["message"] == "Not Found"
    assert repo.get(f"{REPO}/contents/README.md?ref=gone", 404).json["message"] == \
        "No commit found for the ref gone"
    assert base64.b64decode(repo.get(f"{REPO}/readme", 200).json["content"]) == b"# Demo\n"
    download = file["download_url"].replace("http://127.0.0.1:8828", "")
    assert repo.get(download, 200).body == b"print(1)\n"
    assert repo.get("/octo/demo/raw/topic/src/util.py", 200).body == b"X = 1\n"
    assert repo.get("/octo/demo/raw/main/src/util.py", 404).body == b"404: Not Found"


def test_a_file_write_needs_the_current_sha_and_moves_the_branch(repo):
    path = f"{REPO}/contents/src/app.py"
    current = repo.get(path, 200).json["sha"]
    assert repo.app.put_json(path, {"message": "m", "content": b64("x")},
                             status=422).json["message"].endswith('"sha" wasn\'t supplied.')
    stale = repo.app.put_json(path, {"message": "m", "content": b64("x"), "sha": "0" * 40},
                              status=409).json
    assert stale["message"] == f"src/app.py does not match {'0' * 40}"
    before = tip(repo)
    done = repo.app.put_json(path, {"message": "Edit app", "content": b64("print(2)\n"),
                                    "sha": current, "committer": {
                                        "name": "Bot", "email": "bot@example.com",
                                        "date": "2030-01-01T00:00:00Z"}}, status=200).json
    assert done["commit"]["parents"][0]["sha"] == before == \
        repo.get(f"{REPO}/git/commits/{done['commit']['sha']}", 200).json["parents"][0]["sha"]
    assert done["commit"]["committer"] == {"name": "Bot", "email": "bot@example.com",
                                           "date": "2030-01-01T00:00:00Z"}
    assert tip(repo) == done["commit"]["sha"]
    made = repo.app.put_json(f"{REPO}/contents/new.txt", {
        "message": "New", "content": b64("n\n"), "branch": "topic"}, status=201).json
    assert tip(repo, "topic") == made["commit"]["sha"]
    assert repo.app.put_json(f"{REPO}/contents/x.txt", {
        "message": "m", "content": b64("x"), "branch": "gone"}, status=404).json["message"] == \
        "Branch gone not found"
    gone = repo.app.delete_json(f"{REPO}/contents/new.txt", {
        "message": "Remove", "sha": made["content"]["sha"], "branch": "topic"}, status=200).json
    assert gone["content"] is None
    assert repo.get(f"{REPO}/contents/new.txt?ref=topic", 404).status_int == 404


def test_the_first_file_written_to_an_empty_repository_creates_its_branch(gh):
    gh.seed({"owner": "octo", "name": "demo"})
    assert gh.get(f"{REPO}/contents/README.md", 404).json["message"] == \
        "This repository is empty."
    made = gh.app.put_json(f"{REPO}/contents/README.md",
                           {"message": "First", "content": b64("# New\n")}, status=201).json
    assert made["commit"]["parents"] == [] and tip(gh) == made["commit"]["sha"]


def test_git_data_builds_a_commit_from_a_blob_and_a_tree_over_base_tree(repo):
    blob = repo.post(f"{REPO}/git/blobs", {"content": b64("\x00\x01"), "encoding": "base64"},
                     201).json["sha"]
    assert base64.b64decode(repo.get(f"{REPO}/git/blobs/{blob}", 200).json["content"]) == \
        b"\x00\x01"
    base = repo.get(f"{REPO}/git/trees/main", 200).json
    tree = repo.post(f"{REPO}/git/trees", {"base_tree": base["sha"], "tree": [
        {"path": "bin/data", "mode": "100644", "type": "blob", "sha": blob},
        {"path": "README.md", "mode": "100644", "type": "blob", "sha": None},
        {"path": "NEW.md", "mode": "100644", "type": "blob", "content": "new\n"}]}, 201).json
    listed = repo.get(f"{REPO}/git/trees/{tree['sha']}?recursive=1", 200).json["tree"]
    assert [(e["path"], e["type"]) for e in listed] == [
        ("NEW.md", "blob"), ("bin", "tree"), ("bin/data", "blob"), ("src", "tree"),
        ("src/app.py", "blob")]
    commit = repo.post(f"{REPO}/git/commits", {"message": "Build", "tree": tree["sha"],
                                                "parents": [tip(repo)]}, 201).json
    assert commit["tree"]["sha"] == tree["sha"] and tip(repo) != commit["sha"]
    assert repo.post(f"{REPO}/git/commits", {"message": "x", "tree": blob}, 422).json[
        "message"] == "Tree SHA does not exist"
    assert repo.post(f"{REPO}/git/trees", {"tree": [{"path": "a", "mode": "100644",
                                                     "sha": "f" * 40}]}, 422).status_int == 422
    assert repo.get(f"{REPO}/git/blobs/{'f' * 40}", 404).status_int == 404


def test_commits_list_get_and_compare_follow_the_history(repo):
    main, topic = tip(repo), tip(repo, "topic")
    listed = repo.get(f"{REPO}/commits?sha=topic", 200).json
    assert [c["sha"] for c in listed] == [topic, main]
    assert [c["sha"] for c in repo.get(f"{REPO}/commits?sha=topic&path=src/util.py",
                                       200).json] == [topic]
    paged = repo.get(f"{REPO}/commits?sha=topic&per_page=1", 200)
    assert 'rel="next"' in paged.headers["Link"]
    one = repo.get(f"{REPO}/commits/topic", 200).json
    assert {f["filename"]: (f["status"], f["additions"], f["deletions"]) for f in one["files"]} \
        == {"README.md": ("modified", 1, 0), "src/util.py": ("added", 1, 0)}
    assert one["stats"] == {"total": 2, "additions": 2, "deletions": 0}
    compared = repo.get(f"{REPO}/compare/main...topic", 200).json
    assert (compared["status"], compared["ahead_by"], compared["merge_base_commit"]["sha"]) == \
        ("ahead", 1, main)
    assert repo.get(f"{REPO}/compare/topic...main", 200).json["status"] == "behind"
    assert repo.get(f"{REPO}/commits/{'f' * 40}", 422).json["message"] == \
        f"No commit found for SHA: {'f' * 40}"
    pull = repo.post(f"{REPO}/pulls", {"title": "t", "head": "topic", "base": "main"}, 201)
    number = pull.json["number"]
    assert [f["filename"] for f in repo.get(f"{REPO}/pulls/{number}/files", 200).json] == \
        ["README.md", "src/util.py"]
    assert [c["sha"] for c in repo.get(f"{REPO}/pulls/{number}/commits", 200).json] == [topic]


def test_synthetic_repositories_refuse_object_operations_with_the_emulator_only_error(seeded):
    for path in ("/contents/README.md", "/readme", "/commits", "/git/trees/main"):
        answer = seeded.get(f"/repos/synthetic-org/example{path}", 409).json
        assert answer["code"] == "mockingbird_synthetic_repository", path
    assert seeded.get("/repos/synthetic-org/example/git/ref/heads/main", 200)
