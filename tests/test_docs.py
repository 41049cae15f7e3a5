"""The READMEs stand on their own in a user's clone: no link or path leads outside it."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

MARKDOWN_LINK = re.compile(r"\]\(([^)#\s]+)[^)]*\)|`(\.\./[^`]*)`")


def test_no_readme_points_outside_the_repository():
    """A user's clone has nothing beside the repository: every relative link or path stays in."""
    for readme in [REPO / "README.md", *sorted((REPO / "emulators").rglob("README.md"))]:
        text = readme.read_text()
        for match in MARKDOWN_LINK.finditer(text):
            target = match.group(1) or match.group(2)
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            resolved = (readme.parent / target).resolve()
            assert resolved.is_relative_to(REPO) and resolved.exists(), (readme, target)
