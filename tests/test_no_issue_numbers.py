"""No issue numbers in the code, the tests or the manuals; they belong in commit messages.

The code is the library and its tests, and also the benchmarks, the investigations'
scripts and overlays, the examples, the workflow, the CI scripts and the packaging;
not ``investigations/results/``, published outputs that stay as they were written.

A reference is ``issue`` (or ``issues``, ``PR``) followed by ``#`` and digits, or a bare
``#`` and one or two digits standing alone in prose (``(#NN)``, ``issues #NN and
#NN``).
Not references: colours (``#fff``, ``#1f77b4``, three or more digits), Markdown
headings (``## Title``), HTML character references (``&#38;``), URL fragments
(``page#12``), comments (``# 1``) and file names (``engines_issue31.csv``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_NAMED = re.compile(r"\b(?:issues?|pull\s+requests?|PRs?)\s+#\d+", re.IGNORECASE)
_BARE = re.compile(r"(?<![\w&#/$\\])#[1-9]\d?(?![\w#-])")
_SUFFIXES = {
    ".py",
    ".md",
    ".rst",
    ".txt",
    ".yaml",
    ".yml",
    ".toml",
    ".cfg",
    ".smk",
    ".sh",
}

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
#: the rest of the code: scripts, overlays, the workflow, CI and packaging (files
#: named here are read whatever their suffix: ``Snakefile``, ``.ci/run``)
SCRIPTS = (
    "benchmarks",
    "investigations/*.py",
    "investigations/configs",
    "examples",
    "workflow",
    "workflow/Snakefile",
    "ci",
    ".ci/run",
    ".test",
    "pyproject.toml",
)


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
            if path.is_file():  # named: read whatever its suffix
                out.add(path)
            continue
        out |= {
            p
            for p in candidates
            if p.is_file()
            and p.suffix in _SUFFIXES
            and not {"_build", "__pycache__", "gallery"} & set(p.parts)
            and not _published(p)
        }
    return sorted(out)


def _published(path: Path) -> bool:
    """Tell whether ``path`` is a published output (``<scripts>/results/...``)."""
    parts = path.relative_to(ROOT).parts
    return (
        len(parts) > 2
        and parts[0] in ("benchmarks", "investigations")
        and (parts[1] == "results")
    )


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


def test_the_scripts_and_the_workflow_name_no_issue():
    files = {p.relative_to(ROOT).as_posix() for p in _files(SCRIPTS)}
    for named in ("workflow/Snakefile", ".ci/run", "pyproject.toml"):
        assert named in files
    assert any(f.startswith("benchmarks/") for f in files)
    assert any(f.startswith("investigations/configs/") for f in files)
    assert not any(f.startswith("investigations/results/") for f in files)
    assert _offenders(SCRIPTS) == {}, "issue numbers belong in commit messages"


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
        "--out benchmarks/results/engines_issue31.csv",
    ):
        assert references(fine) == [], fine
