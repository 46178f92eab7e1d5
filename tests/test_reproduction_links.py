"""Every link of the committed REPRODUCTION.md leads somewhere on GitHub.

REPRODUCTION.md is read in two places: on GitHub, where a relative link is read
from the repository's root (the file's folder), and in the documentation site,
where docs/conf.py resolves the links of the included file the same way (the
Sphinx build with -W fails on one it cannot resolve). This test checks the
GitHub side independently of both generators: each linked file exists, and each
anchor is the GitHub anchor of a heading of the file it names (GitHub's rule:
lower case, punctuation other than "-" and "_" dropped, spaces to "-", a repeated
anchor numbered "-1", "-2", ...).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "REPRODUCTION.md"

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _github_anchors(text: str) -> set[str]:
    """Return the anchors GitHub gives the headings of a Markdown text."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line)
        if fenced or m is None:
            continue
        # inline markup is not part of the anchor: `code`, *emphasis*, [text](url)
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_github_anchors_follow_githubs_rule():
    text = (
        "# A (b), c: d\n```\n# not a heading\n```\n## A (b), c: d\n### `x.py` and *y*\n"
    )
    assert _github_anchors(text) == {"a-b-c-d", "a-b-c-d-1", "xpy-and-y"}


def _links() -> list[str]:
    text = REPORT.read_text(encoding="utf-8")
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_report_has_links_into_the_repository():
    links = _links()
    assert any(t.startswith("docs/deviations.md#") for t in links)
    assert any(t.startswith("#") for t in links)


@pytest.mark.parametrize("target", sorted(set(_links())))
def test_every_link_of_the_report_resolves_on_github(target):
    path, _, anchor = target.partition("#")
    file = (ROOT / path) if path else REPORT
    assert file.is_file(), f"REPRODUCTION.md links to a missing file: {path}"
    if anchor:
        assert file.suffix == ".md", (
            f"an anchor into a file that is not Markdown: {target}"
        )
        anchors = _github_anchors(file.read_text(encoding="utf-8"))
        assert anchor in anchors, f"no heading of {file.name} has the anchor #{anchor}"
