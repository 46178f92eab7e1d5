"""investigations/equal_tuning.py and variance.py on hand-built fit rows.

The rows are built so that the right answer is known without the scripts: which eps
validation must pick, what the mean over the draws is, and which side of zero a
paired difference lies on.
"""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _scripts import load_script
from tcca_core.pipeline.rows import bundle_run


@pytest.fixture(scope="module")
def equal():
    return load_script("investigations/equal_tuning.py")


@pytest.fixture(scope="module")
def variance():
    return load_script("investigations/variance.py")


def _rows(method, splits, eps, val, test, r_grid=(5, 10)):
    """Fit rows of the pipeline's format: one per split x r, accuracies given."""
    out = []
    for s in splits:
        for r in r_grid:
            v = val(s, r) if callable(val) else val
            t = test(s, r) if callable(test) else test
            out.append(
                {
                    "dataset": "ads", "setting": "l100", "method": method,
                    "learner": "rls", "split": s, "r": r, "eps": eps,
                    "k": np.nan, "lambda1": np.nan, "lambda2": np.nan,
                    "gamma": 1e-2, "params": json.dumps({"eps": eps}),
                    "val_acc": v, "test_acc": t,
                }
            )  # fmt: skip
    return pd.DataFrame(out)


def _write(folder: Path, method: str, df: pd.DataFrame, name="splitall.csv"):
    out = folder / "fits" / "ads" / "l100" / method
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / name, index=False)


def _summary(folder: Path, methods: dict) -> None:
    """A summary.json with the Ads column and one record per method (mean, std)."""
    recs = [
        {
            "column": "#labeled = 100", "method": m, "mean": mean, "std": std,
            "paper_mean": None, "paper_std": None, "setting": "l100",
            "n_splits": 2, "diff": None,
        }
        for m, (mean, std) in methods.items()
    ]  # fmt: skip
    table = {
        "dataset": "ads",
        "columns": [{"label": "#labeled = 100", "paper": "100", "setting": "l100"}],
        "accuracy": {"val": recs},
        "curves": [],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({"tables": {"ads": table}}))


@pytest.fixture
def tuned_run(tmp_path):
    """Published eps = 1e-2 rows and an overlay with eps = 1: validation prefers 1
    for CCA (BST) (test 0.95) and 1e-2 for TCCA (test 0.80)."""
    pub, over = tmp_path / "results", tmp_path / "results" / "equal_tuning"
    splits = [0, 1]
    _write(pub, "cca_bst", _rows("cca_bst", splits, 1e-2, 0.7, 0.75))
    _write(over, "cca_bst", _rows("cca_bst", splits, 1.0, 0.9, 0.95))
    _write(pub, "tcca", _rows("tcca", splits, 1e-2, 0.9, 0.80))
    _write(over, "tcca", _rows("tcca", splits, 1.0, 0.6, 0.99))
    for m in ("cca_avg", "cca_ls"):
        _write(pub, m, _rows(m, splits, 1e-2, 0.5, 0.6))
        _write(over, m, _rows(m, splits, 1.0, 0.4, 0.99))
    _summary(
        pub,
        {"bsf": (70.0, 1.0), "cat": (71.0, 1.0), "cca_bst": (75.0, 0.0),
         "cca_avg": (60.0, 0.0), "cca_ls": (60.0, 0.0), "tcca": (80.0, 0.0)},
    )  # fmt: skip
    return pub, over


def test_equal_tuning_picks_eps_on_validation(tuned_run, equal):
    pub, over = tuned_run
    table, eq, incomplete = equal.build(pub, over)
    row = table.set_index("method")
    # validation picked eps = 1 for CCA (BST): its test accuracy, not the published
    assert row.loc["CCA (BST)", "equal tuning"].startswith("95.00")
    assert row.loc["CCA (BST)", "eps chosen per split"] == "1, 1"
    assert row.loc["CCA (BST)", "change"] == "+20.00"
    # ... and eps = 1e-2 for TCCA although eps = 1 tests better (no peeking)
    assert row.loc["TCCA", "equal tuning"].startswith("80.00")
    assert row.loc["TCCA", "eps chosen per split"] == "0.01, 0.01"
    # untuned methods are the published cells
    assert (
        row.loc["BSF", "equal tuning"] == row.loc["BSF", "paper protocol (eps = 1e-2)"]
    )
    assert incomplete == []
    # the claim checks run on the equal-tuning cells: CCA (BST) 95 > TCCA 80
    verdict = equal.verdicts(json.loads((pub / "summary.json").read_text()), eq)
    best = verdict[verdict["claim (SecStr and Ads)"].str.startswith("TCCA (KTCCA")]
    assert best["paper protocol"].item() == "confirmed"  # TCCA 80 was the best
    assert best["equal tuning"].item() == "not confirmed"
    lines = equal.statements(table)
    assert "CCA (BST) 95.00: -15.00 points" in lines[0]


def test_equal_tuning_refuses_overlap_and_leaves_out_incomplete(tuned_run, equal):
    pub, over = tuned_run
    # TCCA not run in the overlay: the column leaves the verdicts, said so
    for f in (over / "fits" / "ads" / "l100" / "tcca").glob("*.csv"):
        f.unlink()
    table, eq, incomplete = equal.build(pub, over)
    assert table.set_index("method").loc["TCCA", "equal tuning"] == "not run"
    assert incomplete and "TCCA" in incomplete[0]
    assert eq["tables"]["ads"]["accuracy"]["val"] == []
    # the overlay repeating the published eps would count it twice
    _write(over, "tcca", _rows("tcca", [0, 1], 1e-2, 0.9, 0.8))
    with pytest.raises(SystemExit, match="in both runs"):
        equal.build(pub, over)


def _splits_file(folder: Path, n: int, shift: int = 0) -> None:
    splits = [
        {"labeled": [i + shift], "validation": [100 + i], "test": [200 + i],
         "seed": i, "index": i, "fit": None}
        for i in range(n)
    ]  # fmt: skip
    out = folder / "splits" / "ads"
    out.mkdir(parents=True, exist_ok=True)
    (out / "l100.json").write_text(json.dumps({"subset": None, "splits": splits}))


def test_variance_intervals_and_paired_differences(tmp_path, variance):
    pub, draws = tmp_path / "results", tmp_path / "results" / "draws30"
    rng = np.random.default_rng(0)
    base = rng.uniform(0.6, 0.8, size=30)  # a draw's difficulty, shared by methods
    acc = {
        "bsf": base,
        "cat": base + rng.normal(0, 0.005, 30),  # comparable to BSF
        "cca_bst": base + 0.05,  # above everything by 5 points on every draw
        "cca_avg": base + 0.02,
        "cca_ls": base + 0.02,
        "tcca": base + 0.01,
    }
    _splits_file(pub, 5)
    _splits_file(draws, 30)
    for m, a in acc.items():
        _write(pub, m, _rows(m, range(5), 1e-2, 0.5, lambda s, r, a=a: a[s]))
        # the draws run's splits 0-4 are wrong on purpose: they must not be read
        _write(
            draws, m,
            _rows(m, range(30), 1e-2, 0.5, lambda s, r, a=a: 0.0 if s < 5 else a[s]),
        )  # fmt: skip
    # BSF's rows are one per view: the written accuracies are view 1's, which wins
    # validation over a view 0 listed first (a grid point, not a duplicate)
    for folder in (pub, draws):
        f = folder / "fits" / "ads" / "l100" / "bsf" / "splitall.csv"
        one = pd.read_csv(f).assign(view=1, val_acc=0.9)
        zero = one.assign(view=0, val_acc=0.5, test_acc=one["test_acc"] - 0.01)
        pd.concat([zero, one]).to_csv(f, index=False)
    # one cell also run one job per draw: its draws are counted once
    _write(
        draws, "cat",
        _rows("cat", range(5, 30), 1e-2, 0.5, lambda s, r: acc["cat"][s]), "split7.csv",
    )  # fmt: skip
    _summary(
        pub, {m: (100 * a[:5].mean(), 100 * a[:5].std(ddof=1)) for m, a in acc.items()}
    )
    cells, pairs = variance.build(pub, draws)
    c = cells.set_index("method")
    assert (c["draws"] == "30 of 30").all()
    assert c.loc["BSF", "mean ± std"].startswith(f"{100 * acc['bsf'].mean():.2f} ±")
    mean = 100 * acc["tcca"].mean()
    half = stats.t.ppf(0.975, 29) * 100 * acc["tcca"].std(ddof=1) / math.sqrt(30)
    assert c.loc["TCCA", "95 % CI"] == f"[{mean - half:.2f}, {mean + half:.2f}]"
    p = pairs.set_index("A - B")
    assert p.loc["TCCA - CCA (BST)", "difference"] == "-4.00"
    assert p.loc["TCCA - CCA (BST)", "the interval says"] == "A below B"
    assert p.loc["TCCA - CCA (BST)", "after Holm"] == "A below B"
    assert p.loc["CCA (BST) - BSF", "the interval says"] == "A above B"
    assert p.loc["TCCA - CCA-LS", "draws"] == "30"
    # the raw test is scipy's paired t test; Holm's is over the table's 12 pairs
    d = 100 * (acc["cat"] - acc["bsf"])
    ref = stats.ttest_rel(100 * acc["cat"], 100 * acc["bsf"])
    assert float(pairs["_mean"].iloc[0]) == pytest.approx(d.mean())
    assert p.loc["CAT - BSF", "p"] == f"{ref.pvalue:.4f}"
    assert p.loc["CAT - BSF", "sd of A - B"] == f"{d.std(ddof=1):.3f}"
    assert len(pairs) == 12
    verdict = variance.claim_verdicts(pairs).set_index("claim")
    raw = verdict["over the draws (raw)"]
    assert raw["TCCA outperforms the other methods"] == "refuted"
    assert raw["every reduction beats BSF and CAT"] == "confirmed"
    # |CAT - BSF| ~ 0.1 point, sd ~ 0.5: equivalent within 1 point (TOST)
    assert raw["CAT is comparable to BSF"] == "confirmed"
    tost = stats.ttest_1samp(d, 1.0, alternative="less").pvalue
    assert "TOST within ± 1 point" in verdict.loc["CAT is comparable to BSF", "rule"]
    assert tost < 0.05
    # a draws run on other splits is refused
    _splits_file(draws, 30, shift=1)
    with pytest.raises(SystemExit, match="not the published one"):
        variance.build(pub, draws)


# ------------------------------------------------ the tests redone from the record


def _record(rows):
    cols = ["cell", "claim", "A - B", "draws", "difference", "95 % CI",
            "larger std", "the interval says"]  # fmt: skip
    cells = {"columns": ["cell", "method", "draws", "mean ± std"], "rows": [
        ["ads #labeled = 100", "BSF", "30 of 30", "90.00 ± 1.00"]]}  # fmt: skip
    return {"tables": [cells, {"columns": cols, "rows": rows}], "facts": {}}


def test_variance_tests_redone_from_the_recorded_intervals(variance):
    """From printed intervals only: p of the t test, Holm over the family, TOST.

    Three pairs whose 95 % intervals all exclude 0; their raw p-values (recovered:
    SE = half-width / t_{0.975, 29}) are 0.01, 0.02 and 0.045, so Holm gives
    0.03, 0.04, 0.045: all resolved; with a fourth pair at p = 0.3 it gives 0.04,
    0.06, 0.09 and 0.3 (4, 3, 2 and 1 times p): only the first stays resolved."""
    t975 = stats.t.ppf(0.975, 29)

    def row(pair, mean, p):
        se = abs(mean) / stats.t.isf(p / 2, 29)
        lo, hi = mean - t975 * se, mean + t975 * se
        return ["ads #labeled = 100", f"every reduction beats BSF and CAT ({pair})",
                f"{pair} - BSF", "30", f"{mean:+.2f}", f"[{lo:.4f}, {hi:.4f}]",
                "1.0", "x"]  # fmt: skip

    three = [row("CCA (BST)", 1.0, 0.01), row("CCA (AVG)", 1.0, 0.02),
             row("CCA-LS", -1.0, 0.045)]  # fmt: skip
    _, pairs = variance.from_record(_record(three))
    assert list(pairs["p"]) == ["0.0100", "0.0200", "0.0450"]
    assert list(pairs["Holm p"]) == ["0.0300", "0.0400", "0.0450"]
    assert list(pairs["after Holm"]) == ["A above B", "A above B", "A below B"]
    assert "larger std" not in pairs.columns  # the old rule's column is gone
    _, pairs = variance.from_record(_record([*three, row("TCCA", 0.1, 0.3)]))
    assert list(pairs["Holm p"]) == ["0.0400", "0.0600", "0.0900", "0.3000"]
    assert list(pairs["the interval says"][:3]) == ["A above B", "A above B",
                                                     "A below B"]  # fmt: skip
    assert list(pairs["after Holm"]) == [
        "A above B", "not resolved", "not resolved", "not resolved"]  # fmt: skip
    verdict = variance.claim_verdicts(pairs).iloc[0]
    assert (verdict["over the draws (raw)"], verdict["over the draws (Holm)"]) == (
        "refuted", "not resolved")  # fmt: skip
    # the simultaneous interval is the t interval at level 1 - 0.05 / 4
    lo, hi = (float(x) for x in pairs["simultaneous 95 % CI"][0].strip("[]").split(","))
    se = 1.0 / stats.t.isf(0.01 / 2, 29)
    half = stats.t.ppf(1 - 0.05 / 8, 29) * se
    assert (lo, hi) == (round(1.0 - half, 2), round(1.0 + half, 2))


def test_variance_comparable_is_an_equivalence_test(variance):
    """CAT - BSF = +0.30 with 95 % interval [0.04, 0.56] over 30 draws: different
    from 0, yet equivalent within 1 point (TOST p far below 0.05); -2.29 is not."""
    rows = [
        ["ads #labeled = 100", "CAT is comparable to BSF", "CAT - BSF", "30", "+0.30",
         "[0.04, 0.56]", "1.64", "A above B"],
        ["secstr #unlabeled = 84K", "CAT is comparable to BSF", "CAT - BSF", "30",
         "-2.29", "[-2.72, -1.86]", "2.02", "A below B"],
    ]  # fmt: skip
    _, pairs = variance.from_record(_record(rows))
    v = variance.claim_verdicts(pairs).set_index("cell")
    assert v.loc["ads #labeled = 100", "over the draws (raw)"] == "confirmed"
    assert v.loc["secstr #unlabeled = 84K", "over the draws (raw)"] == "not confirmed"
    se = 0.26 / stats.t.ppf(0.975, 29)
    p_upper = stats.t.cdf((0.30 - 1.0) / se, 29)
    assert f"p = {p_upper:.4f}" in v.loc["ads #labeled = 100", "rule"] or (
        p_upper < 1e-4 and "p < 0.0001" in v.loc["ads #labeled = 100", "rule"]
    )


# --------------------------------------------------- equal tuning over 30 draws


def _draw_rows(method, splits, eps, val, test):
    return _rows(method, splits, eps, val, lambda s, r: test[s])


@pytest.fixture
def tuned_draws_run(tmp_path):
    """Four runs, 30 draws: validation prefers eps = 1 (the overlays) everywhere.

    Under eps = 1 CCA (BST) is 2 points above TCCA on every draw, CCA (AVG) level
    with it up to noise; under eps = 1e-2 (never chosen) TCCA would be ahead."""
    pub = tmp_path / "results"
    runs = {
        "published": pub,
        "draws": pub / "draws30",
        "overlay": pub / "equal_tuning",
        "overlay_draws": pub / "equal_tuning_draws30",
    }
    rng = np.random.default_rng(1)
    base = rng.uniform(0.8, 0.9, 30)
    tuned = {
        "tcca": base,
        "cca_bst": base + 0.02,
        "cca_avg": base + rng.normal(0, 0.01, 30),
        "cca_ls": base - 0.01,
    }
    _splits_file(pub, 5)
    for k in ("draws", "overlay_draws"):
        _splits_file(runs[k], 30)
    wrong = np.zeros(30)  # the later runs' draws 0-4: must not be read
    for m, acc in tuned.items():
        _write(pub, m, _draw_rows(m, range(5), 1e-2, 0.5, 1 - acc))
        _write(runs["draws"], m, _draw_rows(m, range(30), 1e-2, 0.5,
                                            np.r_[wrong[:5], 1 - acc[5:]]))  # fmt: skip
        _write(runs["overlay"], m, _draw_rows(m, range(5), 1.0, 0.9, acc))
        _write(runs["overlay_draws"], m, _draw_rows(m, range(30), 1.0, 0.9,
                                                    np.r_[wrong[:5], acc[5:]]))  # fmt: skip
    _summary(pub, {m: (100 * a[:5].mean(), 1.0) for m, a in tuned.items()})
    return runs, tuned


def test_equal_tuning_over_draws_pairs_tcca_with_each_cca(tuned_draws_run, equal):
    runs, tuned = tuned_draws_run
    acc, left_out = equal.tuned_draws(runs, "ads", "l100", "tcca")
    assert left_out == 0 and list(acc.index) == list(range(30))
    np.testing.assert_allclose(acc.to_numpy(), 100 * tuned["tcca"])  # eps = 1 won
    pairs, notes = equal.draw_pairs(runs)
    assert notes == []
    p = pairs.set_index("A - B")
    assert list(p.index) == ["TCCA - CCA (BST)", "TCCA - CCA (AVG)", "TCCA - CCA-LS"]
    assert p.loc["TCCA - CCA (BST)", "difference"] == "-2.00"
    assert p.loc["TCCA - CCA (BST)", "after Holm"] == "A below B"
    assert p.loc["TCCA - CCA-LS", "after Holm"] == "A above B"
    ref = stats.ttest_rel(100 * tuned["tcca"], 100 * tuned["cca_avg"])
    assert p.loc["TCCA - CCA (AVG)", "p"] == f"{ref.pvalue:.4f}"
    # the other two differences are constant (p = 0): Holm's largest p stays itself
    assert p.loc["TCCA - CCA (BST)", "p"] == "< 0.0001"
    assert p.loc["TCCA - CCA (AVG)", "Holm p"] == f"{ref.pvalue:.4f}"
    text = equal.draws_text(pairs, notes)
    assert text.startswith(f"#### {equal.DRAWS_HEADING}")
    assert "TCCA - CCA (BST)" in text and "_mean" not in text


def test_equal_tuning_over_draws_leaves_out_incomplete_draws(tuned_draws_run, equal):
    runs, _ = tuned_draws_run
    # draw 7 of TCCA lacks eps = 1: left out, and said so
    f = runs["overlay_draws"] / "fits" / "ads" / "l100" / "tcca" / "splitall.csv"
    df = pd.read_csv(f)
    df[df["split"] != 7].to_csv(f, index=False)
    acc, left_out = equal.tuned_draws(runs, "ads", "l100", "tcca")
    assert left_out == 1 and 7 not in acc.index and len(acc) == 29
    pairs, notes = equal.draw_pairs(runs)
    assert set(pairs["draws"]) == {"29"}
    assert notes == ["ads #labeled = 100, TCCA: 1 draws without every eps, left out"]
    # an overlay that repeats eps = 1e-2 would count it twice
    _write(runs["overlay_draws"], "tcca",
           _rows("tcca", range(5, 30), 1e-2, 0.5, 0.5), "split9.csv")  # fmt: skip
    with pytest.raises(SystemExit, match="in both"):
        equal.tuned_draws(runs, "ads", "l100", "tcca")


def test_equal_tuning_over_draws_absent(tuned_run, equal):
    pub, over = tuned_run
    runs = {"published": pub, "draws": pub / "draws30", "overlay": over,
            "overlay_draws": pub / "equal_tuning_draws30"}  # fmt: skip
    pairs, notes = equal.draw_pairs(runs)
    assert pairs.empty and notes == []
    assert equal.draws_text(pairs, notes).startswith("Over 30 draws: not run yet")


# ------------------------------------- a clone: committed rows, no fits or splits


def _clone_run(folder: Path, acc: dict, draws, seed0=0, n_labeled=100) -> None:
    """Fit files of a run over ``draws`` (seed seed0 + draw, as make_splits draws
    them), bundled into its rows/ as the scripts do, then deleted: what a clone has."""
    for m, a in acc.items():
        rows = _rows(m, draws, 1e-2, 0.5, lambda s, r, a=a: a[s])
        rows = rows.assign(
            seed=rows["split"] + seed0, n_labeled=n_labeled, n_validation=635,
            n_test=2544,
        )  # fmt: skip
        _write(folder, m, rows)
    bundle_run(folder)
    shutil.rmtree(folder / "fits")


def test_equal_tuning_from_a_clones_rows(tuned_run, equal, tmp_path):
    pub, over = tuned_run
    table, eq, incomplete = equal.build(pub, over)
    out = tmp_path / "equal_tuning.md"
    equal.main(["--published", str(pub), "--out", str(out)])
    # the overlay's rows are written with the output; the published folder's not
    assert (over / "rows" / "ads" / "l100.csv.gz").is_file()
    assert not (pub / "rows").exists()
    bundle_run(pub)
    shutil.rmtree(pub / "fits")
    shutil.rmtree(over / "fits")
    again, eq_again, incomplete_again = equal.build(pub, over)
    pd.testing.assert_frame_equal(again, table)
    assert (eq_again, incomplete_again) == (eq, incomplete)


def test_variance_from_a_clones_rows_alone(tmp_path, variance):
    """Without fit or splits files the draws are read and checked from the rows.

    The published run holds draws 0-4, the draws run 5-29 (no draw in common): the
    draws must continue the published seeds (seed - draw one number), and a draw in
    both must have the same seed and sizes."""
    pub, draws = tmp_path / "results", tmp_path / "results" / "draws30"
    rng = np.random.default_rng(2)
    base = rng.uniform(0.6, 0.8, size=30)
    acc = {m: base + 0.01 * i for i, m in enumerate(variance.METHODS_30)}
    _clone_run(pub, acc, range(5))
    _clone_run(draws, acc, range(5, 30))
    _summary(pub, {m: (100 * a[:5].mean(), 1.0) for m, a in acc.items()})
    assert not (pub / "fits").exists() and not (pub / "splits").exists()
    assert variance.check_same_splits(pub, draws, "ads", "l100") == 5
    cells, pairs = variance.build(pub, draws)
    c = cells.set_index("method")
    assert (c["draws"] == "30 of 30").all()
    assert c.loc["TCCA", "mean ± std"].startswith(f"{100 * acc['tcca'].mean():.2f} ±")
    assert len(pairs) == 12
    # the script's command in a clone: its output, and the rows left as they are
    before = (draws / "rows" / "ads" / "l100.csv.gz").read_bytes()
    out = tmp_path / "variance.md"
    variance.main(["--published", str(pub), "--out", str(out)])
    assert "30 of 30" in out.read_text()
    assert (draws / "rows" / "ads" / "l100.csv.gz").read_bytes() == before
    # draws of another seed series (draw 5 drawn with seed 105): refused
    _clone_run(draws, acc, range(5, 30), seed0=100)
    with pytest.raises(SystemExit, match=r"not the published one's series .*0, 100"):
        variance.check_same_splits(pub, draws, "ads", "l100")
    # a draw both runs hold, of other sizes in one: not the same draw
    _clone_run(draws, acc, range(30), n_labeled=99)
    with pytest.raises(SystemExit, match="split 0 of .* is not the published one"):
        variance.check_same_splits(pub, draws, "ads", "l100")
    # the same draws in both: the published count
    _clone_run(draws, acc, range(30))
    assert variance.check_same_splits(pub, draws, "ads", "l100") == 5
    # no rows of the setting in the draws run: nothing shared
    (draws / "rows" / "ads" / "l100.csv.gz").unlink()
    assert variance.check_same_splits(pub, draws, "ads", "l100") == 0
