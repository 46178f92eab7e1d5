"""REPRODUCTION.md generator: deviation flags, claim checks and layout from a summary."""

import copy

import pytest

from tcca_core import reproduction
from tcca_core.reproduction import build, deviations, outside_paper


def _rec(method, column, mean, std, paper=None, setting="s"):
    pm, ps = paper if paper else (None, None)
    return {
        "method": method,
        "column": column,
        "setting": setting,
        "result_of_setting": setting,
        "mean": mean,
        "std": std,
        "n_splits": 5,
        "r": "10/20/10/10/10" if method not in ("bsf", "cat") else "",
        "paper_mean": pm,
        "paper_std": ps,
        "paper_note": None,
        "diff": None if pm is None or mean is None else mean - pm,
    }


def _curve(setting, method, values):
    return [
        {
            "setting": setting,
            "method": method,
            "r": r,
            "mean": v,
            "std": 1.0,
            "n_splits": 5,
        }
        for r, v in values
    ]


@pytest.fixture
def summary():
    col84, col13 = "#unlabeled = 84K", "#unlabeled = 1.3M"
    secstr = [
        _rec("bsf", col84, 57.0, 1.5, (57.48, 1.90), "84k"),
        _rec("cat", col84, 57.5, 1.2, (57.77, 2.03), "84k"),
        _rec("cca_avg", col84, 60.0, 1.0, (60.75, 1.92), "84k"),
        _rec("cca_ls", col84, 59.0, 1.0, (60.23, 1.70), "84k"),
        _rec("tcca", col84, 61.0, 1.0, (62.36, 1.27), "84k"),
        _rec("bsf", col13, 57.0, 1.5, (57.48, 1.90), "84k"),
        _rec("cat", col13, 57.5, 1.2, (57.77, 2.03), "84k"),
        _rec("cca_avg", col13, 61.0, 1.0, (61.15, 1.73), "1.3m"),
        _rec("cca_ls", col13, 60.0, 1.0, (61.32, 1.65), "1.3m"),
        # far below the paper: 64.42 - 2 x 1.70 = 61.02
        _rec("tcca", col13, 58.0, 1.0, (64.42, 1.70), "1.3m"),
    ]
    ads = [
        _rec("bsf", "#labeled = 100", 91.0, 1.0, (91.10, 1.65), "l100"),
        _rec("cat", "#labeled = 100", 91.2, 1.0, (91.08, 1.74), "l100"),
        _rec("dse", "#labeled = 100", 92.0, 1.0, (93.01, 0.96), "l100"),
        _rec("ssmvd", "#labeled = 100", 92.5, 1.0, (92.99, 0.91), "l100"),
        _rec("tcca", "#labeled = 100", 93.0, 1.0, (94.59, 0.27), "l100"),
    ]
    curves = (
        _curve("84k", "tcca", [(5, 58), (50, 61), (300, 60.5)])
        + _curve("84k", "cca_avg", [(5, 59), (20, 60), (100, 55)])
        + _curve("84k", "cca_ls", [(5, 59), (20, 60), (100, 54)])
    )
    ads_curves = _curve("l100", "dse", [(5, 88), (20, 92), (300, 80)]) + _curve(
        "l100", "ssmvd", [(5, 90), (20, 92.5), (300, 89)]
    )
    cost = [
        {
            "setting": "84k",
            "method": "tcca",
            "r": "50",
            "fit_s": 10.0,
            "peak_mb": 900.0,
        },
        {
            "setting": "84k",
            "method": "cca_avg",
            "r": "20",
            "fit_s": 1.0,
            "peak_mb": 90.0,
        },
        {
            "setting": "84k",
            "method": "dse",
            "r": "20",
            "fit_s": 30.0,
            "peak_mb": 2000.0,
        },
    ]
    cols = lambda *cs: [{"setting": s, "label": lab} for s, lab in cs]  # noqa: E731
    return {
        "provenance": {
            "git": {"commit": "abc", "dirty": False},
            "config": {
                "seed": 0,
                "n_splits": 5,
                "r_grid": "paper",
                "val_fraction": 0.2,
            },
            "machine": {"cpu": "test cpu", "logical_cores": 2},
            "versions": {"numpy": "2"},
            "threads": 1,
        },
        "tables": {
            "secstr": {
                "title": "SecStr",
                "paper_table": "secstr",
                "columns": cols(("84k", col84), ("1.3m", col13)),
                "accuracy": {"val": secstr, "best_r": copy.deepcopy(secstr)},
                "curves": curves,
                "cost_selected": cost,
            },
            "ads": {
                "title": "Ads",
                "paper_table": "ads",
                "columns": cols(("l100", "#labeled = 100")),
                "accuracy": {"val": ads, "best_r": copy.deepcopy(ads)},
                "curves": ads_curves,
                "cost_selected": [],
            },
        },
    }


def test_outside_paper_uses_two_paper_stds():
    assert outside_paper({"mean": 61.0, "paper_mean": 64.42, "paper_std": 1.70})
    assert not outside_paper({"mean": 61.1, "paper_mean": 64.42, "paper_std": 1.70})
    assert outside_paper({"mean": None, "paper_mean": 1.0, "paper_std": 1.0}) is None
    assert outside_paper({"mean": 1.0, "paper_mean": None}) is None


def test_deviations_lists_exactly_the_cells_outside(summary):
    devs = {(d["table"], d["column"], d["method"]) for d in deviations(summary)}
    # TCCA 1.3M (58 vs 64.42 +- 1.70) and Ads TCCA (93 vs 94.59 +- 0.27)
    assert devs == {
        ("secstr", "#unlabeled = 1.3M", "tcca"),
        ("ads", "#labeled = 100", "tcca"),
    }
    d = next(d for d in deviations(summary) if d["table"] == "ads")
    assert d["paper_stds"] == pytest.approx((93.0 - 94.59) / 0.27)


def test_claims_follow_the_numbers(summary):
    checks = {c[2].__name__: c[2] for c in reproduction.CLAIMS}
    # 84K -> 1.3M: CCA gains but TCCA loses (61 -> 58)
    assert checks["claim_more_unlabeled"](summary).status == "not confirmed"
    s = copy.deepcopy(summary)
    s["tables"]["secstr"]["accuracy"]["val"][-1]["mean"] = 63.0
    assert checks["claim_more_unlabeled"](s).status == "confirmed"
    # TCCA falls 0.5 from its peak, CCA (AVG) 5 and CCA-LS 6
    assert checks["claim_tcca_flat"](summary).status == "confirmed"
    # DSE falls 12 points (sharp); SSMVD only 3.5
    v = checks["claim_dse_ssmvd_fall"](summary)
    assert v.status == "not confirmed" and "fall 12.00" in v.evidence[0]
    # every reduction above max(BSF, CAT) in each column
    assert checks["claim_cat_bsf"](summary).status == "confirmed"
    # TCCA above CCA (AVG), below DSE on SecStr: matches the paper's cost claim
    assert checks["claim_cost"](summary).status == "confirmed"
    assert checks["claim_tcca_best"](summary).status == "not confirmed"
    empty = {"tables": {}}
    assert all(c[2](empty).status == "not testable here" for c in reproduction.CLAIMS)


def test_build_lays_out_tables_figures_claims_and_missing(summary):
    text = build(
        summary,
        investigations="## Investigations\n\nWhy TCCA differs.",
        missing={"nuswide_linear": "Not run: no data."},
    )
    assert text.startswith("# Reproduction of Luo et al.")
    assert "| TCCA | 58.00 ± 1.00 | 10/20/10/10/10 | 58.00 ± 1.00 |" in text
    assert "64.42 ± 1.70 | -6.42 | **outside 2 std** |" in text
    assert "![Accuracy against r: secstr](results/figures/secstr_accuracy.png)" in text
    assert "![Fit time and memory against r: ads](results/figures/ads_cost.png)" in text
    assert "### nuswide_linear: not run" in text and "Not run: no data." in text
    assert text.count("**confirmed.**") + text.count("**not confirmed.**") == 6
    assert text.index("## Deviations beyond 2 std") < text.index("Why TCCA differs.")
    assert "Commit: `abc`" in text
    # the same summary gives the same text
    assert text == build(
        summary,
        investigations="## Investigations\n\nWhy TCCA differs.",
        missing={"nuswide_linear": "Not run: no data."},
    )


def test_include_files_inlines_script_outputs(tmp_path):
    (tmp_path / "investigations" / "results").mkdir(parents=True)
    (tmp_path / "investigations/results/a.md").write_text("| x |\n|---|\n| 1 |\n")
    text = (
        "intro\n<!-- include: investigations/results/a.md -->\n"
        "<!-- include: investigations/results/b.md -->\nend\n"
    )
    out = reproduction.include_files(text, tmp_path)
    assert "intro\n| x |\n|---|\n| 1 |\n" in out
    assert "`python investigations/b.py` writes `investigations/results/b.md`" in out
    assert out.endswith("end\n")


def test_reduced_runs_are_flagged(summary):
    assert "**Reduced run.**" not in build(summary)  # 5 splits, the paper's r grid
    s = copy.deepcopy(summary)
    s["provenance"]["config"].update(n_splits=2, r_grid=[5, 10])
    text = build(s)
    assert "> **Reduced run.** These numbers come from a run with 2 splits" in text
    assert text.index("**Reduced run.**") < text.index("## Provenance")


def test_settings_with_their_own_r_grid_are_named(summary):
    assert "uses its own r grid" not in build(summary)
    s = copy.deepcopy(summary)
    s["provenance"]["config"]["datasets"] = {
        "mfeat": {
            "settings": {
                "kernel2000_4": {"r_grid": list(range(5, 105, 5))},
                "linear4": {"per_class": 4},
                "tiny": {"r_grid": [5, 10]},
            }
        }
    }
    text = build(s)
    assert "- mfeat/kernel2000_4 uses its own r grid: 5, ..., 100 (20 values)" in text
    assert "- mfeat/tiny uses its own r grid: [5, 10]" in text
    assert "linear4" not in text.split("## Tables")[0]
