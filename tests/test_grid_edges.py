"""investigations/grid_edges.py on synthetic fit rows and summaries."""

import copy
import json
import shutil

import pandas as pd
import pytest

from _scripts import load_script
from tcca_core.pipeline.rows import bundle_run
from tcca_core.reproduction import CLAIMS, outside_paper
from tcca_core.reproduction.claims import claim_cost, claim_tcca_best

SPLITS = (0, 1, 2)


@pytest.fixture(scope="module")
def edges():
    return load_script("investigations/grid_edges.py")


def _rows(acc: dict, method: str = "cca_avg") -> pd.DataFrame:
    """Fit rows from {(split, r, eps): (val_acc, test_acc)} (RLS, one gamma)."""
    return pd.DataFrame(
        [
            {"method": method, "learner": "rls", "split": s, "r": r, "eps": e,
             "k": None, "gamma": 1.0, "lambda1": None, "lambda2": None,
             "view": None, "pair": None, "params": "{}", "val_acc": v, "test_acc": t}
            for (s, r, e), (v, t) in acc.items()
        ]
    )  # fmt: skip


# test accuracy per split at r = 5 (the published pick) and at r = 1 (the new one)
T5 = [0.64, 0.66, 0.65]
T1 = [0.79, 0.80, 0.81]


def _run_rows(pick_new: bool = True) -> pd.DataFrame:
    """The overlay's rows of cca_avg: r = 1..5 and 10; r = 1 wins validation."""
    acc = {}
    for s in SPLITS:
        acc[(s, 5, 0.01)] = (0.60, T5[s])
        acc[(s, 10, 0.01)] = (0.50, 0.55)
        acc[(s, 1, 0.01)] = (0.70 if pick_new else 0.40, T1[s])
        for r in (2, 3, 4):
            acc[(s, r, 0.01)] = (0.55, 0.58)
    return _rows(acc)


def _rec(method, mean, std, r, paper=(None, None)):
    return {
        "column": "#unlabeled = 84K",
        "setting": "84k",
        "result_of_setting": "84k",
        "method": method,
        "mean": mean,
        "std": std,
        "r": r,
        "n_splits": 3,
        "paper_mean": paper[0],
        "paper_std": paper[1],
        "diff": None if paper[0] is None else mean - paper[0],
    }


def _summary() -> dict:
    t5 = pd.Series(T5)
    recs = [
        _rec("bsf", 55.0, 1.0, ""),
        _rec("cat", 55.5, 1.0, ""),
        _rec("cca_bst", 60.0, 1.0, "10/15/10"),
        # the edge cell: r = 5 in every split; within the paper's 66 +- 2 x 1
        _rec(
            "cca_avg",
            float(100 * t5.mean()),
            float(100 * t5.std(ddof=1)),
            "5/5/5",
            (66.0, 1.0),
        ),
        _rec("cca_ls", 61.0, 1.0, "10/10/15"),
        _rec("dse", 62.0, 1.0, "10/10/10"),
        _rec("ssmvd", 62.5, 1.0, "15/10/10"),
        _rec("tcca", 70.0, 1.0, "10/15/10"),
    ]
    # the edge cell's curve is its rows' (the script checks it); 50 past r = 10
    edge = {5: float(100 * t5.mean()), 10: 55.0, 15: 50.0, 20: 50.0}
    curves = [
        {"setting": "84k", "method": m, "r": r, "std": 1.0,
         "mean": edge[r] if m == "cca_avg" else 60.0}
        for m in ("cca_bst", "cca_avg", "cca_ls", "dse", "ssmvd", "tcca")
        for r in (5, 10, 15, 20)
    ]  # fmt: skip
    return {
        "tables": {
            "secstr": {
                "dataset": "secstr",
                "columns": [
                    {"label": "#unlabeled = 84K", "setting": "84k", "paper": "84K"}
                ],
                "accuracy": {"val": recs},
                "curves": curves,
            }
        }
    }


def _write(folder, cell, df):
    out = folder / "fits" / cell
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "splitall.csv", index=False)


def test_edge_cells_are_those_at_the_lowest_rank(edges):
    summary = _summary()
    cells = edges.edge_cells(summary)
    assert [(c["method"], c["edge"], c["splits"]) for c in cells] == [
        ("cca_avg", "lowest", 3)
    ]
    # the highest rank is an edge too; another setting's result (same_as) is not
    recs = summary["tables"]["secstr"]["accuracy"]["val"]
    recs[0:0] = [{**_rec("dse", 1.0, 1.0, "20/5/10"), "result_of_setting": "x"}]
    next(r for r in recs if r["method"] == "tcca")["r"] = "20/15/10"
    found = {(c["method"], c["edge"]) for c in edges.edge_cells(summary)}
    assert found == {("cca_avg", "lowest"), ("tcca", "highest")}


def test_a_pick_below_the_grid_changes_the_cell(edges):
    summary = _summary()
    rec = summary["tables"]["secstr"]["accuracy"]["val"][3]
    res = edges.extend_cell(_run_rows(), None, [5, 5, 5], [5, 10, 15], rec["mean"])
    assert res["status"] == "judged"
    assert res["paper"]["picks"] == [5, 5, 5]
    assert res["paper"]["mean"] == pytest.approx(rec["mean"])
    # r = 1 wins validation in every split: (A) is the mean of its test accuracies
    ext = res["extended"]
    assert ext["picks"] == [1, 1, 1]
    assert ext["mean"] == pytest.approx(100 * pd.Series(T1).mean())
    assert ext["std"] == pytest.approx(100 * pd.Series(T1).std(ddof=1))
    assert res["new_ranks"] == [1, 2, 3, 4]
    assert res["curve"][1] == pytest.approx(100 * pd.Series(T1).mean())
    assert res["curve"][3] == pytest.approx(58.0)
    # a new rank that loses validation leaves the cell as it was, to the digit
    same = edges.extend_cell(
        _run_rows(pick_new=False), None, [5, 5, 5], [5, 10, 15], rec["mean"]
    )
    assert same["extended"] == same["paper"]
    # rows that do not give the published cell back are not compared with it
    other = edges.extend_cell(
        _run_rows(), None, [5, 5, 5], [5, 10, 15], rec["mean"] + 1
    )
    assert other["status"] == "not judged" and "not the same run" in other["why"]
    assert "extended" not in other
    # so are rows whose mean test accuracy at a shared rank is not the published
    curve = {5: 100 * sum(T5) / 3, 10: 55.0}
    ok = edges.extend_cell(_run_rows(), None, [5, 5, 5], [5, 10], rec["mean"], curve)
    assert ok["status"] == "judged"
    curve[10] = 55.1
    bad = edges.extend_cell(_run_rows(), None, [5, 5, 5], [5, 10], rec["mean"], curve)
    assert bad["status"] == "not judged" and bad["curve"] == {}
    assert "at r = 10: 55.00 here, 55.10 published" in bad["why"]
    # the published fits, when there, are the paper-grid rows
    published = _run_rows()
    published = published[published["r"].isin([5, 10])]
    res2 = edges.extend_cell(_run_rows(), published, [5, 5, 5], [5, 10], rec["mean"])
    assert res2["source"] == "published fits"
    assert res2["extended"] == ext
    assert edges.extend_cell(None, None, [5], [5], 0.0) == {"status": "not run"}


def test_a_rank_path_is_judged_on_the_published_fits(edges):
    """A warm-started rank path's r = 5 and 10 follow its new ranks 1-4: they are
    not the published fits, so they are neither compared nor used."""
    rec = _summary()["tables"]["secstr"]["accuracy"]["val"][3]
    path = '{"eps": 0.01, "warm_start": true}'
    run = _run_rows().assign(params=path)
    # the path's own r = 5 differs from the published one, and would win validation
    run.loc[run["r"] == 5, ["val_acc", "test_acc"]] = (0.99, 0.30)
    curve = {5: 100 * sum(T5) / 3, 10: 55.0}
    published = _run_rows().assign(params=path)
    published = published[published["r"].isin([5, 10])]
    res = edges.extend_cell(run, published, [5, 5, 5], [5, 10], rec["mean"], curve)
    assert res["status"] == "judged"
    assert res["source"].startswith("published fits (a rank path")
    assert res["paper"]["picks"] == [5, 5, 5]
    assert res["extended"]["picks"] == [1, 1, 1]
    assert res["extended"]["mean"] == pytest.approx(100 * pd.Series(T1).mean())
    # the same rows fitted alone would be another run
    alone = run.assign(params="{}")
    other = edges.extend_cell(alone, published, [5, 5, 5], [5, 10], rec["mean"], curve)
    assert other["status"] == "not judged" and "not the same run" in other["why"]
    # without the published fits a rank path cannot be judged
    none = edges.extend_cell(run, None, [5, 5, 5], [5, 10], rec["mean"], curve)
    assert none["status"] == "not judged" and "rank path" in none["why"]


def test_a_published_pick_outside_the_run_is_not_judged(edges):
    run = _run_rows()
    # split 1 picked r = 15 on the paper's grid: not in this run
    res = edges.extend_cell(run, None, [5, 15, 5], [5, 10, 15], 0.0)
    assert res["status"] == "not judged"
    assert "r = 15 (split 1)" in res["why"]
    # the other two splits are judged on their own: r = 1 wins both
    assert (
        "in the 2 other splits a rank below the grid wins validation in 2"
        in (res["why"])
    )
    # its new ranks still give the curve (no selection across ranks needed)
    assert res["curve"][1] == pytest.approx(100 * pd.Series(T1).mean())


def test_verdicts_are_those_of_the_claims(tmp_path, edges):
    published = tmp_path / "results"
    published.mkdir()
    summary = _summary()
    (published / "summary.json").write_text(json.dumps(summary))
    _write(published / "grid_edges", "secstr/84k/cca_avg", _run_rows())
    cells, after, verdict = edges.build(published, published / "grid_edges")
    (cell,) = cells
    new_mean = cell["result"]["extended"]["mean"]
    # independently: the summary edited by hand, judged by claims.py
    by_hand = copy.deepcopy(summary)
    rec = by_hand["tables"]["secstr"]["accuracy"]["val"][3]
    rec["mean"] = new_mean
    by_hand["tables"]["secstr"]["curves"] += [
        {"setting": "84k", "method": "cca_avg", "r": r, "mean": m}
        for r, m in ((1, 100 * sum(T1) / 3), (2, 58.0), (3, 58.0), (4, 58.0))
    ]
    assert claim_tcca_best(summary).status == "confirmed"  # TCCA 70 was the best
    assert claim_tcca_best(by_hand).status == "not confirmed"  # CCA (AVG) ~ 80 now
    accuracy_claims = [c for c in CLAIMS if c[2] is not claim_cost]
    assert list(verdict["claim"]) == [c[0] for c in accuracy_claims]
    for (_, _, check), (_, row) in zip(accuracy_claims, verdict.iterrows()):
        assert row["paper's grid"] == check(summary).status
        assert row["extended grid"] == check(by_hand).status
    best = verdict.set_index("claim").loc[CLAIMS[-1][0]]
    assert (best["paper's grid"], best["moves"]) == ("confirmed", "yes")
    # the cell crosses the paper's mean +- 2 std
    assert outside_paper(summary["tables"]["secstr"]["accuracy"]["val"][3]) is False
    assert outside_paper(after["tables"]["secstr"]["accuracy"]["val"][3]) is True
    row = edges.cell_rows(cells)[0]
    assert row["vs the paper's mean ± 2 std"] == "within -> outside"
    assert row["r per split (extended)"] == "1, 1, 1"
    lines = "\n".join(edges.summary_lines(cells, verdict))
    assert "Splits that pick an r below the paper's grid: 3 of 3, in 1 of 1" in lines
    assert "Cells that cross the paper's mean ± 2 std: 1" in lines
    assert f"Verdicts of the paper's claims that move: 1 of {len(verdict)}." in lines
    # the new ranks are on the cell's curve
    pts = {
        p["r"] for p in after["tables"]["secstr"]["curves"] if p["method"] == "cca_avg"
    }
    assert pts == {1, 2, 3, 4, 5, 10, 15, 20}


def test_main_writes_the_table_and_its_data(tmp_path, edges):
    published = tmp_path / "results"
    published.mkdir()
    (published / "summary.json").write_text(json.dumps(_summary()))
    _write(published / "grid_edges", "secstr/84k/cca_avg", _run_rows())
    # eps past the equal-tuning grid: published 1e-2, equal tuning 1e-3 and 100,
    # the edge run 1e-4; r = 5 and 10
    acc_pub, acc_eq, acc_edge = {}, {}, {}
    for s in SPLITS:
        for r in (5, 10):
            acc_pub[(s, r, 1e-2)] = (0.50, 0.60)
            acc_eq[(s, r, 1e-3)] = (0.60 if r == 5 else 0.40, 0.62)
            acc_eq[(s, r, 1e2)] = (0.30, 0.50)
            acc_edge[(s, r, 1e-4)] = (0.70 if s else 0.55, 0.64 + s / 100)
    _write(published, "secstr/84k/cca_bst", _rows(acc_pub, "cca_bst"))
    _write(published / "equal_tuning", "secstr/84k/cca_bst", _rows(acc_eq, "cca_bst"))
    _write(
        published / "grid_edges_eps", "secstr/84k/cca_bst", _rows(acc_edge, "cca_bst")
    )
    equal = {
        "tables": [
            {
                "heading": "Equal tuning",
                "columns": ["cell", "method", "equal tuning", "eps chosen per split"],
                "rows": [
                    ["secstr #unlabeled = 84K", "CCA (BST)", "62.00 ± 0.00",
                     "0.001, 0.001, 0.001"],
                    ["secstr #unlabeled = 84K", "TCCA", "70.00 ± 1.00", "0.1, 1, 10"],
                    ["secstr #unlabeled = 84K", "BSF", "55.00 ± 1.00",
                     "own parameters (published)"],
                ],
            }
        ]
    }  # fmt: skip
    equal_path = tmp_path / "equal_tuning.json"
    equal_path.write_text(json.dumps(equal))
    out = tmp_path / "out" / "grid_edges.md"
    args = ["--published", str(published), "--out", str(out)]
    edges.main([*args, "--equal-tuning", str(equal_path)])
    text = out.read_text()
    assert "| #unlabeled = 84K" not in text  # the cell names its table
    assert "secstr #unlabeled = 84K: CCA (AVG)" in text
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["cells"][0]["result"]["extended"]["picks"] == [1, 1, 1]
    assert data["tables"][0]["heading"].startswith("Grid edges")  # hand_over's
    eq = {c["method"]: c for c in data["equal_tuning_cells"]}
    assert set(eq) == {"CCA (BST)", "TCCA"}  # BSF keeps its own parameters
    assert eq["CCA (BST)"]["edges"] == {"eps = 0.001": 3}
    assert eq["TCCA"]["edges"] == {}
    # rebuilt from the rows: eps = 1e-3 at r = 5 in every split, (A) 62
    tuned = eq["CCA (BST)"]["tuned"]
    assert (tuned["picks"], tuned["eps"]) == ([5, 5, 5], [1e-3] * 3)
    assert tuned["mean"] == pytest.approx(62.0)
    # with 1e-4 joined: splits 1 and 2 take it (validation 0.70 > 0.60), split 0
    # keeps 1e-3 (0.55 < 0.60)
    ext = eq["CCA (BST)"]["extended"]
    assert ext["eps"] == [1e-3, 1e-4, 1e-4]
    assert ext["mean"] == pytest.approx(100 * pd.Series([0.62, 0.65, 0.66]).mean())
    assert "eps = 0.001 in 3 of 5 splits" not in text  # of 3: the cell's splits
    assert "eps = 0.001 in 3 of 3 splits" in text
    assert "0.001, 0.0001, 0.0001" in text
    # the runs read get their rows (committed with the output), the published
    # folder not (the pipeline's rows rule writes those)
    for run in ("grid_edges", "equal_tuning", "grid_edges_eps"):
        assert (published / run / "rows" / "secstr" / "84k.csv.gz").is_file()
    assert not (published / "rows").exists()
    # a clone: no fit files, the committed rows alone give the same output
    bundle_run(published)
    for fits in sorted(published.glob("**/fits")):
        shutil.rmtree(fits)
    clone = tmp_path / "clone" / "grid_edges.md"
    edges.main(["--published", str(published), "--out", str(clone),
                "--equal-tuning", str(equal_path)])  # fmt: skip
    again = json.loads(clone.with_suffix(".json").read_text())
    assert again["tables"] == data["tables"] and again["facts"] == data["facts"]
    assert again["equal_tuning_cells"] == data["equal_tuning_cells"]


def test_equal_tuning_grid_and_joins(edges):
    grid = edges.eps_grid(edges.CONFIGS / "equal_tuning.yaml")
    assert grid[0] == pytest.approx(1e-3) and grid[-1] == pytest.approx(1e2)
    assert 1e-2 in grid  # the published value
    a = _rows({(0, 5, 1e-2): (0.5, 0.5)})
    b = _rows({(0, 5, 1e-3): (0.5, 0.5)})
    assert len(edges.joined_eps(a, b)) == 2
    assert edges.joined_eps(a, None) is None
    with pytest.raises(SystemExit, match="in two runs"):
        edges.joined_eps(a, a)
    # a run cut short (other splits) is not a cell yet
    c = _rows({(1, 5, 1e-4): (0.5, 0.5)})
    assert edges.joined_eps(a, c) is None
    # the edge overlays exist, and the rank one reaches below the paper's grid
    import yaml

    cfg = yaml.safe_load((edges.CONFIGS / "grid_edges.yaml").read_text())
    assert min(cfg["r_grid"]) == 1 and {5, 10} <= set(cfg["r_grid"])
    eps_cfg = yaml.safe_load((edges.CONFIGS / "grid_edges_eps.yaml").read_text())
    values = {
        e for s in eps_cfg["method_sets"].values() for p in s.values() for e in p["eps"]
    }
    assert all(e < grid[0] or e > grid[-1] for e in values)


def test_the_targets_are_the_lowest_edge_cells_once_each(edges, tmp_path, monkeypatch):
    """--targets lists one fit file per cell that picks the lowest rank of its grid;
    a cell at the top of its grid has no rank below to fit."""
    monkeypatch.chdir(tmp_path)
    cell = {
        "dataset": "secstr",
        "setting": "84k",
        "method": "cca_bst",
        "edge": "lowest",
    }
    cells = [
        cell,
        {**cell, "edge": "highest"},
        {**cell, "method": "tcca", "edge": "highest"},
        {**cell, "setting": "1.3m"},
        dict(cell),  # a second column of the same setting and method
    ]
    got = edges.fit_targets(cells, tmp_path / "results" / "grid_edges")
    assert got == [
        "results/grid_edges/fits/secstr/84k/cca_bst/splitall.csv",
        "results/grid_edges/fits/secstr/1.3m/cca_bst/splitall.csv",
    ]
