"""Every published number recomputed from the committed per-fit rows.

A complete published folder is built here as a run builds it, by the pipeline's own
functions (gather_fits, the rows rule's write_rows, build_table, write_summary), from
made-up fit rows of the .test configuration; then what a clone does not have (fits,
gathered runs, benchmarks) is deleted, and ``tcca_core.pipeline.published`` must
recompute every number from ``rows/`` alone:

- a consistent folder passes;
- one row's accuracy altered: the check fails naming the cell, with the committed
  mean and the recomputed one, which is the committed plus the change over the
  splits (computed here, not by the checker);
- a rows file missing fails ("no committed rows for ..."), unless allowed; a file
  that is not a gzip CSV is refused with one clear line;
- the rows bundle is deterministic (gzip without time or name) and gives back each
  fit file's cells exactly;
- an investigation script (the repository's ``_common`` helpers) is rerun on the
  committed rows of its runs;
- ``snakemake check_published`` and ``python -m tcca_core.pipeline.published`` run it;
- the repository's own ``results/`` is checked once rows are committed there.
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import gzip
import io
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from _scripts import load_script
from _snakemake import REPO, SNAKEFILE, SNAKEMAKE, snakemake
from tcca_core._io import write_csv
from tcca_core.pipeline.config_schema import check_schema
from tcca_core.pipeline.fit_jobs import gather_fits
from tcca_core.pipeline.plan import build_plan
from tcca_core.pipeline.published import (
    INVESTIGATIONS,
    RUNS,
    Report,
    _check_investigations,
    check_published,
    first_difference,
)
from tcca_core.pipeline.report_jobs import build_table, write_summary
from tcca_core.pipeline.rows import (
    BENCHMARKS,
    ROWS,
    RowsError,
    bundle_run,
    read_bundle,
    read_cell,
    read_rows,
    row_cells,
    unbundle,
    write_rows,
)
from tcca_core.protocol import select_per_split

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
FIXTURE = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
COLUMNS = (
    "dataset setting method learner split seed r r_max r_capped dim view pair eps "
    "lambda1 lambda2 k gamma params val_acc test_acc n_labeled n_validation n_test "
    "n_fit fit_s peak_mb fit_shared threads"
).split()
BENCH = (
    "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time"
)


def checked_config() -> dict:
    """The fixture configuration as common.smk has it: defaults filled in."""
    validate = pytest.importorskip("snakemake.utils").validate
    cfg = copy.deepcopy(FIXTURE)
    check_schema(cfg, SCHEMA)
    validate(cfg, schema=str(SCHEMA))
    return cfg


def fit_rows(dataset, setting, method, rng) -> pd.DataFrame:
    """Made-up rows of one fit job (both splits) in the fit files' format.

    Accuracies on a coarse grid (ties, which the selection breaks by the rows'
    order), costs with all 17 digits, and a capped r (no accuracy) for TCCA.
    """
    rows = []
    eps = {"bsf": [None], "tcca": [1e-2, 1.0], "ktcca": [1e-2]}[method]
    for split in (0, 1):
        for e in eps:
            units = [("view", v) for v in range(3)] if method == "bsf" else [(None, 0)]
            r_grid = [None] if method == "bsf" else [2, 4, 8]
            for kind, unit in units:
                for r in r_grid:
                    capped = r == 8
                    fit_s, peak = rng.random() * 3, rng.random() * 50
                    for k in [None] if capped else [1, 2, 3]:
                        rows.append(
                            {
                                "dataset": dataset, "setting": setting,
                                "method": method, "learner": "knn", "split": split,
                                "seed": split, "r": r, "r_max": None if r is None else 6,
                                "r_capped": capped, "dim": 3 * (r or 5),
                                "view": unit if kind == "view" else None, "pair": None,
                                "eps": math.nan if e is None else e,
                                "lambda1": math.nan, "lambda2": math.nan, "k": k,
                                "gamma": math.nan,
                                "params": json.dumps({} if e is None else {"eps": e}),
                                "val_acc": math.nan if capped else rng.integers(0, 8) / 8,
                                "test_acc": math.nan if capped else rng.integers(0, 64) / 64,
                                "n_labeled": 20, "n_validation": 16, "n_test": 64,
                                "n_fit": 80, "fit_s": math.nan if capped else fit_s,
                                "peak_mb": math.nan if capped else peak,
                                "fit_shared": False, "threads": 1,
                            }
                        )  # fmt: skip
    df = pd.DataFrame(rows, columns=COLUMNS)
    for c in ("r", "r_max", "view", "k"):
        df[c] = df[c].astype("Int64")
    return df


def build_published(root: Path) -> Path:
    """A run of the fixture configuration in ``root/results``, made by the pipeline's
    functions from made-up fit rows, then cut to what is committed."""
    cfg = checked_config()
    plan = build_plan(cfg, None, [], workdir=root)
    folder = root / "results"
    plan = dataclasses.replace(plan, run={**plan.run, "results": str(folder)})
    rng = np.random.default_rng(7)
    for dataset in plan.datasets:
        for setting in plan.settings[dataset]:
            jobs = plan.fit_jobs(dataset, setting)
            for job in jobs:
                write_csv(fit_rows(dataset, setting, job["method"], rng), job["fit"])
                wall = 10 + rng.random() * 20
                line = (
                    f"{wall:.4f}\t0:00:{int(wall):02d}\t{150 + rng.random() * 50:.2f}"
                )
                Path(job["benchmark"]).parent.mkdir(parents=True, exist_ok=True)
                Path(job["benchmark"]).write_text(
                    f"{BENCH}\n{line}\t356.15\t107.70\t113.91\t0.01\t0.10\t16.11\t3.29\n"
                )
            gather_fits(
                plan.setting_fits(dataset, setting),
                plan.path("runs/{d}/{s}.csv", d=dataset, s=setting),
                root / "logs" / f"gather_{setting}.log",
            )
            where = {"dataset": dataset, "setting": setting}
            write_rows(
                plan.setting_fits(dataset, setting),
                plan.path(ROWS, **where),
                benchmarks=[j["benchmark"] for j in jobs],
                benchmarks_out=plan.path(BENCHMARKS, **where),
            )
    for table in plan.tables:
        out = {
            k: folder / f.format(table=table)
            for k, f in {
                "csv": "tables/{table}.csv", "md": "tables/{table}.md",
                "tex": "tables/{table}.tex", "csv_best_r": "tables/{table}_best_r.csv",
                "md_best_r": "tables/{table}_best_r.md",
                "tex_best_r": "tables/{table}_best_r.tex",
                "json": "tables/{table}.json", "cost": "tables/{table}_cost.csv",
                "cost_md": "tables/{table}_cost.md",
                "cost_tex": "tables/{table}_cost.tex",
                "cost_by_r": "tables/{table}_cost_by_r.csv",
            }.items()
        }  # fmt: skip
        build_table(
            plan.table_runs(table),
            plan.table_jobs(table),
            plan.table_params(table),
            out,
        )
    write_summary(
        plan.table_summaries(plan.tables),
        plan.summary,
        config=plan.provenance_config,
        workflow_dir=REPO,
        run={**plan.run, "results": "results"},
    )
    for gone in ("fits", "runs", "benchmarks"):  # not committed
        shutil.rmtree(folder / gone)
    return folder


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return build_published(tmp_path_factory.mktemp("published"))


@pytest.fixture
def published(pristine, tmp_path) -> Path:
    """A copy of the published folder, free to alter."""
    shutil.copytree(pristine, tmp_path / "results")
    return tmp_path / "results"


def rewrite_bundle(path: Path, change) -> None:
    """Apply ``change(header, rows)`` to a bundle's cells and write it back."""
    with gzip.open(path, "rt", encoding="utf-8", newline="") as fh:
        table = list(csv.reader(fh))
    header, rows = table[0], table[1:]
    change(header, rows)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    with gzip.GzipFile(path, "wb", mtime=0) as gz:
        gz.write(buf.getvalue().encode())


# ------------------------------------------------------------------------ tables


def test_a_consistent_folder_passes(published):
    report = check_published(published)
    assert report.ok, report.text()
    assert report.problems == [] and report.missing == []
    assert {c.split(":")[0] for c in report.checked} == {
        "table nuswide_linear",
        "table nuswide_kernel",
    }


def test_one_altered_accuracy_fails_naming_the_cell(published):
    bundle = published / "rows/nuswide/linear2.csv.gz"
    rows = read_rows(bundle)
    # the row validation selects for TCCA on split 0: its test accuracy is the
    # split's contribution to the cell's mean (reading A)
    pick = select_per_split(rows[rows["method"] == "tcca"], by=["method"])
    chosen = pick[pick["split"] == 0].iloc[0]
    same = (
        (rows["method"] == "tcca")
        & (rows["split"] == 0)
        & (rows["r"] == chosen["r"])
        & (rows["eps"] == chosen["eps"])
        & (rows["k"] == chosen["k"])
    )
    assert same.sum() == 1
    line = int(np.flatnonzero(same)[0])
    new = 1.0 if chosen["test_acc"] < 0.5 else 0.0

    def change(header, body):
        body[line][header.index("test_acc")] = repr(new)

    rewrite_bundle(bundle, change)
    report = check_published(published)
    assert not report.ok
    summary = json.loads((published / "summary.json").read_text())
    committed = next(
        r["mean"]
        for r in summary["tables"]["nuswide_linear"]["accuracy"]["val"]
        if r["method"] == "tcca"
    )
    first = report.problems[0]
    cell = (
        "tables.nuswide_linear.accuracy.val[setting='linear2', "
        "column='#labeled = 2', method='tcca'].mean"
    )
    assert first.startswith(f"{published / 'summary.json'}: {cell}: committed "), first
    got = re.search(r"committed (\S+), recomputed (\S+)$", first)
    assert float(got[1]) == committed
    # two splits: the mean moves by half the change, in points
    expected = committed + 100 * (new - chosen["test_acc"]) / 2
    assert float(got[2]) == pytest.approx(expected, abs=1e-9)
    assert any(
        p.startswith(f"{published / 'tables/nuswide_linear.csv'}: row 'TCCA', column")
        for p in report.problems
    ), report.problems
    # the other table's rows are untouched: it still checks
    assert any(c.startswith("table nuswide_kernel") for c in report.checked)


def test_a_missing_rows_file_fails_unless_allowed(published):
    (published / "rows/nuswide/kernel2.csv.gz").unlink()
    report = check_published(published)
    assert not report.ok
    assert report.missing == [
        "no committed rows for table nuswide_kernel (nuswide/kernel2): "
        f"{published / 'rows/nuswide/kernel2.csv.gz'}"
    ]
    assert "FAILED no committed rows for table nuswide_kernel" in report.text()
    lenient = check_published(published, strict=False)
    assert lenient.ok and lenient.missing == report.missing
    assert len(lenient.checked) == 1  # the linear table still checks


def test_missing_benchmarks_are_named(published):
    (published / "rows/nuswide/linear2.benchmarks.csv").unlink()
    report = check_published(published)
    assert not report.ok
    assert report.missing[0].startswith(
        "no committed benchmark of the fit job bsf/splitall.csv (nuswide/linear2"
    )


@pytest.mark.parametrize(
    "content, says",
    [
        (b"fit_file,method\nbsf/splitall.csv,bsf\n", "not a gzip-compressed CSV"),
        (
            gzip.compress(str(np.random.default_rng(0).random(999)).encode())[:900],
            "not a gzip-compressed CSV",
        ),
        (gzip.compress(b"\xff\xfe\x00bad"), "not a UTF-8 CSV inside the gzip"),
        (gzip.compress(b"method,split\nbsf,0\n"), "not a rows bundle, no column(s)"),
    ],
    ids=["plain-csv", "truncated", "not-utf8", "no-fit_file"],
)
def test_a_file_that_is_not_a_rows_bundle_is_refused(published, content, says):
    bundle = published / "rows/nuswide/linear2.csv.gz"
    bundle.write_bytes(content)
    with pytest.raises(RowsError, match=re.escape(f"{bundle}: {says}")):
        read_bundle(bundle)
    report = check_published(published)
    assert not report.ok
    assert report.problems[0].startswith(f"{bundle}: {says}"), report.problems
    assert "\n" not in report.problems[0]


def test_rows_of_a_job_outside_the_plan_or_missing_fail(published):
    bundle = published / "rows/nuswide/linear2.csv.gz"

    def rename(header, body):  # TCCA's rows as if from another job
        for row in body:
            if row[0] == "tcca/splitall.csv":
                row[0] = "tcca/split0.csv"

    rewrite_bundle(bundle, rename)
    problems = check_published(published).problems
    assert f"{bundle}: no rows of the fit job tcca/splitall.csv" in problems
    assert (
        f"{bundle}: rows of tcca/split0.csv, which is not a fit job of the run's plan"
        in problems
    )


def test_a_stray_table_csv_cannot_be_checked(published):
    (published / "tables/old.csv").write_text("Method\nBSF\n")
    report = check_published(published)
    assert report.problems == [
        f"{published / 'tables/old.csv'}: not an output of any table of "
        "summary.json (cannot be recomputed: remove it, or rerun the table)"
    ]


# -------------------------------------------------------------------- the bundle


def test_the_bundle_is_deterministic_and_gives_back_the_fit_files(tmp_path):
    rng = np.random.default_rng(0)
    fits = []
    for method in ("tcca", "bsf"):  # bundled in the order of the file names
        path = tmp_path / "fits/nuswide/linear2" / method / "splitall.csv"
        write_csv(fit_rows("nuswide", "linear2", method, rng), path)
        fits.append(path)
    a, b = tmp_path / "a.csv.gz", tmp_path / "b.csv.gz"
    n = write_rows(fits, a)
    write_rows(fits[::-1], b)
    assert a.read_bytes() == b.read_bytes()
    raw = a.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"  # no time
    assert not raw[3] & 0x08  # no file name
    header, rows = read_bundle(a)
    assert header[0] == "fit_file" and len(rows) == n
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    # written back: the fit files' bytes; read: the fit files' values, exactly
    (tmp_path / "rows/nuswide").mkdir(parents=True)
    shutil.copy(a, tmp_path / "rows/nuswide/linear2.csv.gz")
    back = unbundle(tmp_path, "nuswide", "linear2", tmp_path / "back")
    for path in back:
        original = tmp_path / path.relative_to(tmp_path / "back")
        assert path.read_bytes() == original.read_bytes()
    both = pd.concat([pd.read_csv(f) for f in sorted(fits)], ignore_index=True)
    pd.testing.assert_frame_equal(read_rows(a), both)
    tcca = read_cell(tmp_path, "nuswide/linear2/tcca")
    pd.testing.assert_frame_equal(tcca, pd.read_csv(fits[0]))
    assert read_cell(tmp_path, "nuswide/linear2/ktcca") is None
    assert read_cell(tmp_path, "ads/l100/tcca") is None
    assert row_cells(tmp_path) == ["nuswide/linear2/bsf", "nuswide/linear2/tcca"]
    assert row_cells(tmp_path, ["tcca", "ktcca"]) == ["nuswide/linear2/tcca"]


def test_bundle_run_writes_every_setting_of_a_run(tmp_path):
    rng = np.random.default_rng(1)
    run = tmp_path / "equal_tuning"
    for setting, name in (("linear2", "split0.csv"), ("linear2", "split1.csv")):
        write_csv(
            fit_rows("nuswide", setting, "tcca", rng),
            run / "fits/nuswide" / setting / "tcca" / name,
        )
    bench = run / "benchmarks/fit/nuswide/linear2/tcca/split0.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text(f"{BENCH}\n1.5\t0:00:01\t100\t1\t1\t1\t0\t0\t50\t1\n")
    assert bundle_run(run) == [run / "rows/nuswide/linear2.csv.gz"]
    header, rows = read_bundle(run / "rows/nuswide/linear2.csv.gz")
    assert {r[0] for r in rows} == {"tcca/split0.csv", "tcca/split1.csv"}
    lines = (run / "rows/nuswide/linear2.benchmarks.csv").read_text().splitlines()
    assert lines[0].startswith("fit_file,s,h:m:s,max_rss")
    assert lines[1:] == ["tcca/split0.csv,1.5,0:00:01,100,1,1,1,0,0,50,1"]


def test_first_difference_names_records_by_their_fields():
    a = {"val": [{"column": "c", "method": "tcca", "mean": 1.0, "r": "5/10"}]}
    assert first_difference(a, copy.deepcopy(a)) is None
    b = copy.deepcopy(a)
    b["val"][0]["r"] = "5/20"  # a cell's selected r is a field, not its name
    assert first_difference(a, b) == (
        "val[column='c', method='tcca'].r: committed '5/10', recomputed '5/20'"
    )
    curve = [{"method": "tcca", "r": r, "mean": float(r)} for r in (5, 10)]
    other = copy.deepcopy(curve)
    other[1]["mean"] = 11.0  # points of a curve are named by r too
    assert first_difference(curve, other, "curves") == (
        "curves[method='tcca', r=10].mean: committed 10.0, recomputed 11.0"
    )
    assert first_difference(curve, curve[:1], "curves") == (
        "curves[method='tcca', r=10]: committed, but not recomputed"
    )
    assert first_difference({"x": 1}, {"x": 1.0}) is None
    assert first_difference({"x": True}, {"x": 1}) == (
        "x: committed True, recomputed 1"
    )


# --------------------------------------------------------------- investigations

TOY = '''"""A toy investigation: TCCA's mean test accuracy per setting, from the fits of
the published run and of its own run (``<published>/toyrun``)."""

import argparse
from pathlib import Path

from _common import read_fits, save

ap = argparse.ArgumentParser()
ap.add_argument("--published")
ap.add_argument("--out")
args = ap.parse_args()
published = Path(args.published)
lines = ["#### Toy", "", "| cell | published | toy run |", "|---|---|---|"]
for setting in ("linear2",):
    cell = f"nuswide/{setting}/tcca"
    a = read_fits(published, cell)
    b = read_fits(published / "toyrun", cell)
    lines.append(
        f"| {setting} | {100 * a['test_acc'].mean():.4f} "
        f"| {100 * b['test_acc'].mean():.4f} |"
    )
save("\\n".join(lines) + "\\n", args.out)
'''


@pytest.fixture
def toy(published, tmp_path):
    """An investigations folder with a toy script, its output made from the fit
    files (written back here from the rows, as the run had them), and its run's
    committed rows."""
    inv = tmp_path / "investigations"
    (inv / "results").mkdir(parents=True)
    shutil.copy(REPO / "investigations" / "_common.py", inv / "_common.py")
    (inv / "toy.py").write_text(TOY)
    run = published / "toyrun"
    rng = np.random.default_rng(3)
    write_csv(
        fit_rows("nuswide", "linear2", "tcca", rng),
        run / "fits/nuswide/linear2/tcca/splitall.csv",
    )
    bundle_run(run)
    unbundle(published, "nuswide", "linear2", published)  # the run's own fits
    res = subprocess.run(
        [sys.executable, str(inv / "toy.py"), "--published", str(published),
         "--out", str(inv / "results" / "toy.md")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    shutil.rmtree(run / "fits")
    shutil.rmtree(published / "fits")
    return inv, {"toy": ("toy.py", ("toyrun",))}


def test_an_investigation_is_recomputed_from_its_runs_rows(published, toy):
    inv, registry = toy
    report = check_published(published, investigations=inv, registry=registry)
    assert report.ok, report.text()
    assert report.checked[-1] == "toy.json: 1 table rows and 0 facts (toy.py)"


def test_an_investigations_altered_row_fails_naming_its_cell(published, toy, tmp_path):
    inv, registry = toy

    def change(header, body):
        body[0][header.index("test_acc")] = "0.99"

    rewrite_bundle(published / "toyrun/rows/nuswide/linear2.csv.gz", change)
    report = Report()
    _check_investigations(published, inv, registry, tmp_path / "work", report)
    [problem] = report.problems
    assert re.fullmatch(
        re.escape(f"{inv / 'results/toy.json'}: 'Toy', row 'linear2 / ")
        + r"[\d.]+', column 'toy run': committed '[\d.]+', recomputed '[\d.]+'",
        problem,
    ), problem


def test_an_investigation_without_its_runs_rows_is_named(published, toy):
    inv, registry = toy
    shutil.rmtree(published / "toyrun" / "rows")
    report = check_published(published, investigations=inv, registry=registry)
    assert not report.ok
    assert report.missing == [
        f"no committed rows for {inv / 'results/toy.json'}: {published / 'toyrun/rows'}/"
    ]


def test_the_investigations_read_a_clones_rows(published, tmp_path, capsys):
    """A clone has no fits/ and no splits/, only rows/: the investigations' readers
    give what they gave from the fit files, and bundle_rows writes an investigation
    run's rows (never the published folder's), keeping committed rows that a rerun
    of only some of the run's jobs would drop."""
    common = load_script("investigations/_common.py")
    run, setting = published / "draws30", "nuswide/linear2"
    rng = np.random.default_rng(5)

    def write_fits(names):
        tcca = fit_rows("nuswide", "linear2", "tcca", rng)
        files = {
            "tcca/split0.csv": tcca[tcca["split"] == 0],
            "tcca/split1.csv": tcca[tcca["split"] == 1],
            "bsf/splitall.csv": fit_rows("nuswide", "linear2", "bsf", rng),
        }
        for name in names:
            write_csv(files[name], run / "fits" / setting / name)

    write_fits(["tcca/split0.csv", "tcca/split1.csv", "bsf/splitall.csv"])
    cells = [f"{setting}/tcca", f"{setting}/bsf"]
    from_fits = {cell: common.read_fits(run, cell) for cell in cells}
    assert list(from_fits[cells[0]]["split"].unique()) == [0, 1]  # files in order
    all_fits = common.read_setting(run, "nuswide", "linear2")
    # a fit file in the published folder: its rows are the pipeline's, not rewritten
    write_csv(from_fits[cells[0]], published / "fits" / setting / "tcca/splitall.csv")
    committed = (published / "rows/nuswide/linear2.csv.gz").read_bytes()
    common.bundle_rows(published, published, run)
    assert (published / "rows/nuswide/linear2.csv.gz").read_bytes() == committed
    shutil.rmtree(published / "fits")
    shutil.rmtree(run / "fits")
    assert not (run / "splits").exists()
    for cell in cells:
        pd.testing.assert_frame_equal(common.read_fits(run, cell), from_fits[cell])
    pd.testing.assert_frame_equal(
        common.read_setting(run, "nuswide", "linear2"), all_fits, check_dtype=False
    )
    assert common.read_fits(run, f"{setting}/ktcca") is None
    assert common.read_setting(run, "ads", "l100") is None
    # the published folder's rows, read by cell as its fit files were
    tcca = common.read_fits(published, f"{setting}/tcca")
    back = unbundle(published, "nuswide", "linear2", tmp_path / "back")
    fits = sorted(p for p in back if p.parent.name == "tcca")
    pd.testing.assert_frame_equal(
        tcca, pd.concat([pd.read_csv(f) for f in fits], ignore_index=True)
    )
    # one job of the run rerun in the clone: the committed rows stay
    bundle = run / "rows/nuswide/linear2.csv.gz"
    before = bundle.read_bytes()
    write_fits(["tcca/split1.csv"])
    common.bundle_rows(published, run)
    assert bundle.read_bytes() == before
    assert capsys.readouterr().out.startswith(
        f"rows of {run} left as committed: fits/{setting}/bsf/splitall.csv is in them"
    )
    # every job rerun: the rows are the new fits'
    write_fits(["tcca/split0.csv", "tcca/split1.csv", "bsf/splitall.csv"])
    rerun = common.read_fits(run, cells[0])
    common.bundle_rows(published, run)
    assert bundle.read_bytes() != before
    shutil.rmtree(run / "fits")
    pd.testing.assert_frame_equal(common.read_fits(run, cells[0]), rerun)
    # a broken bundle: one line, no traceback
    bundle.write_bytes(b"not gzip")
    with pytest.raises(SystemExit, match="not a gzip-compressed CSV"):
        common.read_fits(run, cells[0])


# ------------------------------------------------------------------ the commands


def test_the_command_line(published):
    cmd = [sys.executable, "-m", "tcca_core.pipeline.published", "--check"]
    ok = subprocess.run(
        [*cmd, "--results", str(published)], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    assert "check_published: OK: 2 output(s) recomputed" in ok.stdout
    (published / "rows/nuswide/kernel2.csv.gz").unlink()
    bad = subprocess.run(
        [*cmd, "--results", str(published)], capture_output=True, text=True
    )
    assert bad.returncode == 1
    assert "FAILED no committed rows for table nuswide_kernel" in bad.stderr


@pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")
def test_the_snakemake_target(published):
    """In a folder with the configuration and what is committed, no data: the
    target builds nothing and fails on a bad rows file."""
    work = published.parent
    (work / "config").mkdir()
    # offline (a key that keeps the full configuration): no download is tried
    (work / "config/config.yaml").write_text(
        yaml.safe_dump({**FIXTURE, "offline": True})
    )
    (work / "mirror").mkdir()  # the fixture's mirror must exist (empty: no data)
    (published / "rows/nuswide/linear2.csv.gz").write_bytes(b"not gzip")
    res = snakemake(
        "-s", str(SNAKEFILE), "--directory", str(work), "--cores", "1",
        "check_published", timeout=600,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert "linear2.csv.gz: not a gzip-compressed CSV" in out, out[-3000:]
    assert "ok table nuswide_kernel" in out  # the rest is still checked
    assert not (work / "results/fits").exists()  # it builds nothing


# ---------------------------------------------------- the repository's own results


def _ignored(path: str) -> bool:
    res = subprocess.run(
        ["git", "check-ignore", "-q", "--no-index", path], cwd=REPO, check=False
    )
    assert res.returncode in (0, 1), f"git check-ignore failed on {path}"
    return res.returncode == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_gitignore_keeps_the_rows_and_nothing_else_of_a_run():
    runs = {*RUNS, *(r for _, needs in INVESTIGATIONS.values() for r in needs)}
    kept = [
        "results/rows/ads/l100.csv.gz",
        "results/rows/ads/l100.benchmarks.csv",
        "results/summary.json",
        "results/tables/ads.csv",
        *(f"results/{run}/rows/ads/l100.csv.gz" for run in sorted(runs)),
    ]
    assert [p for p in kept if _ignored(p)] == []
    left_out = [
        "results/fits/ads/l100/tcca/splitall.csv",
        "results/runs/ads/l100.csv",
        "results/benchmarks/fit/ads/l100/tcca/splitall.tsv",
        "results/quick/rows/ads/l100.csv.gz",  # a reduced run's rows
        "results/quick/summary.json",
        "results/equal_tuning/fits/ads/l100/tcca/splitall.csv",
        "results/equal_tuning/summary.json",
    ]
    assert [p for p in left_out if not _ignored(p)] == []


def _committed_rows() -> list[str]:
    try:
        res = subprocess.run(
            ["git", "ls-files", "--", "results/rows"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        return [str(p) for p in (REPO / "results" / "rows").glob("*/*.csv.gz")]
    return res.stdout.split()


def test_the_published_results_are_those_of_their_committed_rows():
    assert _committed_rows(), "no per-fit rows are committed under results/rows/"
    # every table cell, and every investigation output made from run rows
    remade = dict(INVESTIGATIONS)
    report = check_published(
        REPO / "results", investigations=REPO / "investigations", registry=remade
    )
    assert report.ok, report.text()
    tables = json.loads((REPO / "results" / "summary.json").read_text())["tables"]
    assert sorted(tables) and all(f"ok table {t}:" in report.text() for t in tables)
    for stem in remade:
        assert f"{stem}.json" in "\n".join(report.checked), report.text()


def test_large_committed_rows_read_without_a_dtype_warning(tmp_path):
    """mfeat linear's rows (97K, ``pair`` empty but for the pairwise methods) read
    in one pass: no DtypeWarning, and the values a chunked read gives."""
    import warnings

    bundle = REPO / "results" / "rows" / "mfeat" / "linear4.csv.gz"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = read_rows(bundle)
        runs = tmp_path / "runs.csv"
        frame.to_csv(runs, index=False)
        again = pd.read_csv(runs, low_memory=False)  # as build_table reads runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunked = pd.read_csv(runs)
    assert len(frame) > 50_000 and frame["pair"].isna().any()
    assert frame["pair"].notna().any()
    pd.testing.assert_frame_equal(again, chunked)
