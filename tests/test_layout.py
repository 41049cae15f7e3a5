"""A README's layout table is the tree as it is (the top README for the chat's side, the
emulators' READMEs for emulators/): every folder it names exists and every folder
under the roots it covers is named; every file of a folder is named in its row, and every module
a row names is in that folder. Written for any README whose table has a backticked path in its
first cell, so other parts (emulators/) can hold their own tables to the same rule."""
import re

from tests.test_layering import REPO

SKIPPED_FOLDERS = {"__pycache__", "data"}  # bytecode; the chat's runtime data (git-ignored)
ROW = re.compile(r"^\| `([^`]+/)` \| (.*) \|$")


def layout_table(readme, heading):
    """{folder: description} from the table under `heading` (a whole markdown heading line)."""
    text = readme.read_text()
    assert f"\n{heading}\n" in text, f"{readme.name} has no {heading!r}"
    section = text.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]
    return {m.group(1): m.group(2) for m in map(ROW.match, section.splitlines()) if m}


def folders_under(root):
    """`root/` and every folder below it, as `path/` relative to the repository."""
    found = {f"{root}/"}
    for path in (REPO / root).rglob("*"):
        relative = path.relative_to(REPO)
        if path.is_dir() and not SKIPPED_FOLDERS & set(relative.parts) and \
                not any(part.startswith(".") for part in relative.parts):
            found.add(f"{relative}/")
    return found


def table_problems(readme, heading, roots, listed_elsewhere=()):
    """What keeps the table under `heading` from describing the folders under `roots`. A folder
    under `listed_elsewhere` needs only its row: another manual's table names its files."""
    rows = layout_table(readme, heading)
    problems = [f"the table names {folder}, which is not a folder" for folder in rows
                if not (REPO / folder).is_dir()]
    covered = {folder for folder in rows
               if any(f"{folder}".startswith(f"{root}/") for root in roots)}
    actual = set().union(*(folders_under(root) for root in roots))
    problems += [f"{folder} is not in the table" for folder in sorted(actual - covered)]
    for folder, text in rows.items():
        if not (REPO / folder).is_dir() or folder.startswith(tuple(listed_elsewhere)):
            continue
        named = set(re.findall(r"`([^`/\s]+)`", text))
        files = {p.name for p in (REPO / folder).iterdir()
                 if p.is_file() and p.name != "__init__.py" and not p.name.startswith(".")
                 and p.suffix != ".pyc"}
        problems += [f"{folder}{name} is not named in its row" for name in sorted(files - named)]
        problems += [f"{folder} names {name}, which is not in it" for name in sorted(named)
                     if re.fullmatch(r"[a-z_]+\.py", name) and name not in files]
    return problems


def test_the_readme_layout_table_is_the_chat_sides_tree():
    assert table_problems(REPO / "README.md", "## Where things are",
                          ("spaces", "scripts", "cron", "deploy", "testkit")) == []


def test_the_emulators_layout_tables_are_their_trees():
    emulators = REPO / "emulators"
    # The services with a manual of their own list their files there, not twice.
    assert table_problems(emulators / "README.md", "## Layout", ("emulators",),
                          listed_elsewhere=("emulators/hermes/", "emulators/github/")) == []
    assert table_problems(emulators / "hermes" / "README.md", "## Layout",
                          ("emulators/hermes",)) == []
    assert table_problems(emulators / "github" / "README.md", "## Files",
                          ("emulators/github",)) == []


def test_every_emulator_package_is_a_row_of_the_emulators_table():
    rows = layout_table(REPO / "emulators" / "README.md", "## Layout")
    packages = {f"{path.parent.relative_to(REPO)}/" for path in
                (REPO / "emulators").rglob("__init__.py")}
    assert packages == set(rows)


def test_the_layout_check_sees_a_missing_package_an_unlisted_one_and_a_stray_module(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# A project\n\n## Where\n\n| folder | what |\n|---|---|\n"
                      "| `spaces/` | `worker.py` |\n"
                      "| `spaces/newos4/gone/` | a package that was moved away |\n"
                      "| `cron/` | `relay.py`, `sweep.py` |\n\n## Next\n")
    problems = table_problems(readme, "## Where", ("spaces", "cron"))
    assert "the table names spaces/newos4/gone/, which is not a folder" in problems
    assert "spaces/newos4/relay/ is not in the table" in problems
    assert "spaces/newos4/app.py is not named in its row" not in problems  # (folder unnamed)
    assert "cron/ names sweep.py, which is not in it" in problems
    elsewhere = table_problems(readme, "## Where", ("spaces", "cron"), listed_elsewhere=("cron/",))
    assert "cron/ names sweep.py, which is not in it" not in elsewhere
    assert "spaces/newos4/relay/ is not in the table" in elsewhere
    deeper = table_problems(readme, "## Where", ("spaces/newos4",))
    assert "spaces/newos4/relay/ is not in the table" in deeper
