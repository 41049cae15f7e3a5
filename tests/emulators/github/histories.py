"""Git histories made with the git command line, seeded into the emulator as bundles.

`pr_history()` is the history the pull request tests share (built once per session):

    main   c0 ── m1            m1 changes line 1 of shared.txt and adds docs/notes.md
              ├─ t1 ── t2      topic: adds feature.txt and docs/guide.md's second line,
              │                then changes line 3 of shared.txt (merges cleanly)
              └─ x1            clash: changes line 1 too (conflicts with main)
"""
import base64
import functools
import os
import subprocess
import tempfile

ENV = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
       "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
       "GIT_AUTHOR_DATE": "2023-11-14T22:00:00Z", "GIT_COMMITTER_DATE": "2023-11-14T22:00:00Z",
       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd, *args):
    """Run git in `cwd`; return its stdout (stripped)."""
    done = subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def _commit(cwd, files, message):
    for path, text in files.items():
        with open(os.path.join(cwd, path), "w") as out:
            out.write(text)
    git(cwd, "add", "-A")
    git(cwd, "commit", "-q", "-m", message)
    return git(cwd, "rev-parse", "HEAD")


@functools.lru_cache(maxsize=None)
def pr_history():
    """Return (base64 bundle, {name: sha}) of the history in the module docstring."""
    with tempfile.TemporaryDirectory() as cwd:
        git(cwd, "init", "-q", "-b", "main")
        os.mkdir(os.path.join(cwd, "docs"))
        shas = {"c0": _commit(cwd, {"README.md": "# example\n", "shared.txt": "a\nb\nc\n",
                                    "docs/guide.md": "one\n"}, "Initial commit")}
        git(cwd, "checkout", "-q", "-b", "topic")
        shas["t1"] = _commit(cwd, {"feature.txt": "feature\n", "docs/guide.md": "one\ntwo\n"},
                             "Add the feature")
        shas["t2"] = _commit(cwd, {"shared.txt": "a\nb\nC\n"}, "Shout line three")
        git(cwd, "checkout", "-q", "-b", "clash", shas["c0"])
        shas["x1"] = _commit(cwd, {"shared.txt": "X\nb\nc\n"}, "Cross line one")
        git(cwd, "checkout", "-q", "main")
        shas["m1"] = _commit(cwd, {"shared.txt": "A\nb\nc\n", "docs/notes.md": "notes\n"},
                             "Shout line one")
        bundle = os.path.join(cwd, "all.bundle")
        git(cwd, "bundle", "create", "-q", bundle, "--all")
        with open(bundle, "rb") as data:
            return base64.b64encode(data.read()).decode(), shas


def seed_body(owner="synthetic-org", name="example"):
    """The seeding body of `pr_history()` for `POST /__admin/github/repositories`."""
    bundle, _ = pr_history()
    return {"owner": owner, "name": name, "default_branch": "main", "bundle": bundle}
