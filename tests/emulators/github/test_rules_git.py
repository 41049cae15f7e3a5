"""The rule objects of refs, commits, contents, the git database, merges and seeding, each built
with a store and a clock (rulekit.py), no HTTP and no other rule: a stand-in answers for the
siblings it calls."""
import pytest

from emulators.github import errors
from emulators.github.inputs import Page
from emulators.github.models.commits import CommitRules
from emulators.github.models.contents import ContentRules
from emulators.github.models.git_data import GitDataRules
from emulators.github.models.merges import MergeRules
from emulators.github.models.refs import RefRules
from emulators.github.models.seeding import Seeding

from .rulekit import A, B, C, T0, Kit


@pytest.fixture
def kit():
    return Kit()


def test_accounts_act_as_the_token_user_made_on_first_use(kit):
    assert kit.store.owner("octocat") is None
    assert kit.accounts.actor() == "octocat"
    assert kit.store.owner("octocat")["type"] == "User"
    assert kit.accounts.person("octocat")["email"].endswith("+octocat@users.noreply.github.com")
    assert kit.accounts.collaborator("stranger") is None  # no account, not named


def test_repositories_find_refuse_and_count(kit):
    repo = kit.repository(graph={A: []})
    assert kit.repos.find("ORG", "R")["key"] == "org/r"
    with pytest.raises(errors.NotFound):
        kit.repos.find("org", "nope")
    with pytest.raises(errors.EmptyRepository):
        kit.repos.require_branches(repo)
    with pytest.raises(errors.SyntheticRepository):
        kit.repos.objects(repo)
    kit.repos.count_open(repo["key"], "open_issues", 2)
    assert kit.repos.json(kit.store.repo(repo["key"]))["open_issues_count"] == 2


def test_refs_create_move_and_refuse_as_git_does(kit):
    refs = RefRules(kit.store, kit.clock, **kit.shared(
        protection={"push_refusal": lambda *args, **kw: None}))
    repo = kit.repository(graph={A: [], B: [A], C: [A]}, branches={"main": A})
    ref = refs.create(repo, "refs/heads/topic", B)
    assert ref["object"]["sha"] == B and kit.events == ["create", "push"]
    with pytest.raises(errors.Unprocessable, match="Reference already exists"):
        refs.create(repo, "refs/heads/topic", B)
    with pytest.raises(errors.Unprocessable, match="not a fast forward"):
        refs.update(repo, "refs/heads/topic", C)
    assert refs.update(repo, "refs/heads/topic", C, force=True)["object"]["sha"] == C
    assert kit.store.repo(repo["key"])["pushed_ms"] == T0
    assert refs.listing(repo, "heads/", Page(1, 1)).total == 2
    with pytest.raises(errors.RefRejected, match="stale info"):
        refs.write(repo, "refs/heads/main", B, expect=C)


def _files(kit, files, parents=(), message="one\n"):
    """A repository of objects whose `main` holds `files`; (repository, commit sha)."""
    repo = kit.repository(objects=True)
    objects = kit.store.git(repo["key"])
    tree = objects.write_tree([{"path": p, "mode": "100644", "sha": objects.write_blob(data)}
                               for p, data in files.items()])
    sha = objects.write_commit(tree, list(parents), message)
    kit.branch(repo, "main", sha)
    return kit.store.repo(repo["key"]), sha


def test_commits_read_a_repository_of_objects(kit):
    commits = CommitRules(kit.store, kit.clock, accounts=kit.accounts, repos=kit.repos)
    repo, sha = _files(kit, {"README.md": b"# hi\n"}, message="first\n\nbody\n")
    assert commits.commit_sha(repo["key"], "main") == sha
    shown = commits.get(repo, "main")
    assert shown["commit"]["message"] == "first\n\nbody"  # git's final newline left out
    assert shown["stats"] == {"total": 1, "additions": 1, "deletions": 0}
    assert commits.list(repo, Page(1, 30)).total == 1
    with pytest.raises(errors.Unprocessable, match="No commit found for SHA: nope"):
        commits.get(repo, "nope")


def test_contents_write_a_file_as_a_commit_on_its_branch(kit):
    repo, tip = _files(kit, {"a.txt": b"one\n"})
    writes = []

    def write(repo, ref, sha, *, expect):
        writes.append((ref, sha, expect))
        kit.branch(repo, "main", sha)
    contents = ContentRules(kit.store, repos=kit.repos, rules=kit.shared(
        commits={"resolve": lambda repo, objects, name: tip if name == "main" else None},
        refs={"write": write})["rules"])
    shape, raw = contents.get(repo, "a.txt")
    assert raw == b"one\n" and shape["type"] == "file"
    with pytest.raises(errors.Unprocessable, match='"sha" wasn\'t supplied'):
        contents.put(repo, "a.txt", message="m", content=b"two\n")
    answer, created = contents.put(repo, "b.txt", message="m", content=b"new\n")
    assert created and writes == [("refs/heads/main", answer["commit"]["sha"], tip)]
    assert answer["commit"]["parents"][0]["sha"] == tip


def test_git_data_writes_git_objects_and_checks_what_a_sha_names(kit):
    data = GitDataRules(repos=kit.repos, rules=kit.shared(commits={})["rules"])
    repo, sha = _files(kit, {"a.txt": b"one\n"})
    blob = data.create_blob(repo, b"hello\n")
    assert blob["sha"] == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object
    tree = data.create_tree(repo, [{"path": "x/y.txt", "mode": "100644", "type": "blob",
                                    "sha": blob["sha"]}])
    commit = data.create_commit(repo, message="m", tree=tree["sha"], parents=[sha])
    assert data.commit(repo, commit["sha"])["parents"][0]["sha"] == sha
    with pytest.raises(errors.Unprocessable, match="Tree SHA does not exist"):
        data.create_commit(repo, message="m", tree=sha)
    with pytest.raises(errors.Unprocessable, match=f"{blob['sha']} is not a tree"):
        data.create_tree(repo, [{"path": "d", "mode": "040000", "type": "tree",
                                 "sha": blob["sha"]}])


def test_merges_find_conflicts_in_the_trees_and_weigh_protection_and_ci(kit):
    repo, base = _files(kit, {"a.txt": b"1\n2\n3\n"})
    objects = kit.store.git(repo["key"])

    def child(text):
        tree = objects.write_tree([{"path": "a.txt", "mode": "100644",
                                    "sha": objects.write_blob(text)}])
        return objects.write_commit(tree, [base], "change\n")
    ours, theirs, other = child(b"1\nX\n3\n"), child(b"1\nY\n3\n"), child(b"1\n2\n3\n4\n")
    failing = []
    merges = MergeRules(kit.store, kit.clock, **kit.shared(
        commits={"pair_objects": lambda repo, head, base: objects,
                 "merge_base": lambda objects, one, two: base},
        protection={"record": lambda key, branch: None,
                    "merge_blocker": lambda *args: None},
        statuses={"latest": lambda key, sha: failing}, checks={"latest": lambda key, sha: []}))
    pull = {"base_ref": "main", "draft": False}
    assert merges.conflicts(repo, theirs, ours) == ["a.txt"]
    assert merges.mergeability(repo, pull, theirs, ours) == (False, False, "dirty")
    assert merges.mergeability(repo, pull, other, base) == (True, True, "clean")
    failing.append({"state": "failure"})
    assert merges.mergeability(repo, pull, other, base) == (True, True, "unstable")


def test_seeding_checks_the_whole_fixture_before_writing(kit):
    written = []
    seeding = Seeding(kit.store, kit.clock, repos=kit.repos,
                      refs=kit.shared(refs={"put": lambda *ref: written.append(ref)})
                      ["rules"].refs)
    with pytest.raises(errors.SeedInvalid, match="Every parent must be seeded"):
        seeding.seed({"owner": "o", "name": "r", "commits": [{"sha": A, "parents": [B]}]})
    assert kit.store.repo("o/r") is None and written == []
    repo = seeding.seed({"owner": "o", "name": "r", "commits": [{"sha": A, "parents": []}],
                         "branches": {"main": A}})
    assert repo["full_name"] == "o/r" and written == [("o/r", "refs/heads/main", A)]
