"""benchmarks/compare_runs.py on two small synthetic runs' tables."""

from pathlib import Path

import pytest

from _scripts import load_script

HEADER = "Method,#l = 4,#l = 4 r,#l = 4 (paper),#l = 4 diff\n"


@pytest.fixture(scope="module")
def cr():
    return load_script("benchmarks/compare_runs.py")


def _run(folder: Path, rows: str) -> Path:
    (folder / "tables").mkdir(parents=True)
    (folder / "tables" / "t.csv").write_text(HEADER + rows)
    # cost tables are not accuracy tables
    (folder / "tables" / "t_cost.csv").write_text("Method,x\nA,1\n")
    return folder


def test_verdicts(tmp_path, cr):
    before = _run(
        tmp_path / "a",
        "BSF,50.00 ± 1.00,,51.00 ± 1.00,-1.00\n"
        "TCCA,60.00 ± 1.00,5/5,62.00 ± 1.00,-2.00\n"
        "KTCCA,70.00 ± 0.50,5/5,,\n"
        "Post,40.00 ± 1.00,5/5,,\n",
    )
    after = _run(
        tmp_path / "b",
        "BSF,50.00 ± 1.00,,51.00 ± 1.00,-1.00\n"
        "TCCA,61.20 ± 1.30,5/5,62.00 ± 1.00,-0.80\n"
        "KTCCA,71.00 ± 0.40,5/5,,\n",
    )
    table = cr.compare(before, after)
    got = dict(zip(table["method"], table["verdict"], strict=True))
    assert got == {
        "BSF": "identical",
        "TCCA": "within noise",  # 1.2 <= max(1.0, 1.3)
        "KTCCA": "MOVED",  # 1.0 > max(0.5, 0.4)
        "Post": "only before",
    }
    assert table.loc[table["method"] == "TCCA", "diff"].item() == pytest.approx(1.2)
    assert set(table["table"]) == {"t"}  # the cost table is left out
    assert cr.main([str(before), str(after)]) == 1  # a cell MOVED
    assert cr.main([str(before), str(before)]) == 0
    assert cr.main([str(before), str(before), "--strict"]) == 0


def test_parse_cell(cr):
    assert cr.parse_cell("89.57 ± 1.70") == (89.57, 1.70)
    assert all(x != x for x in cr.parse_cell(""))  # NaN
