"""REPRODUCTION.md reports the current run; the runs before it are in the record.

What changed between runs of the grid, and their cells before and after, belongs to
docs/history/reproduction.md, which the report links; the report holds the current
numbers, verdicts and evidence only. The committed file is the generator's output
(tests/test_reproduction.py), so these checks hold its sources (the template and
docs/investigations.md) to the same.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "REPRODUCTION.md"
RECORD = ROOT / "docs" / "history" / "reproduction.md"

#: headings of a run's history: a rerun, a comparison with an earlier run, a date
_HISTORY_HEADING = re.compile(
    r"before and after|\brerun\b|\bprevious\b|\bearlier\b|\bhistory\b"
    r"|\b(19|20)\d\d-\d\d\b",
    re.IGNORECASE,
)


def history_in(text: str) -> list[str]:
    """The lines of a report that are a run's history rather than its results."""
    found = []
    for line in text.splitlines():
        if line.startswith("#") and _HISTORY_HEADING.search(line):
            found.append(line)
        elif line.startswith("|"):
            cells = [c.strip().lower() for c in line.strip("|").split("|")]
            if any(c.startswith("before") for c in cells) and any(
                c.startswith("after") for c in cells
            ):  # a before/after table's header
                found.append(line)
        elif "benchmarks/compare_runs.py" in line:  # the tool that compares two runs
            found.append(line)
    return found


def test_history_is_found():
    text = (
        "## Tables\n\n### The rerun: warm paths\n\n#### Tables before and after\n\n"
        "Command: `python benchmarks/compare_runs.py OLD results`\n\n"
        "| table | method | before | after | diff |\n|---|---|---|---|---|\n"
        "## The run of 2026-11-29\n"
    )
    assert len(history_in(text)) == 5
    assert history_in("## Tables\n\n| cell | ours (A) | paper |\n## Claim S1\n") == []


def test_the_report_holds_no_history():
    assert history_in(REPORT.read_text(encoding="utf-8")) == []


def test_the_report_links_the_record_and_the_record_links_back():
    report = REPORT.read_text(encoding="utf-8")
    assert "](docs/history/reproduction.md)" in report
    record = RECORD.read_text(encoding="utf-8")
    assert "](../../REPRODUCTION.md)" in record
    # the record holds what the report does not: a run against the one before
    assert history_in(record)
    assert "history/reproduction" in (ROOT / "docs" / "index.md").read_text()
