"""No issue numbers in the code, the tests or the manuals; they belong in commit messages.

A reference is ``issue`` (or ``issues``, ``PR``) followed by ``#`` and digits, or a bare
``#`` and one or two digits standing alone in prose (``(#NN)``, ``issues #NN and
#NN``).
Not references: colours (``#fff``, ``#1f77b4``, three or more digits), Markdown
headings (``## Title``), HTML character references (``&#38;``), URL fragments
(``page#12``) and comments (``# 1``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_NAMED = re.compile(r"\b(?:issues?|pull\s+requests?|PRs?)\s+#\d+", re.IGNORECASE)
_BARE = re.compile(r"(?<![\w&#/$\\])#[1-9]\d?(?![\w#-])")
_SUFFIXES = {".py", ".md", ".rst", ".txt", ".yaml", ".yml", ".toml", ".cfg", ".smk"}

#: the manuals: everything under docs/ and the user documents outside it
MANUALS = (
    "docs",
    "*.md",
    "config/README.md",
    "profiles/README.md",
    "results/README.md",
)
#: the code and the tests
CODE = ("src", "tests")


def references(text: str) -> list[tuple[int, str]]:
    """(line number, reference) of every issue reference in ``text``."""
    found = []
    for pattern in (_NAMED, _BARE):
        for m in pattern.finditer(text):
            found.append((text.count("\n", 0, m.start()) + 1, m.group(0)))
    return sorted(set(found))


def _files(patterns) -> list[Path]:
    out = set()
    for pattern in patterns:
        path = ROOT / pattern
        if path.is_dir():
            candidates = path.rglob("*")
        elif "*" in pattern:
            candidates = ROOT.glob(pattern)
        else:
            candidates = [path]
        out |= {
            p
            for p in candidates
            if p.is_file()
            and p.suffix in _SUFFIXES
            and not {"_build", "__pycache__", "gallery"} & set(p.parts)
        }
    return sorted(out)


def _offenders(patterns) -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in _files(patterns):
        found = references(path.read_text(encoding="utf-8", errors="replace"))
        if found:
            out[path.relative_to(ROOT).as_posix()] = found
    return out


def test_the_manuals_name_no_issue():
    assert len(_files(MANUALS)) > 20  # docs/ and the top-level manuals were found
    assert _offenders(MANUALS) == {}


def test_the_code_and_the_tests_name_no_issue():
    assert len(_files(CODE)) > 100  # src/ and tests/ were found
    assert _offenders(CODE) == {}, "issue numbers belong in commit messages"


def test_what_counts_as_a_reference():
    hash_ = "#"  # written apart, so that this file holds no reference itself

    def found(text):
        return {r for _, r in references(text)}

    assert found(f"see issue {hash_}31, item 2") == {f"issue {hash_}31", f"{hash_}31"}
    assert found(f"issues {hash_}29 and {hash_}33") == {
        f"issues {hash_}29",
        f"{hash_}29",
        f"{hash_}33",
    }
    assert references(f"a section (from {hash_}19)\nnext") == [(1, f"{hash_}19")]
    assert found(f"as in {hash_}14.") == {f"{hash_}14"}
    assert references(f"line one\nIssue {hash_}7's run") == [
        (2, f"{hash_}7"),
        (2, f"Issue {hash_}7"),
    ]
    for fine in (
        f"color: {hash_}fff; stroke {hash_}1f77b4 and {hash_}000 or {hash_}123",
        f"{hash_}{hash_} A heading\n{hash_} 1 comment",
        f"&{hash_}38; page{hash_}12 docs/x.md{hash_}12 $#",
        f"{hash_}0 and {hash_}12-",
    ):
        assert references(fine) == [], fine
