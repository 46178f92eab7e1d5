"""tcca_core.reporting: the tables, figures and summary of the pipeline, without
Snakemake, on hand-made result rows whose right answers are known."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tcca_core import reporting
from tcca_core.protocol import RESULT_COLUMNS


def rows(
    setting, method, split, r, val, test, *, eps=None, k=None, fit_s=1.0, peak=10.0
):
    row = dict.fromkeys(RESULT_COLUMNS)
    row.update(
        setting=setting,
        method=method,
        learner="rls",
        split=split,
        r=r,
        eps=eps,
        k=k,
        lambda1=None,
        lambda2=None,
        val_acc=val,
        test_acc=test,
        fit_s=fit_s,
        peak_mb=peak,
    )
    return row


@pytest.fixture
def runs():
    """Two settings; TCCA on r in {5, 10}, BSF without r; 3 splits."""
    out = []
    for split, (v5, t5, v10, t10) in enumerate(
        [(0.6, 0.50, 0.7, 0.60), (0.8, 0.70, 0.7, 0.65), (0.6, 0.55, 0.9, 0.62)]
    ):
        for setting in ("a", "b"):
            out += [
                rows(
                    setting, "tcca", split, 5, v5, t5, fit_s=0.1 * (split + 1), peak=5
                ),
                rows(setting, "tcca", split, 10, v10, t10, fit_s=0.2, peak=8),
            ]
        out.append(rows("a", "bsf", split, None, 0.5, 0.4 + 0.01 * split))
    return pd.DataFrame(out)


def test_reading_a_is_validation_selected(runs):
    cells = reporting.accuracy_cells(runs, "val").set_index(["setting", "method"])
    # split 0: r=10 (0.7 > 0.6) -> 60; split 1: r=5 -> 70; split 2: r=10 -> 62
    tcca = cells.loc[("a", "tcca")]
    assert tcca["mean"] == pytest.approx(np.mean([60, 70, 62]))
    assert tcca["std"] == pytest.approx(np.std([60, 70, 62], ddof=1))
    assert tcca["r"] == "10/5/10" and tcca["n_splits"] == 3
    assert cells.loc[("a", "bsf"), "r"] == ""
    assert cells.loc[("a", "bsf"), "mean"] == pytest.approx(41.0)


def test_reading_b_is_best_mean_over_r(runs):
    cells = reporting.accuracy_cells(runs, "best_r").set_index(["setting", "method"])
    # mean test at r=5: 58.33, at r=10: 62.33 -> r = 10
    assert cells.loc[("a", "tcca"), "mean"] == pytest.approx(np.mean([60, 65, 62]))
    assert cells.loc[("a", "tcca"), "r"] == "10"


def test_accuracy_table_layout_paper_columns_and_same_as(runs):
    cells = reporting.accuracy_cells(runs, "val")
    columns = [
        {"setting": "a", "label": "84K", "paper": "84K"},
        {"setting": "b", "label": "1.3M", "paper": "1.3M"},
    ]
    table, records = reporting.accuracy_table(
        cells, columns, paper="secstr", same_as={"b": {"bsf": "a"}}
    )
    t = table.set_index("Method")
    assert list(t.index) == [
        "BSF", "CAT", "CCA (BST)", "CCA (AVG)", "CCA-LS", "DSE", "SSMVD", "TCCA",
    ]  # fmt: skip
    assert list(table.columns) == [
        "Method", "84K", "84K r", "84K (paper)", "84K diff",
        "1.3M", "1.3M r", "1.3M (paper)", "1.3M diff",
    ]  # fmt: skip
    assert t.loc["TCCA", "84K"] == reporting.format_pm(
        64.0, np.std([60, 70, 62], ddof=1)
    )
    assert t.loc["TCCA", "84K (paper)"] == "62.36 ± 1.27"
    assert t.loc["TCCA", "84K diff"] == "+1.64"
    # BSF in the 1.3M column is the 84K result (the paper's merged cell)
    assert t.loc["BSF", "1.3M"] == t.loc["BSF", "84K"] == "41.00 ± 1.00"
    # DSE is not attempted on 1.3M in the paper, and not run here at all
    assert t.loc["DSE", "1.3M"] == "not attempted"
    assert t.loc["DSE", "84K"] == "not run" and t.loc["DSE", "84K diff"] == ""
    rec = {(r["method"], r["column"]): r for r in records}
    assert rec[("bsf", "1.3M")]["result_of_setting"] == "a"
    assert rec[("tcca", "84K")]["diff"] == pytest.approx(64.0 - 62.36)
    assert rec[("dse", "1.3M")]["paper_note"] == "not attempted"


def test_accuracy_table_without_paper(runs):
    cells = reporting.accuracy_cells(runs, "val")
    table, _ = reporting.accuracy_table(cells, [{"setting": "a", "label": "N = 500"}])
    assert list(table.columns) == ["Method", "N = 500", "N = 500 r"]
    assert list(table["Method"]) == ["BSF", "TCCA"]


def test_paper_numbers_match_the_transcription():
    p = reporting.PAPER_TABLES
    assert p["secstr"]["1.3M"]["tcca"] == (64.42, 1.70)
    assert p["ads"]["100"]["cca_avg"] == (93.84, 0.85)
    assert p["nuswide_linear"]["8"]["ssmvd"] == (23.79, 1.30)
    assert p["nuswide_kernel"]["6"]["ktcca"] == (25.18, 0.58)
    assert len(p["nuswide_kernel"]["4"]) == 5 and len(p["nuswide_linear"]["4"]) == 8


def test_markdown_and_latex(tmp_path, runs):
    table, _ = reporting.accuracy_table(
        reporting.accuracy_cells(runs, "val"),
        [{"setting": "a", "label": "#labeled = 4", "paper": "100"}],
        paper="ads",
    )
    paths = {e: tmp_path / f"t.{e}" for e in ("csv", "md", "tex")}
    reporting.write_table(table, **paths, title="A & B_1", label="tab:x", notes=["n%"])
    md = paths["md"].read_text()
    header = [c.strip() for c in md.splitlines()[2].strip("|").split("|")]
    assert header[:2] == ["Method", "#labeled = 4"]
    assert md.splitlines()[3].startswith("|:--") and md.splitlines()[3].endswith(":|")
    tex = paths["tex"].read_text()
    assert r"\caption{A \& B\_1}" in tex and r"\#labeled" in tex and r"n\%" in tex
    assert r"$\pm$" in tex and "±" not in tex
    assert pd.read_csv(paths["csv"]).shape == table.shape


def test_cost_by_r_and_at_selected(runs):
    by_r = reporting.cost_by_r(runs).set_index(["setting", "method", "r"])
    assert by_r.loc[("a", "tcca", 5), "fit_s"] == pytest.approx(0.2)
    assert by_r.loc[("a", "tcca", 5), "fit_s_std"] == pytest.approx(0.1)
    assert by_r.loc[("a", "bsf", 0), "n_splits"] == 3
    sel = reporting.cost_at_selected(runs).set_index(["setting", "method"])
    # selected r: 10, 5, 10 -> fit_s 0.2, 0.2, 0.2; peak 8, 5, 8
    assert sel.loc[("a", "tcca"), "fit_s"] == pytest.approx(0.2)
    assert sel.loc[("a", "tcca"), "peak_mb"] == pytest.approx(7.0)
    assert sel.loc[("a", "tcca"), "r"] == "10/5/10"


def test_job_costs_and_cost_table(tmp_path, runs):
    files = []
    for i, (s, rss) in enumerate([(3.0, 100.0), (5.0, 120.0)]):
        f = tmp_path / f"b{i}.tsv"
        f.write_text(
            "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
            f"{s}\t0:00:0{int(s)}\t{rss}\t1\t1\t1\t0\t0\t0\t1\n"
        )
        files.append(f)
    jobs = reporting.job_costs({("a", "tcca"): files})
    assert jobs.loc[0, "job_s"] == pytest.approx(4.0)
    assert jobs.loc[0, "job_max_rss_mb"] == pytest.approx(110.0)
    table = reporting.cost_table(
        reporting.cost_at_selected(runs), jobs, [{"setting": "a", "label": "A"}],
        threads=2, machine="box",
    )  # fmt: skip
    t = table.set_index("Method")
    assert list(t.index) == ["BSF", "TCCA"]
    assert t.loc["TCCA", "job time (s)"] == "4.0 ± 1.4"
    assert t.loc["TCCA", "threads"] == 2 and t.loc["TCCA", "machine"] == "box"


def test_figures_are_written(tmp_path, runs):
    cols = [{"setting": "a", "label": "A"}, {"setting": "b", "label": "B"}]
    acc = [tmp_path / "acc.png", tmp_path / "acc.pdf"]
    reporting.plot_accuracy(reporting.accuracy_curves(runs), cols, acc, title="t",
                            same_as={"b": {"bsf": "a"}})  # fmt: skip
    cost = [tmp_path / "cost.png", tmp_path / "cost.pdf"]
    reporting.plot_cost(reporting.cost_by_r(runs), cols, cost, title="t", subtitle="s")
    for p in acc + cost:
        assert p.stat().st_size > 5_000
    # no timestamps: the same figure twice gives the same bytes
    again = [tmp_path / "again.png", tmp_path / "again.pdf"]
    reporting.plot_accuracy(reporting.accuracy_curves(runs), cols, again, title="t",
                            same_as={"b": {"bsf": "a"}})  # fmt: skip
    assert again[0].read_bytes() == acc[0].read_bytes()
    assert again[1].read_bytes() == acc[1].read_bytes()


def test_summary_and_provenance(tmp_path, runs):
    cells = reporting.accuracy_cells(runs, "val")
    spec = {"title": "T", "dataset": "d", "paper": None,
            "columns": [{"setting": "a", "label": "A"}]}  # fmt: skip
    _, records = reporting.accuracy_table(cells, spec["columns"])
    record = reporting.table_record("t", spec, {"val": records}, threads=1)
    prov = reporting.provenance({"seed": 3, "x": [1]}, repo=tmp_path, threads=1)
    assert prov["git"] == {"commit": None, "dirty": None}  # not a repository
    assert prov["seed"] == 3 and prov["versions"]["numpy"] == np.__version__
    summary = reporting.build_summary([record], prov)
    text = json.dumps(summary)  # JSON-serialisable, no NaN
    assert "NaN" not in text
    assert summary["tables"]["t"]["accuracy"]["val"][0]["method"] in {"bsf", "tcca"}


def test_format_pm():
    assert reporting.format_pm(62.357, 1.2749) == "62.36 ± 1.27"
    assert reporting.format_pm(50.0, float("nan")) == "50.00"
    assert reporting.format_pm(float("nan"), 1.0) == "n/a"


def test_git_commit_is_dirty_only_outside_the_published_outputs(tmp_path):
    import subprocess

    from tcca_core.reporting import git_commit

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results").mkdir()
    for name in ("results/summary.json", "REPRODUCTION.md", "code.py"):
        (tmp_path / name).write_text("a\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    assert git_commit(tmp_path)["dirty"] is False
    (tmp_path / "results/summary.json").write_text("b\n")
    (tmp_path / "REPRODUCTION.md").write_text("b\n")
    assert git_commit(tmp_path / "results")["dirty"] is False
    (tmp_path / "code.py").write_text("b\n")
    assert git_commit(tmp_path / "results")["dirty"] is True
