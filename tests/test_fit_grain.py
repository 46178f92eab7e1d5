"""The point fit grain: one fit job per grid point, gathered into the same rows.

- a method's grid points are the registry's expansion of its options, the one that
  ``run_method`` fits (SSMVD's 25 (lambda1, lambda2) pairs with ``ssmvd: {}``);
- at ``fit_grain: point`` the plan makes one job per grid point (``splitall.p03``),
  whose parameters are that point's values; a method with one point keeps its one
  job, unchanged; a point job follows the earlier setting's job of the same point;
- point jobs, gathered, give the method job's rows (every column but the costs),
  and the selection picks the same (TCCA, CCA (BST), SSMVD);
- the committed rows bundle point jobs' files and gives them back.

On the NUS-WIDE look-alike of .test/ (generated into a temporary folder) and on
the plans of config/config.yaml; the whole workflow at both grains is
tests/test_workflow.py::test_e2e_point_grain_gives_the_method_grains_rows.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml
from threadpoolctl import threadpool_limits

from _scripts import load_script
from tcca_core.pipeline import fit_jobs
from tcca_core.pipeline.config_schema import check_schema
from tcca_core.pipeline.plan import build_plan, parse_label, point_label
from tcca_core.pipeline.rows import read_cell, unbundle, write_rows
from tcca_core.protocol import select, select_per_split
from tcca_core.protocol.run import _grid_points
from tcca_core.registry import LAMBDA_GRID, METHODS

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
FIXTURE = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
FULL = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
#: The columns that say what a fit cost, not what it gave: they differ between runs.
COSTS = ("fit_s", "peak_mb", "fit_shared", "threads")


def plan_of(cfg: dict, tmp_path: Path, **changes):
    validate = pytest.importorskip("snakemake.utils").validate
    cfg = copy.deepcopy(cfg) | changes
    check_schema(cfg, SCHEMA)
    validate(cfg, schema=str(SCHEMA))
    return build_plan(cfg, copy.deepcopy(cfg), [], workdir=tmp_path)


# ------------------------------------------------------------------ grid points


def test_grid_points_are_the_registrys_one_expansion():
    ssmvd = METHODS["ssmvd"].grid_points()
    assert len(ssmvd) == len(LAMBDA_GRID) ** 2 == 25
    assert ssmvd[:2] == [
        {"lambda1": LAMBDA_GRID[0], "lambda2": LAMBDA_GRID[0]},
        {"lambda1": LAMBDA_GRID[0], "lambda2": LAMBDA_GRID[1]},
    ]
    options = {"eps": [1e-2, 1.0], "warm_start": [True], "max_iter": 150}
    tcca = METHODS["tcca"].grid_points(options)
    assert tcca == [
        {"eps": 1e-2, "warm_start": True, "max_iter": 150},
        {"eps": 1.0, "warm_start": True, "max_iter": 150},
    ]
    # what run_method fits, arrays of values included
    import numpy as np

    assert _grid_points(METHODS["tcca"], {**options, "eps": np.array([1e-2, 1.0])}) == (
        tcca
    )
    with pytest.raises(ValueError, match="has no parameter 'lambda1'"):
        METHODS["tcca"].grid_points({"lambda1": [1.0]})
    with pytest.raises(ValueError, match="the grid of 'eps' is empty"):
        METHODS["tcca"].grid_points({"eps": []})


def test_point_labels_sort_in_the_grids_order_and_parse_back():
    assert point_label(3, 10) == "p03" and point_label(24, 25) == "p24"
    assert point_label(7, 120) == "p007"
    labels = [f"all.{point_label(k, 25)}" for k in range(25)]
    assert sorted(labels) == labels
    assert parse_label("all.p03") == ("all", 3)
    assert parse_label("all") == ("all", None) and parse_label("4") == ("4", None)
    for bad in ("p03", "all.03", "all.p", "x"):
        with pytest.raises(ValueError, match="is not a split label"):
            parse_label(bad)


# ------------------------------------------------------------------- the plan


def test_the_plan_cuts_each_method_into_its_grid_points(tmp_path):
    plan = plan_of(FIXTURE, tmp_path, fit_grain="point")
    assert plan.split_labels == ["all"]
    assert plan.fit_labels("nuswide", "linear2", "tcca") == ["all.p00", "all.p01"]
    assert plan.fit_labels("nuswide", "linear2", "bsf") == ["all"]
    assert [j["fit"] for j in plan.fit_jobs("nuswide", "linear2")] == [
        "results/fits/nuswide/linear2/bsf/splitall.csv",
        "results/fits/nuswide/linear2/tcca/splitall.p00.csv",
        "results/fits/nuswide/linear2/tcca/splitall.p01.csv",
    ]
    assert plan.fit_jobs("nuswide", "linear2")[2]["benchmark"] == (
        "results/benchmarks/fit/nuswide/linear2/tcca/splitall.p01.tsv"
    )
    job = plan.fit_job("nuswide", "linear2", "tcca", "all.p01")
    assert job.split == "all" and job.params == {"eps": [1.0]}
    # a method with one grid point keeps the method grain's job, parameters and all:
    # a run switched to the point grain redoes none of them
    method = plan_of(FIXTURE, tmp_path)
    for setting, m in (("linear2", "bsf"), ("kernel2", "ktcca")):
        assert plan.fit_params("nuswide", setting, m, "all") == method.fit_params(
            "nuswide", setting, m, "all"
        )
    with pytest.raises(ValueError, match="no grid point 'all.p02'; the method has 2"):
        plan.fit_job("nuswide", "linear2", "tcca", "all.p02")
    with pytest.raises(ValueError, match="no grid point 'all.p00'"):
        plan.fit_job("nuswide", "linear2", "bsf", "all.p00")


def test_ssmvds_pairs_are_grid_points_of_the_plan(tmp_path):
    """``ssmvd: {}`` in the configuration: the 25 pairs come from the registry."""
    plan = plan_of(FULL, tmp_path, fit_grain="point")
    labels = plan.fit_labels("mfeat", "linear4", "ssmvd")
    assert labels == [f"all.p{k:02d}" for k in range(25)]
    job = plan.fit_job("mfeat", "linear4", "ssmvd", "all.p07")
    assert job.params == {"lambda1": [LAMBDA_GRID[1]], "lambda2": [LAMBDA_GRID[2]]}
    # the option that is no grid parameter stays with every point
    secstr = plan.fit_job("secstr", "84k", "ssmvd", "all.p24")
    assert secstr.params == {"lambda1": [1.0], "lambda2": [1.0], "subset": 10000}
    tcca = plan.fit_job("secstr", "84k", "tcca", "all")  # one point: one job
    assert plan.fit_labels("secstr", "84k", "tcca") == ["all"]
    assert tcca.params == FULL["method_sets"]["secstr_84k"]["tcca"]


def test_a_point_job_follows_the_earlier_settings_job_of_its_point(tmp_path):
    plan = plan_of(FULL, tmp_path, fit_grain="point")
    fit = "results/fits/mfeat/{}/ktcca/splitall.{}.csv"
    assert plan.fit_after("mfeat", "kernel2000_4", "ktcca", "all.p03") == []
    assert plan.fit_after("mfeat", "kernel2000_6", "ktcca", "all.p03") == [
        fit.format("kernel2000_4", "p03")
    ]
    assert plan.fit_after("mfeat", "kernel2000_8", "ktcca", "all.p09") == [
        fit.format("kernel2000_6", "p09")
    ]
    # Ads fits on rows drawn with the split: nothing to share
    assert plan.fit_after("ads", "l100", "ssmvd", "all.p03") == []
    # another grid numbers the same eps otherwise: the point's values decide
    cfg = copy.deepcopy(FULL)
    cfg["datasets"]["mfeat"]["settings"]["kernel500_6"]["methods"] = {
        "ktcca": {"eps": [1e-3, 1e-2]}
    }
    plan = plan_of(cfg, tmp_path, fit_grain="point")
    fit = "results/fits/mfeat/{}/ktcca/splitall.{}.csv"
    assert plan.fit_after("mfeat", "kernel500_6", "ktcca", "all.p01") == [
        fit.format("kernel500_4", "p05")  # 1e-2 of 1e-7, ..., 1e2
    ]
    assert plan.fit_after("mfeat", "kernel500_8", "ktcca", "all.p04") == [
        fit.format("kernel500_6", "p00")  # 1e-3, the nearest earlier setting's
    ]
    assert plan.fit_after("mfeat", "kernel500_8", "ktcca", "all.p00") == [
        fit.format("kernel500_4", "p00")  # 1e-7: not in kernel500_6's grid
    ]
    # a grid of one point is one job, after the point job of its eps
    cfg["datasets"]["mfeat"]["settings"]["kernel500_6"]["methods"] = {
        "ktcca": {"eps": [1e-2]}
    }
    plan = plan_of(cfg, tmp_path, fit_grain="point")
    assert plan.fit_labels("mfeat", "kernel500_6", "ktcca") == ["all"]
    assert plan.fit_after("mfeat", "kernel500_6", "ktcca", "all") == [
        fit.format("kernel500_4", "p05")
    ]
    assert plan.fit_after("mfeat", "kernel500_8", "ktcca", "all.p05") == [
        "results/fits/mfeat/kernel500_6/ktcca/splitall.csv"
    ]


def test_a_bad_fit_grain_is_refused_naming_the_grains(tmp_path):
    from tcca_core.pipeline.config import FIT_GRAINS, ConfigError, value_problems

    schema = yaml.safe_load(SCHEMA.read_text())
    assert schema["properties"]["fit_grain"]["enum"] == list(FIT_GRAINS)
    cfg = {**copy.deepcopy(FIXTURE), "fit_grain": "pont"}
    with pytest.raises(ConfigError) as err:
        check_schema(cfg, SCHEMA)
    assert (
        "invalid config: fit_grain: 'pont' is not one of method, split, point "
        "(did you mean 'point'?)" in str(err.value)
    )
    # a caller that skips the schema meets the same refusal
    (key, why), *_ = value_problems({**cfg, "tables": {}}, {})
    assert key == "fit_grain" and why.startswith("'pont' is not a fit grain; choose")
    assert "point (one job per data set x setting x method x grid point" in why


# -------------------------------------------------------------- the same rows

#: The fixture's linear setting with three kinds of grid: a rank path per eps
#: (TCCA), pairs fitted per eps (CCA (BST)) and SSMVD's one fit per r that serves
#: every (lambda1, lambda2) at the method grain.
GRIDS = {
    "tcca": {"eps": [1e-2, 1.0]},
    "cca_bst": {"eps": [1e-2, 1.0]},
    "ssmvd": {"lambda1": [0.0, 1e-1], "lambda2": [1e-2, 1.0]},
}


@pytest.fixture(scope="module")
def grains(tmp_path_factory):
    """The fixture's data; its linear setting's fit jobs at both grains, gathered."""
    tmp = tmp_path_factory.mktemp("grains")
    load_script(".test/make_fixture.py").write(tmp / "mirror")
    data = {"data_root": tmp / "data", "mirror": tmp / "mirror"}
    cfg = copy.deepcopy(FIXTURE)
    cfg["datasets"]["nuswide"]["settings"]["linear2"]["methods"] = GRIDS
    plans = {g: plan_of(cfg, tmp, fit_grain=g) for g in ("method", "point")}
    splits = tmp / "splits.json"
    fit_jobs.draw_splits(
        plans["method"].split_params("nuswide", "linear2"), splits, **data
    )
    runs = {}
    with threadpool_limits(limits=1, user_api="blas"):  # tiny matrices, shared cores
        for grain, plan in plans.items():
            files = []
            for job in plan.fit_jobs("nuswide", "linear2"):
                out = tmp / grain / Path(job["fit"]).relative_to("results")
                cfg = plan.fit_params("nuswide", "linear2", job["method"], job["split"])
                fit_jobs.run_fit_job(cfg, splits, out, **data)
                files.append(out)
            runs_csv = tmp / grain / "runs.csv"
            fit_jobs.gather_fits(files, runs_csv, tmp / grain / "log")
            runs[grain] = pd.read_csv(runs_csv)
    return tmp, runs


def test_point_jobs_gather_into_the_method_jobs_rows(grains):
    tmp, runs = grains
    method, point = runs["method"], runs["point"]
    assert sorted(p.name for p in (tmp / "point/fits/nuswide/linear2/ssmvd").iterdir())
    assert len(list((tmp / "point/fits/nuswide/linear2/ssmvd").iterdir())) == 4
    keep = [c for c in method.columns if c not in COSTS]
    # TCCA and CCA (BST) in the same order; SSMVD's rows come point by point
    # where its method job lists every pair at each r: the same rows
    same = method["method"] != "ssmvd"
    pd.testing.assert_frame_equal(
        point.loc[same, keep].reset_index(drop=True),
        method.loc[same, keep].reset_index(drop=True),
    )
    by = ["split", "r", "lambda1", "lambda2", "k"]
    ssmvd = [f[f["method"] == "ssmvd"].sort_values(by)[keep] for f in (method, point)]
    pd.testing.assert_frame_equal(
        ssmvd[1].reset_index(drop=True), ssmvd[0].reset_index(drop=True)
    )
    # only the cost columns say how: one SSMVD fit served every pair
    assert method.loc[~same, "fit_shared"].all()
    assert not point.loc[~same, "fit_shared"].any()
    pd.testing.assert_frame_equal(select(point), select(method))
    chosen = [select_per_split(f).drop(columns=list(COSTS)) for f in (point, method)]
    pd.testing.assert_frame_equal(*chosen)


def test_the_rows_bundle_takes_point_jobs(grains, tmp_path):
    """Point jobs' fit and benchmark files (``tcca/splitall.p01.csv``) are bundled
    and written back as they were."""
    tmp, _ = grains
    fits = sorted((tmp / "point/fits/nuswide/linear2").glob("*/*.csv"))
    assert "tcca/splitall.p01.csv" in {f"{f.parent.name}/{f.name}" for f in fits}
    bench = []
    for f in fits:
        b = tmp_path / "b" / f.parent.name / f.with_suffix(".tsv").name
        b.parent.mkdir(parents=True, exist_ok=True)
        b.write_text("s\tmax_rss\n1.5\t100.0\n")
        bench.append(b)
    run = tmp_path / "run"
    rows = run / "rows/nuswide/linear2.csv.gz"
    n = write_rows(
        fits,
        rows,
        benchmarks=bench,
        benchmarks_out=run / "rows/nuswide/linear2.benchmarks.csv",
    )
    assert n == sum(len(pd.read_csv(f)) for f in fits)
    written = unbundle(run, "nuswide", "linear2", tmp_path / "back")
    assert sorted(p.relative_to(tmp_path / "back").as_posix() for p in written) == [
        f"fits/nuswide/linear2/{f.parent.name}/{f.name}" for f in fits
    ]
    assert (
        tmp_path / "back/benchmarks/fit/nuswide/linear2/tcca/splitall.p01.tsv"
    ).is_file()
    cell = read_cell(run, "nuswide/linear2/tcca")
    direct = pd.concat(
        [pd.read_csv(f) for f in fits if f.parent.name == "tcca"], ignore_index=True
    )
    pd.testing.assert_frame_equal(cell, direct)
