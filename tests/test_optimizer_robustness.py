"""investigations/optimizer_robustness.py on small real fit results."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from _scripts import load_script
from tcca_core.pipeline.rows import bundle_run
from tcca_core.protocol import make_splits, run_method

CELL = "toy/s1/tcca"


@pytest.fixture(scope="module")
def robust():
    return load_script("investigations/optimizer_robustness.py")


def _fits(make_views, **params) -> pd.DataFrame:
    views, y = make_views(n=120, dims=(6, 7, 8), n_classes=3, seed=7)
    splits = make_splits(y, n_labeled=30, n_splits=2, seed=0)
    grid = {"eps": [1e-2], "max_iter": 30, "tol": 1e-4, **params}
    r_grid = grid.pop("r_grid", [2, 3, 4])
    return pd.concat(
        [run_method(views, y, s, "tcca", r_grid=r_grid, params=grid) for s in splits],
        ignore_index=True,
    )


def _write(folder: Path, df: pd.DataFrame) -> None:
    out = folder / "fits" / CELL
    out.mkdir(parents=True)
    df.to_csv(out / "splitall.csv", index=False)


def test_variants_side_by_side(tmp_path, make_views, robust):
    published = tmp_path / "results"
    base = _fits(make_views)
    _write(published, base)
    # another grid: the shared ranks are fitted alone, so they are identical
    _write(published / "other_grid", _fits(make_views, r_grid=[3, 5]))
    # a variant whose accuracies are shifted on purpose
    shifted = base.copy()
    shifted["test_acc"] = (shifted["test_acc"] - 0.2).clip(lower=0)
    _write(published / "warm_start", shifted)
    table = robust.compare(
        [CELL],
        published,
        {v: published / v for v in ("warm_start", "more_starts", "other_grid")},
    )
    row = table.iloc[0]
    # r = 3 is shared; selection over {3, 5} is that of another candidate set
    assert row[robust.VARIANTS["other_grid"]].startswith("0 of 1 shared ranks differ; ")
    assert row["n_init = 10"] == "not run"
    assert "(beyond noise)" in row[robust.VARIANTS["warm_start"]]
    cols = list(robust.VARIANTS.values())
    lines = robust.summary_lines(table, cols)
    assert "Cells with every variant run: 0 of 1." in lines  # n_init not run
    assert "beyond noise: 1; largest change: -" in lines
    assert "Other r grid, ranks fitted alone: 0 of 1 shared ranks differ." in lines
    assert "warm-started rank paths" not in lines
    # the shifted variant is not identical to the published fits; a copy would be
    assert "identical to the published fits at every rank: 0 of 1" in lines
    # the variant's own option in its params does not keep its rows apart
    restarted = base.assign(
        params=base["params"].map(lambda p: json.dumps({**json.loads(p), "n_init": 10}))
    )
    _write(published / "more_starts", restarted)
    table = robust.compare(
        [CELL], published, {"more_starts": published / "more_starts"}
    )
    lines = robust.summary_lines(table, [robust.VARIANTS["more_starts"]])
    assert (
        "identical to the published fits at every rank: 1 of 1 (n_init = 10: 1" in lines
    )
    # a rank whose accuracy changed is counted
    broken = _fits(make_views, r_grid=[3, 5])
    broken.loc[broken["r"] == 3, "test_acc"] += 0.01
    n, bad = robust.differing_ranks(base, broken)
    assert (n, bad) == (1, 1)
    # one row per learner parameter (kNN's k): rows are told apart by it
    per_k = pd.concat([base.assign(k=1, gamma=None), base.assign(k=3, gamma=None)])
    changed = per_k.copy()
    changed.loc[(changed["k"] == 3) & (changed["r"] == 4), "test_acc"] += 0.01
    assert robust.differing_ranks(per_k, per_k) == (3, 0)
    assert robust.differing_ranks(per_k, changed) == (3, 1)


def test_a_rank_path_may_differ_at_a_shared_rank(tmp_path, make_views, robust):
    """A warm-started rank path's shared ranks depend on the ranks before them: they
    are counted apart, with the largest change of a shared rank's mean accuracy."""
    published = tmp_path / "results"
    base = _fits(make_views, warm_start=True)
    from _common import path_fitted

    assert path_fitted(base) and not path_fitted(_fits(make_views))
    other = _fits(make_views, warm_start=True, r_grid=[3, 5])
    # r = 3 is shared; move its accuracy in one split by 0.2 (a mean change of 0.1)
    first = other.index[(other["r"] == 3) & (other["split"] == other["split"].min())]
    other.loc[first, "test_acc"] += 0.2
    _write(published, base)
    _write(published / "other_grid", other)
    table = robust.compare([CELL], published, {"other_grid": published / "other_grid"})
    assert table.attrs["ranks"]["alone"] == (0, 0, 0.0, "")
    n, bad, largest, at = table.attrs["ranks"]["path"]
    assert at.endswith(", r = 3")
    assert (n, bad) == (1, 1)
    assert largest == pytest.approx(100 * 0.2 / base["split"].nunique())
    lines = robust.summary_lines(table, [robust.VARIANTS["other_grid"]])
    assert "ranks fitted alone" not in lines
    assert "Other r grid, warm-started rank paths: 1 of 1 shared ranks differ" in lines
    assert f"points ({table['cell'].iloc[0]}, r = 3)." in lines
    from _common import facts_of

    facts = facts_of("optimizer_robustness", lines)
    assert facts["other_grid_path_differ"] == "1"
    assert facts["other_grid_path_shared"] == "1"
    assert float(facts["other_grid_path_largest"]) == pytest.approx(largest, abs=0.005)
    assert facts["other_grid_path_largest_r"] == "3"


def test_same_grid_and_every_published_cell(tmp_path, make_views, robust):
    published = tmp_path / "results"
    base = _fits(make_views)
    _write(published, base)
    # a setting with its own r grid: the overlay leaves it unchanged, and says so
    _write(published / "other_grid", base)
    table = robust.compare([CELL], published, {"other_grid": published / "other_grid"})
    assert (
        table.iloc[0][robust.VARIANTS["other_grid"]] == "same grid (the setting's own)"
    )
    # known from the configuration and the overlay, it needs no refit
    config, overlay = tmp_path / "config.yaml", tmp_path / "overlay.yaml"
    setting = "{learner: knn, methods: {tcca: {eps: [0.01]}}"
    config.write_text(
        "datasets:\n  mfeat:\n    settings:\n"
        f"      s1: {setting}, r_grid: [2, 3, 4]}}\n      s2: {setting}}}\n"
        "tables: {}\n"
    )
    overlay.write_text("r_grid: [3, 5]\n")
    assert robust.grid_unchanged(config, overlay) == {"mfeat/s1"}
    overlay.write_text(
        "r_grid: [3, 5]\ndatasets: {mfeat: {settings: {s1: {r_grid: [4]}}}}\n"
    )
    assert robust.grid_unchanged(config, overlay) == set()
    table = robust.compare(
        [CELL], published, {"other_grid": tmp_path / "none"}, {"toy/s1"}
    )
    assert (
        table.iloc[0][robust.VARIANTS["other_grid"]] == "same grid (the setting's own)"
    )
    assert "Cells with every variant run: 1 of 1." in robust.summary_lines(
        table, [robust.VARIANTS["other_grid"]]
    )
    # without cells named, the script lists every published TCCA/KTCCA cell,
    # and names those whose variants are missing
    kernel = published / "fits" / "toy" / "s2" / "ktcca"
    kernel.mkdir(parents=True)
    base.assign(method="ktcca").to_csv(kernel / "splitall.csv", index=False)
    (published / "fits" / "toy" / "s2" / "cca_bst").mkdir()
    assert robust.published_cells(published) == ["toy/s1/tcca", "toy/s2/ktcca"]
    out = tmp_path / "robust.md"
    robust.main(["--published", str(published), "--out", str(out)])
    text = out.read_text()
    assert "Cells with every variant run: 0 of 2." in text
    assert "toy s2: KTCCA" in text.split("Not (fully) rerun:")[1]


def _rows(acc: dict, method: str = "tcca") -> pd.DataFrame:
    """Synthetic fit rows: {(split, r): (val_acc, test_acc)}, one eps, RLS's gamma."""
    return pd.DataFrame(
        [
            {"method": method, "learner": "rls", "split": s, "r": r, "eps": 0.01,
             "k": None, "gamma": 1.0, "lambda1": None, "lambda2": None,
             "view": None, "pair": None, "params": "{}", "val_acc": v, "test_acc": t}
            for (s, r), (v, t) in acc.items()
        ]
    )  # fmt: skip


def test_off_grid_ranks(tmp_path, robust):
    # published ranks 5, 10, 15; the other grid 7, 10, 13 (7 and 13 off the grid)
    test = {5: [0.60, 0.62, 0.64], 10: [0.70, 0.70, 0.73], 15: [0.66, 0.65, 0.67]}
    val = {5: [0.5, 0.5, 0.5], 10: [0.8, 0.8, 0.8], 15: [0.6, 0.6, 0.6]}
    # 7: between its neighbours (in line); 13: far above both, and split 0's pick
    test_other = {7: [0.65, 0.66, 0.68], 10: test[10], 13: [0.95, 0.96, 0.97]}
    val_other = {7: [0.6, 0.6, 0.6], 10: val[10], 13: [0.9, 0.7, 0.7]}
    base = _rows({(s, r): (val[r][s], test[r][s]) for r in test for s in range(3)})
    other = _rows(
        {
            (s, r): (val_other[r][s], test_other[r][s])
            for r in test_other
            for s in range(3)
        }
    )
    found = robust.off_grid(base, other)
    assert found["ranks"] == [7, 13]
    p7, p13 = found["points"]
    assert p7["in_line"] and not p13["in_line"]
    assert p7["neighbours"] == pytest.approx({5: 62.0, 10: 71.0})
    assert p13["neighbours"] == pytest.approx({10: 71.0, 15: 66.0})
    # tolerance: the largest sample std over the splits of the rank and its neighbours
    stds = [pd.Series(v).std(ddof=1) for v in (test[10], test[15], test_other[13])]
    assert p13["tolerance"] == pytest.approx(100 * max(stds))
    assert p13["mean"] == pytest.approx(96.0)
    # selected on 5, 10, 15 plus 7 and 13: split 0 picks 13, the others keep 10
    mean, std, picks = found["selected"]
    assert picks == [13, 10, 10]
    chosen = pd.Series([0.95, 0.70, 0.73])
    assert mean == pytest.approx(100 * chosen.mean())
    assert std == pytest.approx(100 * chosen.std(ddof=1))
    # in the table and its summary lines
    published = tmp_path / "results"
    _write(published, base)
    _write(published / "other_grid", other)
    table = robust.compare([CELL], published, {"other_grid": published / "other_grid"})
    row = table.iloc[0]
    assert row[robust.VARIANTS["other_grid"]].startswith("0 of 1 shared ranks differ")
    assert "r = 13, 10, 10; out of line: r = 13" in row[robust.OFF_GRID]
    lines = robust.summary_lines(table, [robust.VARIANTS["other_grid"]])
    assert "Off-grid ranks (7, 13): 1 of 2 cell ranks out of line" in lines
    assert "picked on validation in 1 of 3 splits" in lines
    # the prose's numbers are read back from these lines, each found once
    from _common import facts_of

    facts = facts_of("optimizer_robustness", lines)
    assert facts["other_grid_differ"] == "0"
    # the same grid: no off-grid ranks, no off-grid line
    assert robust.off_grid(base, base)["selected"] is None


def test_a_clone_reads_the_committed_rows(tmp_path, robust):
    """Without fit files (a clone, rows/ only): the published cells and every run's
    rows are the committed rows', and the table is the one the fit files gave."""
    published = tmp_path / "results"
    acc = {(s, r): (0.5 + r / 100 + s / 1000, 0.6 + r / 100)
           for s in range(3) for r in (5, 10, 15)}  # fmt: skip
    base = _rows(acc)
    _write(published, base)
    _write(published / "warm_start", base.assign(test_acc=base["test_acc"] - 0.2))
    for cell, method in (("toy/s2/ktcca", "ktcca"), ("toy/s2/cca_bst", "cca_bst")):
        (published / "fits" / cell).mkdir(parents=True)
        base.assign(method=method).to_csv(
            published / "fits" / cell / "splitall.csv", index=False
        )
    variants = {"warm_start": published / "warm_start"}
    cells = robust.published_cells(published)
    table = robust.compare(cells, published, variants)
    for folder in (published, published / "warm_start"):
        bundle_run(folder)
        shutil.rmtree(folder / "fits")
    assert robust.published_cells(published) == cells
    assert cells == ["toy/s1/tcca", "toy/s2/ktcca"]
    pd.testing.assert_frame_equal(robust.compare(cells, published, variants), table)
    assert "(beyond noise)" in table.iloc[0][robust.VARIANTS["warm_start"]]


def test_other_grid_overlay_holds_off_grid_ranks(robust):
    from tcca_core.registry import R_GRID_PAPER

    overlay = robust.ROOT / "investigations" / "configs" / "other_grid.yaml"
    text = robust.grid_text(overlay)
    grid = [int(r) for r in text.split(": ")[1].split(";")[0].split(", ")]
    off = [r for r in grid if r not in R_GRID_PAPER]
    shared = [r for r in grid if r in R_GRID_PAPER]
    # ranks off the paper's grid, and shared ones, at both ends of it
    assert len(off) >= 3 and min(off) < 10 and max(off) > 200
    assert len(shared) >= 3
    assert text.endswith(f"off the paper's grid: {', '.join(map(str, off))}.")
