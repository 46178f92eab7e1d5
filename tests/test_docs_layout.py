"""The documentation site's layout: a column wide enough for the two
install-and-run commands and the wide tables, and real gallery thumbnails.

Checked on the sources (docs/conf.py, the stylesheet, the examples), without
building the site: CI's Sphinx build (-W) checks that it builds.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"


def _conf() -> dict:
    """The literal settings of docs/conf.py (its top-level assignments)."""
    out = {}
    for node in ast.parse((DOCS / "conf.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    out[target.id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
    return out


def _px(css_width: str) -> float:
    """The widest a CSS width may get on a large screen: min(A px, B vw) -> A."""
    return max(float(x) for x in re.findall(r"(\d+(?:\.\d+)?)px", css_width))


def _longest_command() -> int:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL).group(1)
    return max(len(ln) for ln in block.splitlines() if not ln.startswith("#"))


def test_the_column_fits_the_readme_commands():
    conf = _conf()
    assert conf["html_theme"] == "alabaster"
    options = conf["html_theme_options"]
    assert options["body_max_width"] == "none"
    page = _px(options["page_width"])
    css = (DOCS / "_static" / "wide.css").read_text(encoding="utf-8")
    assert (
        "wide.css" in conf["html_css_files"] and "_static" in conf["html_static_path"]
    )
    assert (
        _px(re.search(r"div\.document\s*{\s*width:\s*([^;]+);", css).group(1)) == page
    )
    # alabaster's sidebar (220 px) and gutters (about 60 px) leave the body; a
    # character of its 0.9 em monospace at 17 px is about 9.2 px wide
    body = page - 220 - 60
    assert body >= 1000
    assert "white-space: pre-wrap" in css  # what is longer still wraps, not scrolls
    assert _longest_command() * 9.2 > 940 - 280  # alabaster's default did not fit
    assert re.search(r"table\.docutils\s*{[^}]*overflow-x:\s*auto", css)


@pytest.mark.parametrize("script", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.stem)
def test_every_gallery_example_has_a_real_thumbnail(script):
    """An example either draws a figure (sphinx-gallery's thumbnail) or names a
    committed PNG: no placeholder thumbnail."""
    text = script.read_text(encoding="utf-8")
    m = re.search(r'^# sphinx_gallery_thumbnail_path = "([^"]+)"$', text, re.MULTILINE)
    if m is None:
        assert "plt.subplots(" in text or "plt.figure(" in text, script.name
        return
    png = (DOCS / m.group(1)).resolve()
    assert png.suffix == ".png" and png.is_file(), png
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
