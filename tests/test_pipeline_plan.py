"""The run's plan (tcca_core.pipeline.plan), built and checked without a workflow.

- every fact the rules read is resolved once, in the library: the settings (views
  included), the fit jobs, the tables' settings and the paths;
- a job's parameters are canonical: sorted, with no ``None`` and no default value, so
  that a new optional field, or a default written out in the configuration, leaves
  every job's parameters (Snakemake's rerun trigger) as they were;
- the jobs read their parameters back with the same types;
- workflow/rules/common.smk only looks things up (at most 150 lines).
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import yaml

from tcca_core.pipeline.config_schema import check_schema
from tcca_core.pipeline.config_settings import r_bound, setting_views
from tcca_core.pipeline.plan import FitJob, SplitJob, build_plan, canonical

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
FIXTURE = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())


def checked(cfg: dict) -> dict:
    """The configuration as common.smk has it: schema checked, defaults filled in."""
    validate = pytest.importorskip("snakemake.utils").validate
    cfg = copy.deepcopy(cfg)
    check_schema(cfg, SCHEMA)
    validate(cfg, schema=str(SCHEMA))
    return cfg


def plan_of(cfg: dict, tmp_path: Path):
    cfg = checked(cfg)
    return build_plan(cfg, copy.deepcopy(cfg), [], workdir=tmp_path)


def test_the_fixture_plan(tmp_path):
    plan = plan_of(FIXTURE, tmp_path)
    assert plan.results == "results" and plan.logs == "logs"
    assert plan.datasets == ["nuswide"] and plan.tables == [
        "nuswide_linear",
        "nuswide_kernel",
    ]
    assert plan.methods == ["bsf", "ktcca", "tcca"]
    assert plan.split_labels == ["all"]  # fit_grain: method
    assert [j["fit"] for j in plan.fit_jobs("nuswide", "linear2")] == [
        "results/fits/nuswide/linear2/bsf/splitall.csv",
        "results/fits/nuswide/linear2/tcca/splitall.csv",
    ]
    assert plan.table_settings("nuswide_kernel") == ("nuswide", ["kernel2"])
    assert plan.table_runs("nuswide_linear") == ["results/runs/nuswide/linear2.csv"]
    assert plan.table_params("nuswide_linear")["same_as"] == {"linear2": {}}
    assert len(plan.table_outputs(["nuswide_linear"])) == 16
    assert plan.status("nuswide") == "results/data/nuswide.json"
    assert plan.data_inputs("nuswide", "linear2") == {"data": plan.status("nuswide")}
    assert plan.tables_of(["nuswide"]) == plan.tables and plan.tables_of([]) == []


def test_fit_params_are_canonical(tmp_path):
    plan = plan_of(FIXTURE, tmp_path)
    params = plan.fit_params("nuswide", "linear2", "tcca", "all")
    assert params == {
        "dataset": "nuswide",
        "fit_on": "pool",
        "learner": "knn",
        "method": "tcca",
        "n_splits": 2,
        "params": {"eps": [0.01, 1.0]},
        "per_class": 2,
        "pool": "train",
        "r_grid": [2, 4],
        "seed": 0,
        "setting": "linear2",
        "split": "all",
        "val_fraction": 0.2,
    }
    assert list(params) == sorted(params)  # Snakemake compares the repr
    # the kernel setting's kernel is not the default: it is kept
    kernel = plan.fit_params("nuswide", "kernel2", "ktcca", "all")
    assert kernel["kernel"] == ["chi2", "l2", "l2"] and "fit_on" not in kernel
    assert plan.split_params("nuswide", "linear2") == {
        k: params[k]
        for k in (
            "dataset",
            "fit_on",
            "n_splits",
            "per_class",
            "pool",
            "seed",
            "setting",
            "val_fraction",
        )
    }


def test_jobs_read_their_parameters_back(tmp_path):
    plan = plan_of(FIXTURE, tmp_path)
    job = plan.fit_job("nuswide", "linear2", "bsf", "all")
    assert FitJob.from_params(job.as_params()) == job
    assert job.views is None and job.kernel == "l2" and job.params == {}
    split = plan.split_job("nuswide", "linear2")
    assert SplitJob.from_params(split.as_params()) == split
    # the parameters of a run before the plan (every key, None included) still work
    full = dataclasses.asdict(job)
    assert FitJob.from_params(full) == job
    with pytest.raises(TypeError, match="unknown parameters"):
        FitJob.from_params({**full, "no_such": 1})


def test_a_new_optional_field_changes_no_parameters(tmp_path):
    """Adding a field to a job (its default None, or any default) reruns nothing."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Newer(FitJob):
        new_option: int | None = None
        new_flag: bool = False

    plan = plan_of(FIXTURE, tmp_path)
    job = plan.fit_job("nuswide", "kernel2", "ktcca", "all")
    newer = Newer(**{f.name: getattr(job, f.name) for f in dataclasses.fields(job)})
    assert canonical(newer) == job.as_params()
    assert repr(canonical(newer)) == repr(job.as_params())


def test_defaults_written_out_change_no_parameters(tmp_path):
    explicit = copy.deepcopy(FIXTURE)
    nuswide = explicit["datasets"]["nuswide"]
    nuswide["load"] = {}
    nuswide["settings"]["linear2"].update(kernel="l2", same_as={})
    nuswide["settings"]["kernel2"].update(fit_on="all")
    explicit.update(seed=0, val_fraction=0.2, post_hoc=False, pending={})
    plan, other = plan_of(FIXTURE, tmp_path), plan_of(explicit, tmp_path)
    for setting, method in [("linear2", "tcca"), ("kernel2", "ktcca")]:
        want = plan.fit_params("nuswide", setting, method, "all")
        assert other.fit_params("nuswide", setting, method, "all") == want
        assert other.split_params("nuswide", setting) == plan.split_params(
            "nuswide", setting
        )


def test_views_are_resolved_once(tmp_path):
    cfg = copy.deepcopy(FIXTURE)
    cfg["datasets"]["nuswide"]["views"] = [0, 1, 2]
    cfg["datasets"]["nuswide"]["settings"]["kernel2"]["views"] = [2, 1, 0]
    plan = plan_of(cfg, tmp_path)
    assert plan.fit_job("nuswide", "linear2", "tcca", "all").views == [0, 1, 2]
    assert plan.split_params("nuswide", "kernel2")["views"] == [2, 1, 0]
    dcfg = cfg["datasets"]["nuswide"]
    assert setting_views(dcfg, dcfg["settings"]["kernel2"]) == [2, 1, 0]


def test_the_r_bound_is_tccas(monkeypatch):
    """The configuration's r bound is TCCA's max_cp_rank, not a copy of its formula."""
    from tcca_core.solver import params

    assert r_bound("mfeat", ["tcca"], views=["zer", "mor"])[0] == 6
    monkeypatch.setattr(params, "max_cp_rank", lambda n, dims: (3, "fake"))
    assert r_bound("mfeat", ["tcca"], views=["zer", "mor"])[0] == 3


def test_strict_and_pending(tmp_path):
    cfg = copy.deepcopy(FIXTURE)
    cfg["pending"] = {"nuswide": "later"}
    cfg["skip_unavailable"] = False  # the old name of strict: true
    plan = plan_of(cfg, tmp_path)
    assert plan.strict and plan.pending == {"nuswide": "later"}
    assert "marked pending" in plan.missing_tables({})["nuswide_linear"]
    routes = {"nuswide": ("ready", "")}
    assert plan.status_files(routes) == []  # strict: a failing data set stops the run


def test_routes_and_what_a_run_says_at_its_end(tmp_path):
    plan = plan_of(FIXTURE, tmp_path)

    def availability(dataset, *, offline, root, mirror):
        return (False, "gone") if offline else (True, "")

    routes = plan.data_routes(availability)
    assert routes == {"nuswide": ("fetch", "")}
    assert plan.status_files(routes) == ["results/data/nuswide.json"]
    skipped = plan.skipped({"nuswide": ("skip", "no files")})
    assert skipped == {"nuswide": "no files"}
    assert "could not be obtained" in plan.missing_tables(skipped)["nuswide_linear"]
    text = plan.end_message(skipped, [], ["config/quick.yaml"])
    assert "Skipped data sets: nuswide" in text
    assert "--configfile config/quick.yaml" in text


def test_common_smk_only_looks_things_up():
    lines = (REPO / "workflow" / "rules" / "common.smk").read_text().splitlines()
    assert len(lines) <= 150, len(lines)


def test_settings_sharing_a_subspace_fit_it_one_after_the_other(tmp_path):
    """mfeat's 4, 6 and 8 labeled per class fit one subspace: each job runs after
    the one before (so it reads the fit from the cache); nothing else waits."""
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    plan = plan_of(cfg, tmp_path)
    fit = "results/fits/mfeat/{}/{}/splitall.csv"
    for method in ("ktcca", "kcca_bst"):
        assert plan.fit_after("mfeat", "kernel500_4", method, "all") == []
        assert plan.fit_after("mfeat", "kernel500_6", method, "all") == [
            fit.format("kernel500_4", method)
        ]
        assert plan.fit_after("mfeat", "kernel500_8", method, "all") == [
            fit.format("kernel500_6", method)
        ]
    # another subset (2,000 rows) fits another subspace
    assert plan.fit_after("mfeat", "kernel2000_4", "ktcca", "all") == []
    assert plan.fit_after("mfeat", "linear6", "tcca", "all") == [
        fit.format("linear4", "tcca")
    ]
    assert plan.fit_after("nuswide", "linear6", "tcca", "all") == [
        "results/fits/nuswide/linear4/tcca/splitall.csv"  # fitted on the pool
    ]
    # fit rows drawn with the split (Ads: all but validation), or another extra set
    assert plan.fit_after("ads", "l100", "tcca", "all") == []
    assert plan.fit_after("secstr", "1.3m", "tcca", "all") == []
    # a changed method parameter is another subspace
    cfg["datasets"]["mfeat"]["settings"]["kernel500_6"]["methods"] = {
        "ktcca": {"eps": [1.0]}
    }
    plan = plan_of(cfg, tmp_path)
    assert plan.fit_after("mfeat", "kernel500_6", "ktcca", "all") == []
    assert plan.fit_after("mfeat", "kernel500_8", "ktcca", "all") == [
        fit.format("kernel500_4", "ktcca")
    ]
