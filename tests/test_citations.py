"""No file sends a reader to documents a clone does not have.

The emulators and the chat service were written from specs, a house style guide and seeds kept
beside the repository during development ("spec §…", `hermes-real-server.md`, `STYLE.md`,
`../shared/…`). A user's clone has none of them, so code, tests and READMEs state their rules
themselves or point at the repository's own READMEs.
"""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve()

OUTSIDE_DOCUMENTS = re.compile(
    r"spec §|§ ?[0-9]|hermes-real-server|github\.md|STYLE\.md|emulator-runtime\.md"
    r"|hermes-runs\.md|chat\.md|emulators\.md|\.\./shared|seeds/")
# Recorded data the tests compare with (GitHub's published schemas), not prose of ours.
FIXTURE_DATA = ("*.json",)
# Without git (an exported tree), walk the tree minus what is never part of a clone.
NOT_IN_A_CLONE = {".git", ".venv", "var", "node_modules", "__pycache__", ".pytest_cache"}


def tracked_files():
    """The files a clone holds: git's list, or the tree walked when there is no git checkout."""
    try:
        listing = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                                 check=True).stdout.decode()
        return [REPO / name for name in listing.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        return [path for path in REPO.rglob("*") if path.is_file()
                and not NOT_IN_A_CLONE & set(path.relative_to(REPO).parts)]


def is_fixture_data(relative):
    return relative.parts[0] == "tests" and any(relative.match(glob) for glob in FIXTURE_DATA)


def citations(paths, root=REPO):
    """Every `path:line: text` under `root` that cites a document outside the repository."""
    found = []
    for path in paths:
        relative = path.relative_to(root)
        if path == THIS or is_fixture_data(relative) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary: no prose to cite from
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_DOCUMENTS.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_no_file_cites_documents_outside_the_repository():
    """Code, tests and docs state their rules or point at the repository's READMEs."""
    found = citations(tracked_files())
    assert not found, "cites a document a clone does not have:\n" + "\n".join(found)


def test_the_citation_check_sees_each_kind_of_citation(tmp_path):
    """The patterns catch what the sweep removed, and leave a repository path alone."""
    cited = ["# the session object (§10.2)", "# see spec §6.5", "# hermes-real-server.md",
             "# spec `github.md`", "# house style (STYLE.md)", "# ../shared/oracle",
             "# spec/chat.md", "# hermes-runs.md", "# emulator-runtime.md", "# seeds/003"]
    fine = ["# see emulators/README.md, \"Standard admin routes\"", "# as Hermes 0.19.0 answers"]
    source = tmp_path / "module.py"
    source.write_text("\n".join(cited + fine) + "\n")
    assert [entry.split(": ", 1)[1] for entry in citations([source], tmp_path)] == cited
