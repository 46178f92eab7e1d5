"""results/README.md says what the committed results hold and what the check covers.

Its claims are checked against the repository: which investigation outputs
``check_published`` recomputes (:data:`tcca_core.pipeline.published.INVESTIGATIONS`)
and which of the outputs REPRODUCTION.md includes it leaves out; and that rows the
README describes as missing are not committed.
"""

from __future__ import annotations

import re
from pathlib import Path

from tcca_core.pipeline.published import INVESTIGATIONS, RUNS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "results" / "README.md"


def _included() -> set[str]:
    text = (ROOT / "docs" / "investigations.md").read_text()
    return set(re.findall(r"<!-- include: investigations/results/(\w+)\.md -->", text))


def _section(title: str) -> str:
    text = README.read_text()
    start = text.index(title)
    end = text.find("\n## ", start + 3)
    return text[start : end if end > 0 else None]


def test_the_check_names_exactly_what_it_recomputes_and_what_it_does_not():
    part = _section("## Recomputing the published tables")
    listed = re.search(r"built from run rows \((.*?)\)", " ".join(part.split()))
    recomputed = set(
        re.findall(r"`(?:investigations/results/)?(\w+)\.json`", listed[1])
    )
    assert recomputed == set(INVESTIGATIONS)
    rest = part[part.index("What it does not recompute") :].split("\n\n")[0]
    left_out = set(re.findall(r"`(?:investigations/results/)?(\w+)`", rest))
    assert left_out == _included() - set(INVESTIGATIONS)


def test_the_runs_with_committed_rows_are_the_published_ones():
    table = README.read_text().split("## Recomputing")[0]
    row = next(
        line for line in table.splitlines() if line.startswith("| `<run>/rows/`")
    )
    assert re.findall(r"`(\w+)`", row.split("|")[2]) == list(RUNS)


def test_no_line_calls_committed_rows_missing():
    committed = sorted((ROOT / "results" / "rows").rglob("*.csv.gz"))
    assert committed
    assert "No rows are committed" not in README.read_text()
