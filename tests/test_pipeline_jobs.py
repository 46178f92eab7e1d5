"""The pipeline's jobs (tcca_core.pipeline.jobs), called as the scripts call them but
without Snakemake, on the NUS-WIDE look-alike of .test/ (generated into a temporary
folder; nothing here reads ../shared or the repository's data/ and results/)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from _scripts import load_script
from tcca_core.pipeline import data_job, fit_jobs, jobs, report_jobs

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("single_blas_thread")


def _fixture_writer():
    return load_script(".test/make_fixture.py")


SPLIT_CFG = {
    "dataset": "nuswide",
    "setting": "linear2",
    "load": {},
    "views": None,
    "n_labeled": None,
    "per_class": 2,
    "subset": None,
    "pool": "train",
    "fit_on": "pool",
    "n_splits": 2,
    "val_fraction": 0.2,
    "seed": 0,
}


@pytest.fixture(scope="module")
def where(tmp_path_factory):
    """A data root with the fixture's mirror, and the setting's splits."""
    tmp = tmp_path_factory.mktemp("jobs")
    mirror = tmp / "mirror"
    _fixture_writer().write(mirror)
    data = {"data_root": tmp / "data", "mirror": mirror}
    fit_jobs.draw_splits(SPLIT_CFG, tmp / "splits.json", **data)
    return tmp, data


def fit_cfg(method, params=None, split="all"):
    return {
        **SPLIT_CFG,
        "method": method,
        "split": split,
        "learner": "knn",
        "r_grid": [2, 4],
        "params": params or {},
        "kernel": "l2",
        "fit_extra": None,
        "extra_subset": None,
    }


def test_draw_splits(where):
    tmp, _ = where
    subset, splits = fit_jobs.load_splits(tmp / "splits.json")
    assert len(splits) == 2 and splits[1].index == 1
    _, one = fit_jobs.load_splits(tmp / "splits.json", "1")
    assert [s.index for s in one] == [1]
    assert (one[0].labeled == splits[1].labeled).all()
    assert len(subset) > 0


def test_a_fit_job_is_the_protocol_on_each_split(where):
    tmp, data = where
    out = tmp / "fits" / "tcca.csv"
    res = fit_jobs.run_fit_job(
        fit_cfg("tcca", {"eps": [1.0]}), tmp / "splits.json", out, threads=3, **data
    )
    written = pd.read_csv(out)
    assert list(written.columns[:3]) == ["dataset", "setting", "method"]
    assert set(written["split"]) == {0, 1} and set(written["r"]) == {2, 4}
    assert (written["threads"] == 3).all() and len(written) == len(res)
    # one split alone gives that split's rows
    one = fit_jobs.run_fit_job(
        fit_cfg("tcca", {"eps": [1.0]}, split="1"),
        tmp / "splits.json",
        tmp / "fits" / "tcca1.csv",
        **data,
    )
    cols = ["r", "k", "val_acc", "test_acc"]
    pd.testing.assert_frame_equal(
        one[cols].reset_index(drop=True),
        res[res["split"] == 1][cols].reset_index(drop=True),
    )


def test_a_fit_job_shows_a_long_fits_progress_on_the_terminal(where, monkeypatch):
    """The job's log takes over sys.stderr; the solver's progress goes to the
    process's own stderr (the terminal of a local run), for fits running longer
    than LONG_FIT_S (0 here: every fit)."""
    import io
    import sys

    tmp, data = where
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    monkeypatch.setattr(fit_jobs, "LONG_FIT_S", 0.0)
    fit_jobs.run_fit_job(
        fit_cfg("tcca", {"eps": [1.0]}, split="1"),
        tmp / "splits.json",
        tmp / "fits" / "progress.csv",
        **data,
    )
    lines = terminal.getvalue().splitlines()
    assert lines and all(
        x.startswith("nuswide/linear2 tcca split 1 TCCA: rank") for x in lines
    )
    assert any("rank 4 (2/2) done" in x for x in lines)


def test_table_from_runs_keyed_by_setting_and_method(where):
    """The table job reads the runs and the fit jobs' benchmarks by (setting,
    method), whatever the files are called."""
    tmp, data = where
    fits = []
    for method in ("bsf", "tcca"):
        path = tmp / "fits2" / f"{method}.csv"
        fit_jobs.run_fit_job(fit_cfg(method), tmp / "splits.json", path, **data)
        fits.append(path)
    runs = tmp / "runs.csv"
    fit_jobs.gather_fits(fits, runs, tmp / "gather.log")
    benchmarks = []
    for method, seconds in (("bsf", 1.5), ("tcca", 4.0)):
        b = tmp / f"any_name_{method}.tsv"
        b.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:01\t100.0\n")
        benchmarks.append({"setting": "linear2", "method": method, "benchmark": b})
    names = [
        "csv", "md", "tex", "csv_best_r", "md_best_r", "tex_best_r", "json", "cost",
        "cost_md", "cost_tex", "cost_by_r", "accuracy_png", "accuracy_pdf",
        "cost_png", "cost_pdf",
    ]  # fmt: skip
    suffix = {"png": ".png", "pdf": ".pdf", "md": ".md", "tex": ".tex", "json": ".json"}
    out = {n: tmp / "t" / (n + suffix.get(n.rsplit("_", 1)[-1], ".csv")) for n in names}
    spec = {
        "name": "t",
        "title": "T",
        "dataset": "nuswide",
        "paper": None,
        "columns": [{"setting": "linear2", "label": "two"}],
        "same_as": {"linear2": {}},
    }
    record = report_jobs.build_table([runs], benchmarks, spec, out)
    assert all(p.exists() for p in out.values())
    assert not list((tmp / "t").glob("*.part"))
    cost = pd.read_csv(out["cost"]).set_index("Method")
    assert cost.loc["BSF", "job time (s)"] == 1.5
    assert cost.loc["TCCA", "job time (s)"] == 4.0
    assert json.loads(out["json"].read_text()) == record
    assert list(pd.read_csv(out["csv"])["Method"]) == ["BSF", "TCCA"]


# ------------------------------------------------------ data that cannot be had


def _unavailable(*args, **kwargs):
    from tcca_core.datasets import DataUnavailableError

    raise DataUnavailableError(
        "ads: cannot obtain ad.data.\nSources tried:\n  - long story",
        dataset="ads",
        missing=["ad.data"],
        tried=["https://example.invalid/ad.zip (Connection refused (3 attempt(s)))"],
        hint="download https://example.invalid/ad.zip and put it in d/raw/ads/",
    )


def test_prepare_data_skips_with_one_line_or_fails_when_strict(
    tmp_path, monkeypatch, capsys
):
    import io

    from tcca_core import datasets

    monkeypatch.setattr(datasets, "prepare", _unavailable)
    term = io.StringIO()
    status = tmp_path / "results" / "data" / "ads.json"
    assert data_job.prepare_data("ads", status, data_root="d", terminal=term) == 0
    line = term.getvalue()
    assert line.count("\n") == 1 and line.startswith("Skipping data set ads: ")
    assert "tried https://example.invalid/ad.zip (Connection refused" in line
    assert "put it in d/raw/ads/ (or pass --config mirror=FOLDER" in line
    assert line.rstrip().endswith("a folder holding ads/<file>)")
    doc = json.loads(status.read_text())
    assert doc == {"dataset": "ads", "available": False, "reason": line[23:].rstrip()}
    with pytest.raises(ValueError, match="'ads' was skipped in this run: cannot"):
        data_job.read_status(status)
    # strict: an error, and no status (the job fails)
    term = io.StringIO()
    other = tmp_path / "strict.json"
    assert data_job.prepare_data(
        "ads", other, data_root="d", strict=True, terminal=term
    )
    assert "cannot be obtained (strict: the run stops)" in term.getvalue()
    assert not other.exists()


def test_an_unwritable_data_root_fails_the_prepare_job_with_one_line(tmp_path):
    """A data folder that cannot be created is one line and a failed job, not a
    traceback (a read-only data_root; here a file where the folder should be)."""
    import io

    blocker = tmp_path / "ro"
    blocker.write_text("a file where data_root's parent should be")
    term = io.StringIO()
    status = tmp_path / "ads.json"
    root = blocker / "data"
    assert data_job.prepare_data("ads", status, data_root=root, terminal=term) == 1
    line = term.getvalue()
    assert line.count("\n") == 1 and line.startswith(
        "Data set ads cannot be prepared: "
    )
    assert "Traceback" not in line and not status.exists()


def test_prepare_data_writes_the_status_of_a_prepared_data_set(where, tmp_path):
    _, data = where
    status = tmp_path / "nuswide.json"
    assert data_job.prepare_data("nuswide", status, **data) == 0
    doc = data_job.read_status(status)
    assert doc["available"] and Path(doc["manifest"]).name == "manifest.json"


def test_fit_job_log_shows_the_solvers_progress_per_rank(where, tmp_path):
    """start_logging keeps the library's INFO records: the fit job's log shows the
    solver's "rank r (i/n): ... sweeps" line for every rank of the path."""
    import logging
    import sys

    tmp, data = where
    stderr, root = sys.stderr, logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        jobs.start_logging(tmp_path / "fit.log", "fit")
        fit_jobs.run_fit_job(
            fit_cfg("tcca", {"eps": [1.0]}), tmp / "splits.json", tmp_path / "f.csv",
            **data,
        )  # fmt: skip
    finally:
        sys.stderr.close()
        sys.stderr = stderr
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.captureWarnings(False)
    log = (tmp_path / "fit.log").read_text()
    assert "tcca_core.solver.engine: rank 2 (1/2):" in log and "rank 4 (2/2):" in log
    assert "ALS sweeps" in log


def test_settings_with_one_subset_size_share_its_rows(where):
    # kernel settings that differ only in their labeled draws work on one subset,
    # so a transductive fit on it is one fit (the paper's "a random subset")
    tmp, data = where
    subsets = {}
    for name, per_class, size in [("k1", 1, 120), ("k2", 2, 120), ("s", 1, 130)]:
        cfg = {**SPLIT_CFG, "setting": name, "per_class": per_class, "subset": size}
        cfg.update(pool=None, fit_on="all")
        fit_jobs.draw_splits(cfg, tmp / f"splits_{name}.json", **data)
        subsets[name] = fit_jobs.load_splits(tmp / f"splits_{name}.json")[0]
    assert list(subsets["k1"]) == list(subsets["k2"])
    assert len(subsets["s"]) == 130 and set(subsets["s"]) != set(subsets["k1"])
