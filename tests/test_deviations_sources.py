"""The numbers docs/deviations.md quotes agree with the outputs they come from.

docs/deviations.md is written by hand (it is the record REPRODUCTION.md indexes), so
its measured effects can go stale when a result is remade. Each entry below that
quotes a measurement is rebuilt here from its source (``results/summary.json``,
``investigations/results/*.json``) and must appear in the entry as written; and
every "mean ± std" anywhere in the record must be one that a committed output shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tcca_core.reporting import format_pm
from tcca_core.reproduction import record

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "docs" / "deviations.md"


def _entry(entry_id: str) -> str:
    for e in record.parse(RECORD.read_text()):
        if e["id"] == entry_id:
            return " ".join([e["title"], *e["bullets"].values()])
    raise AssertionError(f"{entry_id} is not in the record")


def _open_items() -> list[str]:
    text = RECORD.read_text()
    part = text[text.index("## Open items") :]
    part = part[: part.index("\n## ", 3)]
    return [" ".join(i.split()) for i in re.split(r"\n- ", part)[1:]]


def _data(stem: str) -> dict:
    return json.loads(
        (ROOT / "investigations" / "results" / f"{stem}.json").read_text()
    )


def _rows(table: dict) -> list[dict]:
    return [dict(zip(table["columns"], r, strict=True)) for r in table["rows"]]


def _published(table: str, setting: str, method: str) -> str:
    summary = json.loads((ROOT / "results" / "summary.json").read_text())
    t = summary["tables"][table]
    label = next(c["label"] for c in t["columns"] if c["setting"] == setting)
    rec = next(
        r
        for r in t["accuracy"]["val"]
        if r["column"] == label and r["method"] == method
    )
    return format_pm(rec["mean"], rec["std"])


def test_d10_other_grid_numbers_are_the_investigations():
    data = _data("optimizer_robustness")
    facts = data["facts"]
    (table,) = data["tables"]
    column = next(c for c in table["columns"] if "r grid" in c)
    row = next(r for r in _rows(table) if r["cell"] == "secstr 84k: TCCA")
    selected = re.search(r"selected (\S+ ± \S+)", row[column]).group(1)
    text = _entry("D-10")
    assert (
        f"{selected} against the published {_published('secstr', '84k', 'tcca')}"
        in text
    )
    shared = (
        f"{facts['other_grid_path_differ']} of the {facts['other_grid_path_shared']}"
    )
    assert shared in text
    assert f"{facts['other_grid_differ']} of {facts['other_grid_shared']}" in text


def test_d12_equal_tunings_moves_are_the_investigations():
    rows = _rows(_data("equal_tuning")["tables"][0])
    change = {(r["cell"], r["method"]): r["change"] for r in rows}
    tcca = [
        change[c, "TCCA"]
        for c in (
            "secstr #unlabeled = 84K",
            "secstr #unlabeled = 1.3M",
            "ads #labeled = 100",
        )
    ]
    family = [
        float(v)
        for (c, m), v in change.items()
        if m in ("CCA (BST)", "CCA (AVG)", "CCA-LS")
    ]
    expected = (
        f"TCCA by {tcca[0]} (SecStr 84K), {tcca[1]} (1.3M) and {tcca[2]} (Ads) points, "
        f"the CCA family by {min(family):+.2f} to {max(family):+.2f}"
    )
    assert expected in _entry("D-12")


def test_d27_rerun_counts_are_the_investigations():
    data = _data("grid_rerun")
    rows = _rows(data["tables"][0])
    noise = sum(r["verdict"] == "within noise" for r in rows)
    facts = data["facts"]
    assert int(facts["identical"]) + noise == int(facts["cells"]) == len(rows)
    expected = (
        f"left {facts['identical']} of {facts['cells']} cells identical and moved "
        f"{noise} within noise"
    )
    assert expected in _entry("D-27")


def test_open_items_do_not_call_a_run_output_missing():
    tables = _data("equal_tuning")["tables"]
    draws = [t for t in tables if "30 draws" in t["heading"]]
    (item,) = [i for i in _open_items() if i.startswith("D-35")]
    if not draws:
        pytest.skip("equal tuning over 30 draws has not run")
    assert "has not run" not in item
    ads = [r for r in _rows(draws[0]) if r["cell"].startswith("ads")]
    if all(r["after Holm"] == "not resolved" for r in ads):
        assert "is not resolved after Holm's adjustment" in item


def test_every_mean_and_std_of_the_record_is_in_a_committed_output():
    sources = [ROOT / "REPRODUCTION.md", ROOT / "BENCHMARKS.md"]
    sources += sorted((ROOT / "investigations" / "results").glob("*.md"))
    shown = "\n".join(p.read_text() for p in sources)
    quoted = set(re.findall(r"\d+\.\d+ ± \d+\.\d+", RECORD.read_text()))
    assert quoted
    assert not sorted(q for q in quoted if q not in shown)
