"""docs/architecture.md against the tree: what it names exists, and it names every package.

The page is read as text: every file name it gives (``protocol/splits.py``,
``_als.py``, ``workflow/Snakefile``) must be a file of the repository (a name matches
a file whose path ends with it), and every package of ``src/tcca_core`` must be named
as ``name/``. Moving or renaming a module therefore fails here until the page says
where it went.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
SRC = ROOT / "src" / "tcca_core"

#: a file name as the page writes it: path components and a ``.py``/``.smk`` suffix,
#: or the workflow's Snakefile; placeholders (``<name>``) and globs (``*``) are not
#: names of files
_FILE = re.compile(
    r"(?<![\w./<*-])((?:[\w-]+/)*[\w-]+\.(?:py|smk)|(?:[\w-]+/)*Snakefile)\b"
)
_SKIP = {"tcca_core"}  # the import name, not a package of the library's tree


def _repository_files() -> list[str]:
    skip = {
        ".git",
        ".venv",
        "node_modules",
        "_build",
        "build",
        ".cache",
        "results",
        "data",
    }
    return [
        p.relative_to(ROOT).as_posix()
        for p in ROOT.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
    ]


def named_files(text: str) -> set[str]:
    """The file names a page gives (see the module docstring)."""
    return {m.group(1) for m in _FILE.finditer(text)}


def missing_files(text: str, files: list[str]) -> list[str]:
    """The names in ``text`` that match no file of ``files`` (repository paths)."""
    return sorted(
        name
        for name in named_files(text)
        if not any(f == name or f.endswith("/" + name) for f in files)
    )


def packages() -> list[str]:
    """Every package of src/tcca_core, as its path relative to it (``pipeline``)."""
    return sorted(
        p.parent.relative_to(SRC).as_posix()
        for p in SRC.rglob("__init__.py")
        if p.parent != SRC and "__pycache__" not in p.parts
    )


def unnamed_packages(text: str, names: list[str]) -> list[str]:
    """The packages that ``text`` never names as ``name/``."""
    return [n for n in names if not re.search(rf"(?<![\w/]){re.escape(n)}/", text)]


def test_every_file_the_page_names_exists():
    text = PAGE.read_text(encoding="utf-8")
    names = named_files(text)
    # the page names the library's parts file by file: an extraction that finds a
    # handful has lost its pattern, not the page its names
    assert len(names) >= 40, sorted(names)
    assert missing_files(text, _repository_files()) == []


def test_the_page_names_every_package():
    text = PAGE.read_text(encoding="utf-8")
    found = packages()
    assert {"datasets", "pipeline", "protocol", "reporting"} <= set(found)
    assert unnamed_packages(text, found) == []


def test_a_stale_name_and_an_unnamed_package_are_found():
    files = ["src/tcca_core/reporting/tables.py", "src/tcca_core/_als.py"]
    text = (
        "`reporting.py`, `reporting/tables.py` and `_als.py`; rules/*.smk, run_<x>.py"
    )
    assert missing_files(text, files) == ["reporting.py"]
    assert unnamed_packages("the solver/ package", ["solver", "datasets"]) == [
        "datasets"
    ]
    assert unnamed_packages("the datasets/ package", ["sets"]) == ["sets"]


def test_benchmarks_md_is_a_manual():
    """BENCHMARKS.md holds the current numbers, not their history: under 400 lines,
    and no heading carries a date (the record is docs/history/benchmarks.md)."""
    import re

    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 400
    headings = [ln for ln in text.splitlines() if ln.startswith("#")]
    assert not [h for h in headings if re.search(r"\b(19|20)\d\d\b", h)], headings
