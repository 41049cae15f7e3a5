"""The READMEs stand on their own in a user's clone: no link or path leads outside it."""
import re
from pathlib import Path

from testkit.shell import readmes

REPO = Path(__file__).resolve().parent.parent
READMES = [REPO / readme for readme in readmes()]

MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)[^)]*\)|`(\.\./[^`]*)`")


def test_no_readme_points_outside_the_repository():
    """A user's clone has nothing beside the repository: every relative link or path stays in."""
    for readme in READMES:
        text = readme.read_text()
        for match in MARKDOWN_LINK.finditer(text):
            target = match.group(1) or match.group(2)
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            resolved = (readme.parent / target).resolve()
            assert resolved.is_relative_to(REPO) and resolved.exists(), (readme, target)


def heading_anchors(markdown):
    """The anchors GitHub gives a page's headings (lower case, punctuation dropped, spaces to
    hyphens; code fences skipped)."""
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    headings = re.findall(r"^#+ (.+)$", prose, re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_every_link_to_a_section_finds_it():
    """A manual links to another's section instead of repeating it: the section is there."""
    for readme in READMES:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)#([^)\s]+)\)", readme.read_text()):
            page = (readme.parent / target) if target else readme
            assert anchor in heading_anchors(page.read_text()), (readme, target, anchor)


def test_the_hermes_readme_calls_no_served_route_unserved(tmp_path):
    """Every route of the Hermes README's table answers (none is 404, 405 or 501), also under a
    `/p/<profile>/` mirror, and no sentence of the README says a route it lists is not served."""
    from emulators import load
    from emulators.pytest_plugin import test_app
    readme = (REPO / "emulators" / "hermes" / "README.md").read_text()
    app = test_app(load("hermes"), tmp_path / "e.db")
    table = readme[readme.index("## Routes"):readme.index("Admin controls")]
    routes = re.findall(r"`GET ([^`?\[{]+)[`?\[]", table)
    assert len(routes) >= 8 and "/api/sessions" in routes and "/v1/skills" in routes
    for route in routes:
        for path in (route, "/p/default" + route):
            assert app.get(path, status="*").status_int == 200, path
    sentences = re.split(r"(?<=[.;:])\s", " ".join(readme.split()))
    for sentence in sentences:
        if re.search(r"\bnot (served|supported|implemented)\b", sentence):
            for named in re.findall(r"`(/[^`\s]*)`", sentence):
                assert not any(named.startswith(r) for r in routes), (named, sentence)


def test_commands_in_the_readmes_name_the_venv():
    """A fresh clone's `python` is not the venv (`No module named 'falcon'`): every command a
    README shows runs the venv's interpreter or console script."""
    bare = re.compile(r"(?<![\w/.-])(python -m |gunicorn (-c|wsgi))|(?<![\w/.-])(?<!-m )"
                      r"emulators serve")
    for readme in READMES:
        for number, line in enumerate(readme.read_text().splitlines(), 1):
            assert not bare.search(line), f"{readme.relative_to(REPO)}:{number}: {line}"
