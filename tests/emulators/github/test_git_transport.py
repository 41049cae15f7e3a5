"""The stock git command line, PyGithub and githubkit against one served emulator: git over
smart HTTP and REST read and write the same objects, with the same SHAs.

One server for the module (each test resets it); git runs with no user config, no prompt.
"""
import base64
import os
import re
import subprocess

import pytest
import requests
from github import Auth, Github, InputGitTreeElement
from githubkit import GitHub

from emulators.github import serve
from testkit.webhook_receiver import Receiver

from .test_webhooks import check_payload

TOKEN = "ghs_synthetic"


@pytest.fixture(scope="module")
def server():
    with serve() as running:
        yield running


@pytest.fixture
def emu(server, tmp_path):
    requests.post(f"{server.admin_url}/reset?all=1", timeout=5).raise_for_status()
    return Emu(server, tmp_path)


class Emu:
    """The served emulator, a scratch folder, and git as a user runs it."""

    def __init__(self, server, folder):
        self.server, self.folder = server, folder
        self.env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(folder),
                    "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
                    "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"}

    def url(self, repo="octo/demo", token=TOKEN, base=None):
        base = base or self.server.url
        auth = f"x-access-token:{token}@" if token else ""
        return base.replace("http://", f"http://{auth}") + f"/{repo}.git"

    def seed(self, name="demo", **body):
        res = requests.post(f"{self.server.admin_url}/github/repositories", timeout=5,
                            json={"owner": "octo", "name": name, **body})
        assert res.status_code == 201, res.text

    def git(self, *args, cwd=None, ok=True):
        done = subprocess.run(["git", *args], cwd=cwd, env=self.env, capture_output=True,
                              text=True, timeout=60)
        if ok:
            assert done.returncode == 0, done.stderr
        return done

    def work(self, name="work"):
        """A new local repository with one commit on main."""
        path = self.folder / name
        self.git("init", "-q", "-b", "main", str(path))
        self.commit(path, "README.md", "# Demo\n", "Initial commit")
        return path

    def commit(self, path, file, text, message):
        (path / file).parent.mkdir(parents=True, exist_ok=True)
        (path / file).write_text(text)
        self.git("add", file, cwd=path)
        self.git("commit", "-qm", message, cwd=path)
        return self.rev(path)

    def rev(self, path, what="HEAD"):
        return self.git("rev-parse", what, cwd=path).stdout.strip()

    def rest(self, path, **kw):
        return requests.get(f"{self.server.url}/repos/octo/demo{path}", timeout=5, **kw)


def pygithub(emu):
    return Github(base_url=emu.server.url, auth=Auth.Token(TOKEN), retry=None,
                  seconds_between_requests=0, seconds_between_writes=0)


def test_push_a_new_repository_read_it_through_rest_and_clone_it(emu):
    emu.seed()
    work = emu.work()
    head = emu.commit(work, "src/app.py", "print('hi')\n", "Add app")
    pushed = emu.git("push", emu.url(), "main", cwd=work)
    assert "* [new branch]      main -> main" in pushed.stderr

    repo = pygithub(emu).get_repo("octo/demo")
    assert repo.get_git_ref("heads/main").object.sha == head
    assert repo.get_contents("src/app.py").decoded_content == b"print('hi')\n"
    assert [c.sha for c in repo.get_commits()] == [head, emu.rev(work, "HEAD~1")]
    assert repo.get_commit(head).files[0].filename == "src/app.py"

    emu.git("clone", "-q", repo.clone_url.replace("http://", f"http://x-access-token:{TOKEN}@"),
            str(emu.folder / "copy"))
    assert emu.rev(emu.folder / "copy") == head
    assert (emu.folder / "copy" / "src" / "app.py").read_text() == "print('hi')\n"
    listed = emu.git("ls-remote", emu.url()).stdout.split("\n")
    assert f"{head}\tHEAD" in listed and f"{head}\trefs/heads/main" in listed


def test_a_pushed_branch_becomes_a_pull_request_that_ci_fetches_and_a_push_moves(emu):
    emu.seed()
    work = emu.work()
    emu.git("push", emu.url(), "main", cwd=work)
    emu.git("checkout", "-qb", "feature", cwd=work)
    first = emu.commit(work, "docs/guide.md", "one\n", "Add guide")
    emu.git("push", emu.url(), "feature", cwd=work)
    repo = pygithub(emu).get_repo("octo/demo")
    pull = repo.create_pull(base="main", head="feature", title="Guide", body="Adds a guide")
    assert [f.filename for f in pull.get_files()] == ["docs/guide.md"]
    assert [c.sha for c in pull.get_commits()] == [first]
    compared = repo.compare("main", "feature")
    assert (compared.status, compared.ahead_by, compared.behind_by) == ("ahead", 1, 0)

    ci = emu.folder / "ci"
    emu.git("init", "-q", str(ci))
    emu.git("fetch", "-q", emu.url(), f"refs/pull/{pull.number}/head:pr", cwd=ci)
    assert emu.rev(ci, "pr") == first

    second = emu.commit(work, "docs/guide.md", "one\ntwo\n", "Extend guide")
    emu.git("push", emu.url(), "feature", cwd=work)
    assert repo.get_pull(pull.number).head.sha == second
    assert [c.sha for c in pull.get_commits()] == [first, second]
    emu.git("fetch", "-q", emu.url(), f"+refs/pull/{pull.number}/head:pr", cwd=ci)
    assert emu.rev(ci, "pr") == second
    refused = emu.git("push", "--force", emu.url(), f"HEAD~1:refs/pull/{pull.number}/head",
                      cwd=work, ok=False)
    assert refused.returncode != 0 and "deny updating a hidden ref" in refused.stderr


def test_a_git_made_commit_message_is_shown_without_the_newline_git_ends_it_with(emu):
    # GitHub shows `git commit -m first` as "first" (git stores "first\n"), in REST answers
    # and push payloads alike; a body keeps its inner newlines
    receiver = Receiver(secret="s")
    try:
        emu.seed()
        requests.put(f"{emu.server.admin_url}/webhook-endpoints", timeout=5, json=[
            {"url": receiver.url, "secret": "s", "events": ["push"]}]).raise_for_status()
        work = emu.work()
        emu.git("push", emu.url(), "main", cwd=work)
        emu.git("checkout", "-qb", "topic", cwd=work)
        first = emu.commit(work, "a.txt", "a\n", "first")
        second = emu.commit(work, "b.txt", "b\n", "Second\n\nWith a body\nof two lines.")
        assert emu.git("cat-file", "commit", first, cwd=work).stdout.endswith("\n\nfirst\n")
        emu.git("push", emu.url(), "topic", cwd=work)
        shown = {first: "first", second: "Second\n\nWith a body\nof two lines."}
        pull = requests.post(f"{emu.server.url}/repos/octo/demo/pulls", timeout=5, json={
            "title": "t", "head": "topic", "base": "main"}).json()
        assert {c["sha"]: c["commit"]["message"]
                for c in requests.get(pull["commits_url"], timeout=5).json()} == shown
        for sha, message in shown.items():
            assert emu.rest(f"/commits/{sha}").json()["commit"]["message"] == message
            assert emu.rest(f"/git/commits/{sha}").json()["message"] == message
        listed = emu.rest("/commits?sha=topic").json()
        assert [c["commit"]["message"] for c in listed[:2]] == [shown[second], shown[first]]
        compared = emu.rest("/compare/main...topic").json()
        assert [c["commit"]["message"] for c in compared["commits"]] == list(shown.values())
        requests.post(f"{emu.server.admin_url}/webhooks/flush", timeout=10).raise_for_status()
        receiver.wait_for(3)
        push = [p for _h, p in receiver.received if p.get("after") == second][0]
        assert [c["message"] for c in push["commits"]][-2:] == list(shown.values())
        assert push["head_commit"]["message"] == shown[second]
    finally:
        receiver.close()


def test_a_non_fast_forward_push_is_refused_and_accepted_with_force(emu):
    emu.seed()
    work = emu.work()
    emu.commit(work, "a.txt", "a\n", "Add a")
    emu.git("push", emu.url(), "main", cwd=work)
    emu.git("reset", "-q", "--hard", "HEAD~1", cwd=work)
    rewritten = emu.commit(work, "b.txt", "b\n", "Add b instead")
    refused = emu.git("push", emu.url(), "main", cwd=work, ok=False)
    assert refused.returncode == 1 and "[rejected]        main -> main (non-fast-forward)" \
        in refused.stderr
    forced = emu.git("push", "--force", emu.url(), "main", cwd=work)
    assert "(forced update)" in forced.stderr
    assert emu.rest("/git/ref/heads/main").json()["object"]["sha"] == rewritten


def test_contents_and_git_data_writes_are_fetched_by_git_with_the_same_shas(emu):
    emu.seed(files={"main": {"README.md": "# Demo\n"}})
    kit = GitHub(TOKEN, base_url=emu.server.url + "/", auto_retry=False, http_cache=False)
    made = kit.rest.repos.create_or_update_file_contents(
        "octo", "demo", "notes/todo.txt",
        data={"message": "Add todo", "content": base64.b64encode(b"buy milk\n").decode()})
    file_commit = made.parsed_data.commit.sha
    readme = kit.rest.repos.get_readme("octo", "demo").parsed_data
    assert base64.b64decode(readme.content) == b"# Demo\n"

    repo = pygithub(emu).get_repo("octo/demo")
    blob = repo.create_git_blob("hello\n", "utf-8")
    tree = repo.create_git_tree([InputGitTreeElement("hello.txt", "100644", "blob",
                                                     sha=blob.sha)],
                                base_tree=repo.get_git_tree(file_commit))
    commit = repo.create_git_commit("Add hello", tree, [repo.get_git_commit(file_commit)])
    repo.get_git_ref("heads/main").edit(commit.sha)

    clone = emu.folder / "clone"
    emu.git("clone", "-q", emu.url(), str(clone))
    assert emu.rev(clone) == commit.sha
    assert emu.rev(clone, "HEAD~1") == file_commit
    assert emu.rev(clone, "HEAD:hello.txt") == blob.sha
    assert emu.rev(clone, "HEAD^{tree}") == tree.sha
    assert (clone / "notes" / "todo.txt").read_text() == "buy milk\n"
    assert emu.git("hash-object", str(clone / "hello.txt")).stdout.strip() == blob.sha


def test_namespaces_are_isolated_over_git(emu):
    put = requests.put(f"{emu.server.admin_url}/credentials", timeout=5,
                       json={"credentials": {"token-w1": "w1"}})
    assert put.status_code == 200, put.text
    for namespace in ("w1", "w2"):
        requests.post(f"{emu.server.admin_url}/github/repositories?namespace={namespace}",
                      json={"owner": "octo", "name": "demo"}, timeout=5).raise_for_status()
    work = emu.work()
    emu.git("push", emu.url(token="token-w1"), "main", cwd=work)  # the credential map: w1
    carrier = f"{emu.server.url}/__admin/ns/w1"
    assert emu.git("ls-remote", emu.url(base=carrier)).stdout.split()[0] == emu.rev(work)
    w2 = emu.git("ls-remote", emu.url(base=f"{emu.server.url}/__admin/ns/w2")).stdout
    assert w2 == ""  # w2's repository of the same name is still empty
    missing = emu.git("ls-remote", emu.url(), ok=False)  # default: no such repository
    assert missing.returncode != 0 and "Repository not found" in missing.stderr


def test_urls_answered_in_a_header_namespace_lead_back_into_it(emu):
    w1 = {"x-mockingbird-namespace": "w1", "Authorization": f"Bearer {TOKEN}"}
    requests.post(f"{emu.server.admin_url}/github/repositories", headers=w1, timeout=5, json={
        "owner": "octo", "name": "demo",
        "files": {"main": {"README.md": "# In w1\n"}}}).raise_for_status()
    api = f"{emu.server.url}/repos/octo/demo"
    repo = requests.get(api, headers=w1, timeout=5).json()
    carried = requests.get(f"{emu.server.url}/__admin/ns/w1/repos/octo/demo", timeout=5).json()
    assert repo == carried  # every URL as the path carrier writes it
    # followed without the header: still w1 (the default namespace has no such repository)
    assert requests.get(api, timeout=5).status_code == 404
    assert requests.get(repo["url"], timeout=5).json()["id"] == repo["id"]
    readme = requests.get(repo["contents_url"].replace("{+path}", "README.md"), headers=w1,
                          timeout=5).json()
    assert requests.get(readme["download_url"], timeout=5).text == "# In w1\n"
    assert readme["html_url"] == f"{repo['html_url']}/blob/main/README.md"
    clone = emu.folder / "clone"
    emu.git("clone", "-q", repo["clone_url"].replace("http://", f"http://x-access-token:{TOKEN}@"),
            str(clone))
    assert (clone / "README.md").read_text() == "# In w1\n"


def test_git_without_credentials_is_asked_for_them_as_github_does(emu):
    emu.seed(files={"main": {"README.md": "# Demo\n"}})
    assert emu.git("ls-remote", emu.url(token=None)).returncode == 0  # public: no credentials
    work = emu.work()
    refused = emu.git("push", emu.url(token=None), "main", cwd=work, ok=False)
    assert refused.returncode != 0 and "could not read Username" in refused.stderr
    answer = requests.get(emu.url(token=None) + "/info/refs?service=git-receive-pack", timeout=5)
    assert answer.status_code == 401 and answer.headers["WWW-Authenticate"].startswith("Basic")


def test_a_synthetic_repository_tells_git_why_it_cannot_serve_it(emu):
    emu.seed(commits=[{"sha": "a" * 40, "parents": []}], branches={"main": "a" * 40})
    answer = emu.git("clone", "-q", emu.url(), str(emu.folder / "x"), ok=False)
    assert answer.returncode != 0 and "synthetic SHAs" in answer.stderr
    res = emu.rest("/contents/README.md")
    assert res.status_code == 409 and res.json()["code"] == "mockingbird_synthetic_repository"
    assert emu.rest("/git/ref/heads/main").status_code == 200  # REST keeps working


def test_a_push_sends_real_commits_and_synchronize_and_a_deletion_closes_the_pr(emu):
    receiver = Receiver(secret="s")
    try:
        emu.seed()
        requests.put(f"{emu.server.admin_url}/webhook-endpoints", timeout=5, json=[
            {"url": receiver.url, "secret": "s", "events": ["push", "pull_request"]}]
        ).raise_for_status()
        work = emu.work()
        emu.git("push", emu.url(), "main", cwd=work)
        emu.git("checkout", "-qb", "topic", cwd=work)
        emu.commit(work, "x.txt", "x\n", "Add x")
        emu.git("push", emu.url(), "topic", cwd=work)
        pull = requests.post(f"{emu.server.url}/repos/octo/demo/pulls", timeout=5, json={
            "title": "t", "head": "topic", "base": "main"})
        assert pull.status_code == 201, pull.text
        sha = emu.commit(work, "y.txt", "y\n", "Add y\n\nWith a body.")
        emu.git("push", emu.url(), "topic", cwd=work)
        emu.git("push", emu.url(), ":topic", cwd=work)
        requests.post(f"{emu.server.admin_url}/webhooks/flush", timeout=10).raise_for_status()
        receiver.wait_for(8)
        assert receiver.events() == [
            ("ping", None), ("push", None), ("push", None), ("pull_request", "opened"),
            ("push", None), ("pull_request", "synchronize"), ("push", None),
            ("pull_request", "closed")]
        push = [p for _h, p in receiver.received if p.get("after") == sha][0]
        assert [c["message"] for c in push["commits"]] == ["Add y\n\nWith a body."]
        assert push["commits"][0]["added"] == ["y.txt"]
        assert push["commits"][0]["author"]["email"] == "ada@example.com"
        assert push["head_commit"]["id"] == sha
        for _headers, payload in receiver.received[1:]:
            check_payload("pull_request" if "pull_request" in payload else "push", payload)
        assert requests.get(pull.json()["url"], timeout=5).json()["state"] == "closed"
    finally:
        receiver.close()


def test_a_push_is_journaled_checkpointed_and_honours_the_presets(emu):
    emu.seed()
    work = emu.work()
    requests.post(f"{emu.server.admin_url}/faults", json={"preset": "github_unavailable"},
                  timeout=5).raise_for_status()
    down = emu.git("push", emu.url(), "main", cwd=work, ok=False)
    assert down.returncode != 0 and "503" in down.stderr
    emu.git("push", emu.url(), "main", cwd=work)  # the preset is one shot per write
    journal = requests.get(f"{emu.server.admin_url}/requests?operationId=git/receive-pack",
                           timeout=5).json()["requests"]
    assert [e["status"] for e in journal] == [503, 200]
    assert journal[-1]["accepted"] is True and journal[-1]["checkpoint"]
    requests.post(f"{emu.server.admin_url}/branches/main/checkout", timeout=5,
                  json={"checkpoint": journal[-1]["checkpoint"]}).raise_for_status()
    emu.commit(work, "b.txt", "b\n", "b")
    requests.post(f"{emu.server.admin_url}/faults", json={"preset": "github_push_accepted_drop"},
                  timeout=5).raise_for_status()
    dropped = emu.git("push", emu.url(), "main", cwd=work, ok=False)
    assert dropped.returncode != 0
    assert emu.rest("/git/ref/heads/main").json()["object"]["sha"] == emu.rev(work)


def test_shallow_and_partial_clones_atomic_pushes_and_annotated_tags(emu):
    emu.seed()
    work = emu.work()
    for n in range(3):
        emu.commit(work, f"f{n}.txt", f"{n}\n", f"Commit {n}")
    emu.git("tag", "-a", "v1", "-m", "Release 1", cwd=work)
    emu.git("push", emu.url(), "main", "v1", cwd=work)
    tag = emu.rev(work, "v1")
    assert emu.rest("/git/ref/tags/v1").json()["object"] == {
        "type": "tag", "sha": tag,
        "url": f"{emu.server.url}/repos/octo/demo/git/tags/{tag}"}

    shallow = emu.folder / "shallow"
    emu.git("clone", "-q", "--depth", "1", emu.url(), str(shallow))
    assert emu.git("rev-list", "--count", "HEAD", cwd=shallow).stdout.strip() == "1"
    partial = emu.folder / "partial"
    emu.git("clone", "-q", "--filter=blob:none", emu.url(), str(partial))
    assert (partial / "f2.txt").read_text() == "2\n"  # fetched by id at checkout
    emu.git("checkout", "-qb", "side", "HEAD~1", cwd=work)
    emu.commit(work, "side.txt", "s\n", "Side")
    # the server refuses the hidden ref, so the atomic push writes neither
    refused = emu.git("push", "--atomic", emu.url(), "side", "side:refs/pull/9/head", cwd=work,
                      ok=False)
    assert "deny updating a hidden ref" in refused.stderr
    assert "side -> side (atomic push failed)" in refused.stderr
    assert emu.git("ls-remote", emu.url(), "refs/heads/side").stdout == ""


def _shallow_history(emu):
    """main: c1 c2 (tag old) c3, a side branch from c2 merged, then c4 c5: a day apart each."""
    work = emu.folder / "dated"
    emu.git("init", "-q", "-b", "main", str(work))
    for day, (branch, name) in enumerate([("main", "c1"), ("main", "c2"), ("main", "c3"),
                                          ("side", "s1"), ("main", "c4"), ("main", "c5")], 1):
        emu.env["GIT_COMMITTER_DATE"] = emu.env["GIT_AUTHOR_DATE"] = f"2024-01-0{day}T12:00Z"
        if name == "s1":
            emu.git("checkout", "-qb", "side", "HEAD~1", cwd=work)
        emu.commit(work, f"{name}.txt", name, name)
        if name == "s1":
            emu.git("checkout", "-q", "main", cwd=work)
            emu.git("merge", "-q", "--no-ff", "-m", "merge side", "side", cwd=work)
        if name == "c2":
            emu.git("tag", "old", cwd=work)
    return work


def test_deepen_shallow_since_and_exclude_answer_as_git_upload_pack_does(emu):
    emu.seed()
    work = _shallow_history(emu)
    emu.git("push", "-q", emu.url(), "main", "old", cwd=work)
    steps = [["--deepen", "1"], ["--deepen", "2"], ["--shallow-since=2024-01-02T00:00Z"],
             ["--shallow-exclude=old"], ["--depth", "2"], ["--unshallow"]]

    def shallow_state(path):
        shallow = path / ".git" / "shallow"
        return (emu.git("rev-list", "--count", "HEAD", cwd=path).stdout.strip(),
                sorted(shallow.read_text().split()) if shallow.exists() else [])

    def walk(url, name):
        path = emu.folder / name
        emu.git("clone", "-q", "--no-tags", "--depth", "1", url, str(path))
        seen = [shallow_state(path)]
        for step in steps:
            emu.git("fetch", "-q", "--no-tags", *step, "origin", cwd=path)
            seen.append(shallow_state(path))
        for option in ("--shallow-since=2024-01-03T00:00Z", "--shallow-exclude=old"):
            clone = emu.folder / f"{name}{option[10:15]}"
            emu.git("clone", "-q", "--no-tags", option, url, str(clone))
            seen.append(shallow_state(clone))
        return seen
    # git's own upload-pack is the reference (GitHub runs it too); file:// follows tags
    # unlike HTTP, so no tags are fetched and both ask for the same commits
    expected = walk(f"file://{work}", "by-git")
    assert len({count for count, _ in expected}) >= 4  # the steps move the boundary
    assert walk(emu.url(), "by-emulator") == expected

    # a plain fetch into a shallow clone sends its shallow lines without any deepen
    emu.commit(work, "c6.txt", "c6", "c6")
    emu.git("push", "-q", emu.url(), "main", cwd=work)
    shallow = emu.folder / "by-emulator"
    emu.git("fetch", "-q", "origin", cwd=shallow)
    assert emu.rev(shallow, "origin/main") == emu.rev(work)


def _shallow_pushes(emu, url, name):
    """Pushes from `--depth 1` clones while another clone moves the branches under them: for
    each, git's exit code and its ref lines (ids aside); then the refs left."""
    full, seen = emu.folder / f"{name}-full", []

    def push(path, *args):
        done = emu.git("push", *args, cwd=path, ok=False)
        lines = [re.sub(r"[0-9a-f]{7,40}", "X", line) for line in done.stderr.splitlines()
                 if "->" in line or "[deleted]" in line]
        seen.append((args, done.returncode, lines))

    emu.git("init", "-q", "-b", "main", str(full))
    for n in range(3):
        emu.commit(full, "f.txt", f"{n}\n", f"Base {n}")
    emu.git("push", "-q", url, "main", cwd=full)
    shallow = emu.folder / f"{name}-shallow"
    emu.git("clone", "-q", "--depth", "1", url, str(shallow))
    emu.commit(shallow, "s.txt", "1\n", "From CI")
    push(shallow, "origin", "main")  # lands: a fast-forward
    emu.git("pull", "-q", url, "main", cwd=full)
    emu.commit(full, "f.txt", "moved\n", "Moved on")
    emu.git("push", "-q", url, "main", cwd=full)
    emu.commit(shallow, "s.txt", "2\n", "From CI again")
    push(shallow, "origin", "main")  # git refuses: the remote has work it does not have
    emu.git("fetch", "-q", "origin", cwd=shallow)
    push(shallow, "origin", "main")  # now it knows it: a non-fast-forward
    push(shallow, "--force", "origin", "main")

    emu.git("checkout", "-qb", "side", cwd=full)
    emu.commit(full, "side.txt", "side\n", "Side")
    emu.git("push", "-q", url, "side", "main:gone", cwd=full)
    ci = emu.folder / f"{name}-side"
    emu.git("clone", "-q", "--depth", "1", "--branch", "side", url, str(ci))
    emu.commit(ci, "ci.txt", "ci\n", "On side")
    emu.git("push", "-q", url, ":side", cwd=full)  # its shallow commit is no ref's any more
    push(ci, "origin", "side")
    push(ci, "--atomic", "origin", "side:other", ":gone")
    refs = [line.split("\t")[1] for line in emu.git("ls-remote", url).stdout.splitlines()]
    return seen, refs


def test_a_push_from_a_shallow_clone_is_taken_as_git_receive_pack_takes_it(emu):
    emu.seed()
    bare = emu.folder / "bare.git"
    emu.git("init", "-q", "--bare", "-b", "main", str(bare))
    # git's own receive-pack (file://) is the reference, GitHub runs it too
    expected = _shallow_pushes(emu, f"file://{bare}", "by-git")
    assert _shallow_pushes(emu, emu.url(), "by-emulator") == expected
    seen, refs = expected
    assert [(code, lines[0].split("main -> main")[-1]) for _args, code, lines in seen[:4]] == [
        (0, ""), (1, " (fetch first)"), (1, " (non-fast-forward)"), (0, " (forced update)")]
    assert seen[4][1:] == (1, [" ! [remote rejected] side -> side (shallow update not allowed)"])
    # the atomic push keeps its deletion, as git's receive-pack does
    assert seen[5][1:] == (1, [" - [deleted]         gone",
                               " ! [remote rejected] side -> other (shallow update not allowed)"])
    assert refs == ["HEAD", "refs/heads/main"]
    assert emu.rest("/commits/main").json()["commit"]["message"] == "From CI again"


def test_refused_fetches_show_git_upload_pack_own_remote_error(emu):
    emu.seed(files={"main": {"README.md": "# Demo\n"}})
    bare = emu.folder / "bare.git"
    emu.git("clone", "-q", "--bare", emu.url(), str(bare))
    said = []
    for n, args in enumerate([["origin", "f" * 40], ["--shallow-exclude=main", "origin", "main"],
                              ["--shallow-exclude=nope", "origin", "main"]]):
        done = []
        for url in (f"file://{bare}", emu.url()):  # git's own upload-pack, then the emulator
            path = emu.folder / f"fetch-{n}-{len(done)}"
            emu.git("init", "-q", str(path))
            emu.git("remote", "add", "origin", url, cwd=path)
            done.append(emu.git("fetch", *args, cwd=path, ok=False))
        by_git, by_emulator = done
        assert by_emulator.returncode == by_git.returncode == 128
        remote = [line.removeprefix("fatal: remote error: ")
                  for line in by_emulator.stderr.splitlines()
                  if line.startswith("fatal: remote error: ")]
        assert len(remote) == 1 and remote[0] in by_git.stderr, (by_git.stderr, remote)
        said.append(remote[0])
    assert said == [f"upload-pack: not our ref {'f' * 40}",
                    "no commits selected for shallow requests",
                    "git upload-pack: ambiguous deepen-not: deepen-not nope"]
    journal = requests.get(f"{emu.server.admin_url}/requests?operationId=git/upload-pack",
                           timeout=5).json()["requests"]
    assert {e["status"] for e in journal} == {200}  # as git http-backend answers them


def _pkt(line):
    return b"%04x" % (len(line) + 4) + line


def test_garbage_and_broken_packs_are_refused_without_a_crash(emu):
    emu.seed(files={"main": {"README.md": "# Demo\n"}})
    url, auth = emu.url(token=None), {"Authorization": f"Bearer {TOKEN}"}
    head = emu.rest("/git/ref/heads/main").json()["object"]["sha"]

    def post(service, body, content_type=None):
        return requests.post(f"{url}/{service}", data=body, timeout=10, headers={
            **auth, "Content-Type": content_type or f"application/x-{service}-request"})
    assert post("git-upload-pack", b"garbage").status_code == 400
    # a request upload-pack refuses is answered 200 with an ERR pkt-line in git's own words
    bare = emu.folder / "bare.git"
    emu.git("clone", "-q", "--bare", emu.url(), str(bare))
    caps = " multi_ack_detailed side-band-64k thin-pack ofs-delta"  # what git asks for
    want = _pkt(f"want {head}{caps}\n".encode())
    for request in [_pkt(f"want {'f' * 40}{caps}\n".encode()) + b"00000009done\n",
                    *(want + _pkt(line) + b"0000" for line in (
                        b"shallow nope\n", b"deepen x\n", b"deepen 0\n", b"deepen-since x\n",
                        b"deepen-not refs/heads/absent\n", b"deepen-not main\n"))]:
        by_git = subprocess.run(["git", "upload-pack", "--stateless-rpc", str(bare)],
                                input=request, capture_output=True, env=emu.env)
        # git's ERR line where it sends one, else the words it dies with
        expected = by_git.stdout or _pkt(b"ERR " + by_git.stderr.strip()[len(b"fatal: "):])
        refused = post("git-upload-pack", request)
        assert (refused.status_code, refused.content) == (200, expected)
    assert by_git.stderr.decode().strip() == "fatal: no commits selected for shallow requests"
    assert post("git-upload-pack", b"0000", "text/plain").status_code == 415
    command = f"{head} {'1' * 40} refs/heads/main\0report-status\n".encode()
    broken = post("git-receive-pack", _pkt(command) + b"0000" + b"PACK\0\0\0\2\0\0\0\1junk")
    assert broken.status_code == 200 and b"unpack " in broken.content
    assert b"unpack ok" not in broken.content
    assert emu.rest("/git/ref/heads/main").json()["object"]["sha"] == head
