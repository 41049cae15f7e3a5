"""The object layer: git objects in the shared SQLite state, read and written with git's SHAs,
refs moved through `write_ref`; seeding with files or a bundle; synthetic repositories refused."""
import base64
import subprocess

import pytest
import webtest

from emulators.github import errors
from emulators.github.resources.request import backend_for

from .conftest import GitHubClient

FILES = {"main": {"README.md": "# Example\n", "src/app.py": "print('hi')\n"},
         "topic": {"README.md": "# Example\n", "src/app.py": "print('hi')\n",
                   "NOTES.txt": {"content": base64.b64encode(b"\x00bin").decode(),
                                 "encoding": "base64"}}}


@pytest.fixture
def gh(runtime):
    return GitHubClient(webtest.TestApp(runtime))


def _backend(runtime, namespace="default"):
    return backend_for(runtime.instance(namespace))


def _objects(backend, owner, name):
    """(repository record, its GitObjects)."""
    repo = backend.repos.find(owner, name)
    return repo, backend.repos.objects(repo)


def _git(*args, cwd=None, data=None):
    return subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True,
                          check=True).stdout


def test_seeded_files_are_git_objects_with_git_shas(gh, runtime):
    gh.seed({"owner": "octo", "name": "demo", "files": FILES})
    repo, objects = _objects(_backend(runtime), "octo", "demo")
    main = gh.get("/repos/octo/demo/git/ref/heads/main").json["object"]["sha"]
    topic = gh.get("/repos/octo/demo/git/ref/heads/topic").json["object"]["sha"]
    assert objects.commit(topic).parents == [main.encode()]
    files = objects.files(objects.tree_of(main))
    assert sorted(files) == ["README.md", "src/app.py"]
    expected = _git("hash-object", "--stdin", data=b"print('hi')\n").decode().strip()
    assert files["src/app.py"] == ("100644", expected)
    assert objects.blob(objects.files(objects.tree_of(topic))["NOTES.txt"][1]) == b"\x00bin"


def test_written_tree_and_commit_move_a_branch_only_forward(gh, runtime):
    gh.seed({"owner": "octo", "name": "demo", "files": FILES})
    backend = _backend(runtime)
    repo, objects = _objects(backend, "octo", "demo")
    main = gh.get("/repos/octo/demo/git/ref/heads/main").json["object"]["sha"]
    blob = objects.write_blob(b"hello\n")
    assert blob == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object of "hello\n"
    tree = objects.write_tree([{"path": "docs/hello.txt", "sha": blob},
                               {"path": "README.md", "sha": None}],
                              base_tree=objects.tree_of(main))
    assert sorted(objects.files(tree)) == ["docs/hello.txt", "src/app.py"]
    child = objects.write_commit(tree, [main], "Add hello\n",
                                 author={"name": "A U Thor", "email": "a@example.com",
                                         "date": 1_700_000_000})
    assert backend.refs.write(repo, "refs/heads/main", child)["sha"] == child
    assert gh.get("/repos/octo/demo/git/ref/heads/main").json["object"]["sha"] == child
    with pytest.raises(errors.RefRejected, match="non-fast-forward"):
        backend.refs.write(repo, "refs/heads/main", main)
    with pytest.raises(errors.RefRejected, match="stale info"):
        backend.refs.write(repo, "refs/heads/main", main, force=True, expect=main)
    assert backend.refs.write(repo, "refs/heads/main", main, force=True)["sha"] == main


def test_a_bundle_seeds_branches_and_tags(gh, tmp_path):
    work = tmp_path / "work"
    _git("init", "-q", "-b", "trunk", str(work))
    (work / "a.txt").write_text("a\n")
    _git("add", "a.txt", cwd=work)
    _git("-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "one", cwd=work)
    _git("tag", "v1", cwd=work)
    _git("bundle", "create", str(tmp_path / "all.bundle"), "--all", cwd=work)
    head = _git("rev-parse", "HEAD", cwd=work).decode().strip()
    bundle = base64.b64encode((tmp_path / "all.bundle").read_bytes()).decode()
    gh.seed({"owner": "octo", "name": "demo", "default_branch": "trunk", "bundle": bundle})
    refs = gh.get("/repos/octo/demo/git/matching-refs/").json
    assert [(r["ref"], r["object"]["sha"]) for r in refs] == [
        ("refs/heads/trunk", head), ("refs/tags/v1", head)]
    assert gh.seed({"owner": "octo", "name": "bad", "bundle": "bm90IGEgYnVuZGxl"},
                   status=400).json["code"] == "mockingbird_seed_invalid"


def test_a_synthetic_repository_answers_the_emulator_only_error(gh, runtime):
    gh.seed()
    with pytest.raises(errors.SyntheticRepository) as raised:
        _objects(_backend(runtime), "synthetic-org", "example")
    assert raised.value.status == 409
    assert "synthetic SHAs" in raised.value.body()["message"]


def test_objects_stay_in_their_namespace_and_go_with_a_reset(gh, runtime):
    gh.seed({"owner": "octo", "name": "demo", "files": FILES})
    _, objects = _objects(_backend(runtime), "octo", "demo")
    assert objects.store.rows.count() > 0
    other = GitHubClient(gh.app, namespace="w2")
    other.seed({"owner": "octo", "name": "demo"})
    _, empty = _objects(_backend(runtime, "w2"), "octo", "demo")
    assert empty.store.rows.count() == 0
    gh.post("/__admin/reset", status=200)
    assert objects.store.rows.count() == 0


def test_a_checkpoint_restore_puts_refs_back_over_immutable_objects(gh, runtime):
    gh.seed({"owner": "octo", "name": "demo", "files": FILES})
    checkpoint = gh.post("/__admin/checkpoints", status=201).json["id"]
    backend = _backend(runtime)
    repo, objects = _objects(backend, "octo", "demo")
    main = gh.get("/repos/octo/demo/git/ref/heads/main").json["object"]["sha"]
    child = objects.write_commit(objects.tree_of(main), [main], "Empty\n")
    backend.refs.write(repo, "refs/heads/main", child)
    gh.post("/__admin/branches/main/checkout", {"checkpoint": checkpoint}, status=200)
    assert gh.get("/repos/octo/demo/git/ref/heads/main").json["object"]["sha"] == main
    assert objects.commit(child) is not None  # objects are immutable: still there
