"""investigations/equal_tuning.py and variance.py on hand-built fit rows (issue #19).

The rows are built so that the right answer is known without the scripts: which eps
validation must pick, what the mean over the draws is, and which side of zero a
paired difference lies on.
"""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _scripts import load_script


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
    assert p.loc["CCA (BST) - BSF", "the interval says"] == "A above B"
    assert p.loc["TCCA - CCA-LS", "draws"] == "30"
    verdict = variance.claim_verdicts(pairs).set_index("claim")["over the draws"]
    assert verdict["TCCA outperforms the other methods"] == "refuted"
    assert verdict["every reduction beats BSF and CAT"] == "confirmed"
    assert verdict["CAT is comparable to BSF"] == "confirmed"  # within the std
    # a draws run on other splits is refused
    _splits_file(draws, 30, shift=1)
    with pytest.raises(SystemExit, match="not the published one"):
        variance.build(pub, draws)
