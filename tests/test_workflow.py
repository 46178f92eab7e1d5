"""The Snakemake pipeline, driven through Snakemake itself.

- ``--lint`` is clean;
- a dry run of the full configuration lists every fit job of the paper's grid, with no
  data present (and so does a dry run through the SLURM profile);
- a bad configuration fails before any job runs, naming the offending key;
- a method added as one runner plus one registry entry (a toy, in a copy of the
  library) is accepted by the configuration check and scheduled by a dry run;
- a tiny end-to-end run on a NUS-WIDE look-alike fixture (.test/) produces every table
  and figure with the content they claim; rerunning everything gives byte-identical
  accuracy tables and figures (slow test).

Nothing here reads ../shared: the fixture is generated into a temporary folder.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from _scripts import load_script
from _snakemake import REPO, SNAKEFILE, SNAKEMAKE, snakemake, snakemake_env

pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")

PM_CELL = re.compile(r"^\d+\.\d\d ± \d+\.\d\d$")


def job_counts(output: str) -> dict[str, int]:
    """The "Job stats" table of a (dry) run: rule -> number of jobs."""
    counts = {}
    table = output.split("Job stats:", 1)[1]
    for line in table.splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = int(parts[1])
    return counts


def grid_size(method: str, options: dict) -> int:
    """A method's grid points: the product of its values' counts over the registry's
    grid (a configured list replaces a grid entry or adds an option; a single value
    is one)."""
    from tcca_core.registry import METHODS

    counts = {key: len(values) for key, values in METHODS[method].grid.items()}
    for key, value in (options or {}).items():
        if key != "subset":  # an option, no grid parameter
            counts[key] = len(value) if isinstance(value, list) else 1
    n = 1
    for count in counts.values():
        n *= count
    return n


def paper_grid(config: dict, post_hoc: bool = False, grain: str | None = None) -> int:
    """Fit jobs the configuration asks for at its fit grain (or ``grain``).

    ``method``: settings x methods; ``split``: x splits; ``point``: settings x
    methods x each method's grid points. Without ``post_hoc``, the methods that are
    not the paper's are left out.
    """
    from tcca_core.registry import METHODS

    grain = grain or config.get("fit_grain", "method")
    total = 0
    for dataset in config["datasets"].values():
        for setting in dataset["settings"].values():
            methods = setting["methods"]
            if isinstance(methods, str):
                methods = config["method_sets"][methods]
            for m, options in methods.items():
                if not (post_hoc or METHODS[m].runs_by_default):
                    continue
                total += {
                    "method": 1,
                    "split": config["n_splits"],
                    "point": grid_size(m, options),
                }[grain]
    return total


@pytest.fixture(scope="module")
def full_config():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_lint():
    res = snakemake("--lint", "--nolock")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def test_full_dry_run_lists_the_papers_grid(tmp_path, full_config):
    # An empty data root: the grid does not depend on what data are present.
    res = snakemake(
        "-n", "--nolock", "--config", f"data_root={tmp_path / 'data'}", "--", "full"
    )
    assert res.returncode == 0, res.stderr[-3000:]
    counts = job_counts(res.stdout)
    # SecStr 84K 8 + 1.3M 4 methods (TCCA (uncentered) is post hoc, not run by
    # default), Ads 8, NUS-WIDE 3 x 8 linear + 3 x 5 kernel, mfeat 3 x 8 linear +
    # 6 x 5 kernel: 113 method-settings, one job each (fit_grain: method; all 5
    # splits per job).
    assert full_config["fit_grain"] == "method"
    assert counts["fit"] == paper_grid(full_config) == 113
    assert counts["splits"] == 18  # one per (data set, setting)
    assert counts["gather"] == 18
    assert counts["table"] == len(full_config["tables"]) == 6
    # every data set is prepared, including SecStr's extra unlabeled set
    assert counts["prepare_data"] == 5


@pytest.mark.parametrize("grain", ["split", "point"])
def test_full_dry_run_at_each_fit_grain(tmp_path, full_config, grain):
    """One fit job per split, or per grid point (an eps value, an SSMVD (lambda1,
    lambda2) pair), over the same splits, gathers and tables."""
    res = snakemake(
        "-n",
        "--nolock",
        "--config",
        f"data_root={tmp_path / 'data'}",
        f"fit_grain={grain}",
        "--",
        "full",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    counts = job_counts(res.stdout)
    assert counts["fit"] == paper_grid(full_config, grain=grain)
    assert counts["fit"] > paper_grid(full_config, grain="method")
    assert counts["gather"] == 18 and counts["table"] == 6
    if grain == "point":
        # SSMVD's 25 pairs (the registry's grid: `ssmvd: {}`) on each of mfeat's
        # linear settings
        jobs = set(re.findall(r"fits/mfeat/linear4/ssmvd/split\S+\.csv", res.stdout))
        assert len(jobs) == 25 and "fits/mfeat/linear4/ssmvd/splitall.p24.csv" in jobs
        assert "fits/mfeat/linear4/bsf/splitall.csv" in res.stdout  # one point


def test_post_hoc_methods_run_only_on_request(tmp_path, full_config):
    """post_hoc=true adds TCCA (uncentered)'s jobs: SecStr 84K, 1.3M and Ads."""
    res = snakemake(
        "-n",
        "--nolock",
        "--config",
        f"data_root={tmp_path / 'data'}",
        "post_hoc=true",
        "--",
        "full",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert job_counts(res.stdout)["fit"] == paper_grid(full_config, post_hoc=True)
    assert paper_grid(full_config, post_hoc=True) == 116
    assert "/tcca_nc/" in res.stdout


def test_slurm_profile_dry_run(tmp_path, full_config):
    """The SLURM profile parses and sets resources; one data set keeps the DAG small."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm is not installed")
    res = snakemake(
        "-n",
        "--nolock",
        "--profile",
        "profiles/slurm",
        "--config",
        f"data_root={tmp_path / 'data'}",
        "--",
        "ads",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    # with profiles/default, the workflow's own profile, applied from the root too
    assert re.search(r"Using profiles? profiles/slurm", res.stdout + res.stderr)
    assert "slurm_account=CHANGE_ME" in res.stdout
    per_method = 1 if full_config["fit_grain"] == "method" else full_config["n_splits"]
    # Ads: 8 methods (TCCA (uncentered) is post hoc)
    assert job_counts(res.stdout)["fit"] == 8 * per_method


ADS_LIKE_SETTING = {"learner": "rls", "n_labeled": 10, "methods": "linear_rls"}


@pytest.mark.parametrize(
    ("overlay", "key"),
    [
        ({"n_splits": 0}, "n_splits"),
        (
            {"datasets": {"ads": {"settings": {"l100": {"methods": "no_such_set"}}}}},
            "datasets.ads.settings.l100.methods",
        ),
        (
            {"datasets": {"adds": {"settings": {"x": ADS_LIKE_SETTING}}}},
            "datasets.adds: unknown data set",
        ),
        ({"machine": {"cpu": "a cpu"}}, "machine"),
    ],
)
def test_bad_config_fails_before_any_job(tmp_path, overlay, key):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(overlay))
    res = snakemake("-n", "--nolock", "--configfile", str(bad))
    assert res.returncode != 0
    message = res.stdout + res.stderr
    assert key in message, message[-3000:]
    assert "Job stats" not in message


# ---------------------------------------------------------------- end to end


def _load_fixture_writer():
    return load_script(".test/make_fixture.py")


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """The .test configuration run end to end in a temporary working directory."""
    work = tmp_path_factory.mktemp("workflow")
    (work / "config").mkdir()
    shutil.copy(
        REPO / ".test" / "config" / "config.yaml", work / "config" / "config.yaml"
    )
    _load_fixture_writer().write(work / "mirror")
    res = snakemake("-s", str(SNAKEFILE), "--directory", str(work), "--cores", "2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    return work


ACCURACY_FILES = [
    f"results/tables/{t}{s}.{e}"
    for t in ("nuswide_linear", "nuswide_kernel")
    for s in ("", "_best_r")
    for e in ("csv", "md", "tex")
]


def _read_csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_e2e_accuracy_tables(e2e):
    rows = _read_csv(e2e / "results/tables/nuswide_linear.csv")
    by_method = {r["Method"]: r for r in rows}
    col = "#labeled = 2"
    assert list(rows[0]) == ["Method", col, f"{col} r", f"{col} (paper)", f"{col} diff"]
    # the paper's rows in the paper's order; ours where configured
    assert [r["Method"] for r in rows] == [
        "BSF", "CAT", "CCA (BST)", "CCA (AVG)", "CCA-LS", "DSE", "SSMVD", "TCCA",
    ]  # fmt: skip
    for method in ("BSF", "TCCA"):
        assert PM_CELL.match(by_method[method][col]), by_method[method]
        ours = float(by_method[method][col].split(" ± ")[0])
        paper = float(by_method[method][f"{col} (paper)"].split(" ± ")[0])
        assert float(by_method[method][f"{col} diff"]) == pytest.approx(
            ours - paper, abs=0.011
        )
    assert by_method["BSF"][f"{col} (paper)"] == "17.42 ± 1.37"  # Table 3, 4 labeled
    assert by_method["CAT"][col] == "not run"
    # r: the validation-selected r of each of the 2 splits, from the grid {2, 4}
    assert re.fullmatch(r"[24]/[24]", by_method["TCCA"][f"{col} r"])
    assert by_method["BSF"][f"{col} r"] == ""

    kernel = {
        r["Method"]: r for r in _read_csv(e2e / "results/tables/nuswide_kernel.csv")
    }
    assert kernel["KTCCA"][f"{col} (paper)"] == "24.51 ± 0.78"
    assert PM_CELL.match(kernel["KTCCA"][col]) and kernel["AVG"][col] == "not run"

    best = {
        r["Method"]: r
        for r in _read_csv(e2e / "results/tables/nuswide_linear_best_r.csv")
    }
    assert re.fullmatch(r"[24]", best["TCCA"][f"{col} r"])

    md = (e2e / "results/tables/nuswide_linear.md").read_text()
    assert re.search(r"^\| Method +\|", md, re.M)
    assert re.search(rf"^\| TCCA +\| +{re.escape(by_method['TCCA'][col])} \|", md, re.M)
    tex = (e2e / "results/tables/nuswide_linear.tex").read_text()
    assert r"\begin{tabular}" in tex and r"$\pm$" in tex and r"\#labeled" in tex


def test_e2e_cost_tables(e2e):
    rows = _read_csv(e2e / "results/tables/nuswide_linear_cost.csv")
    assert {r["Method"] for r in rows} == {"BSF", "TCCA"}
    for r in rows:
        assert float(r["fit time (s)"].split(" ± ")[0]) >= 0
        assert float(r["job time (s)"].split(" ± ")[0]) > 0
        assert r["threads"] == "1" and r["machine"]
    by_r = _read_csv(e2e / "results/tables/nuswide_linear_cost_by_r.csv")
    assert {(r["method"], r["r"]) for r in by_r if r["method"] == "tcca"} == {
        ("tcca", "2"),
        ("tcca", "4"),
    }
    assert all(float(r["peak_mb"]) >= 0 for r in by_r)


def test_e2e_figures(e2e):
    for table in ("nuswide_linear", "nuswide_kernel"):
        for kind in ("accuracy", "cost"):
            png = (e2e / f"results/figures/{table}_{kind}.png").read_bytes()
            pdf = (e2e / f"results/figures/{table}_{kind}.pdf").read_bytes()
            assert png.startswith(b"\x89PNG") and len(png) > 10_000
            assert pdf.startswith(b"%PDF") and len(pdf) > 5_000


def test_e2e_summary_json(e2e):
    summary = json.loads((e2e / "results/summary.json").read_text())
    assert set(summary["tables"]) == {"nuswide_linear", "nuswide_kernel"}
    prov = summary["provenance"]
    assert prov["seed"] == 0 and prov["config"]["n_splits"] == 2
    assert prov["versions"]["numpy"] and prov["versions"]["snakemake"]
    assert "commit" in prov["git"] and prov["machine"]["logical_cores"] >= 1
    # every number of the CSV is in the JSON
    records = summary["tables"]["nuswide_linear"]["accuracy"]["val"]
    rows = {
        r["Method"]: r for r in _read_csv(e2e / "results/tables/nuswide_linear.csv")
    }
    tcca = next(r for r in records if r["method"] == "tcca")
    assert f"{tcca['mean']:.2f} ± {tcca['std']:.2f}" == rows["TCCA"]["#labeled = 2"]
    assert tcca["paper_mean"] == 22.40 and tcca["n_splits"] == 2


def test_e2e_reproduction_report(e2e):
    """REPRODUCTION.md from the summary: our numbers, the paper's, the figures."""
    res = snakemake(
        "-s", str(SNAKEFILE), "--directory", str(e2e), "--cores", "1",
        "reproduction",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    text = (e2e / "REPRODUCTION.md").read_text()
    summary = json.loads((e2e / "results/summary.json").read_text())
    tcca = next(
        r
        for r in summary["tables"]["nuswide_linear"]["accuracy"]["val"]
        if r["method"] == "tcca"
    )
    assert f"| TCCA | {tcca['mean']:.2f} ± {tcca['std']:.2f} |" in text
    assert "22.40 ± 1.96" in text  # the paper's TCCA, 4 labeled
    assert "(results/figures/nuswide_kernel_accuracy.png)" in text
    assert "## The paper's qualitative claims" in text
    assert "## Cells against the paper" in text


def test_e2e_logs_and_benchmarks(e2e):
    log = (e2e / "logs/fit/nuswide/linear2/tcca/splitall.log").read_text()
    # the solver's progress per rank, for each eps and split
    assert "tcca_core.solver.engine: rank 2 (1/2):" in log and "rank 4 (2/2):" in log
    status = json.loads((e2e / "results/data/nuswide.json").read_text())
    assert status["available"] is True
    bench = (
        e2e / "results/benchmarks/fit/nuswide/linear2/tcca/splitall.tsv"
    ).read_text()
    assert bench.split("\t")[0] == "s" and "max_rss" in bench


@pytest.mark.slow
def test_e2e_rerun_is_deterministic(e2e):
    """Everything again, fits included: identical accuracy tables and figures."""
    files = ACCURACY_FILES + [
        f"results/figures/{t}_accuracy.{e}"
        for t in ("nuswide_linear", "nuswide_kernel")
        for e in ("png", "pdf")
    ]
    before = {f: (e2e / f).read_bytes() for f in files}
    res = snakemake(
        "-s", str(SNAKEFILE), "--directory", str(e2e), "--cores", "2",
        "--forceall",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    for f, content in before.items():
        assert (e2e / f).read_bytes() == content, f


#: Columns of a fit row that say what the fit cost, not what it gave.
COST_COLUMNS = ("fit_s", "peak_mb", "fit_shared", "threads")


@pytest.mark.slow
def test_e2e_point_grain_gives_the_method_grains_rows(e2e, tmp_path):
    """The .test run again at ``fit_grain: point``, in a folder of its own: one fit
    job per grid point (TCCA's two eps values), gathered into the method grain's
    rows (``e2e``); the rows bundles, accuracy tables and the summary's numbers are
    the same. Only what the fits cost differs."""
    import pandas as pd

    from tcca_core.pipeline.rows import read_bundle, read_rows

    work = tmp_path / "point"
    (work / "config").mkdir(parents=True)
    cfg = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    cfg["fit_grain"] = "point"
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    _load_fixture_writer().write(work / "mirror")
    res = snakemake("-s", str(SNAKEFILE), "--directory", str(work), "--cores", "2")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert job_counts(res.stdout + res.stderr)["fit"] == 4
    fits = work / "results" / "fits" / "nuswide"
    assert sorted(p.relative_to(fits).as_posix() for p in fits.rglob("*.csv")) == [
        "kernel2/ktcca/splitall.csv",
        "linear2/bsf/splitall.csv",
        "linear2/tcca/splitall.p00.csv",
        "linear2/tcca/splitall.p01.csv",
    ]
    bench = work / "results/benchmarks/fit/nuswide/linear2/tcca/splitall.p01.tsv"
    assert bench.read_text().startswith("s\t")
    for setting in ("linear2", "kernel2"):
        runs = [
            pd.read_csv(root / f"results/runs/nuswide/{setting}.csv")
            for root in (e2e, work)
        ]
        keep = [c for c in runs[0].columns if c not in COST_COLUMNS]
        pd.testing.assert_frame_equal(runs[1][keep], runs[0][keep])
        bundles = [
            f"{root}/results/rows/nuswide/{setting}.csv.gz" for root in (e2e, work)
        ]
        rows = [
            read_rows(b).sort_values(["method", "split"], kind="stable")[keep]
            for b in bundles
        ]
        pd.testing.assert_frame_equal(
            rows[1].reset_index(drop=True), rows[0].reset_index(drop=True)
        )
    _, point_rows = read_bundle(work / "results/rows/nuswide/linear2.csv.gz")
    assert {r[0] for r in point_rows} == {
        "bsf/splitall.csv",
        "tcca/splitall.p00.csv",
        "tcca/splitall.p01.csv",
    }
    for f in ACCURACY_FILES:
        assert (work / f).read_bytes() == (e2e / f).read_bytes(), f
    summaries = [
        json.loads((root / "results/summary.json").read_text()) for root in (e2e, work)
    ]
    for table, record in summaries[0]["tables"].items():
        other = summaries[1]["tables"][table]
        assert set(other) == set(record)
        for key in record:
            if not key.startswith("cost"):
                assert other[key] == record[key], (table, key)


def test_defaults_written_out_rerun_nothing(e2e, tmp_path):
    """A finished run stays finished when the configuration spells out optional keys
    with their default values: every job's parameters are canonical."""
    overlay = tmp_path / "defaults.yaml"
    setting = {"kernel": "l2", "same_as": {}}
    overlay.write_text(
        yaml.safe_dump(
            {
                "seed": 0,
                "val_fraction": 0.2,
                "post_hoc": False,
                "pending": {},
                "method_sets": {},
                "datasets": {
                    "nuswide": {
                        "load": {},
                        "settings": {
                            "linear2": setting,
                            "kernel2": {"fit_on": "all", "same_as": {}},
                        },
                    }
                },
            }
        )
    )
    res = snakemake(
        "-s", str(SNAKEFILE), "--directory", str(e2e), "-n",
        "--configfile", str(overlay),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Nothing to be done" in res.stdout + res.stderr, res.stdout[-3000:]


def test_a_configured_machine_relabels_the_costs_and_refits_nothing(e2e, tmp_path):
    """Fits written back from another machine's rows keep that machine's name: with
    ``machine`` given, the tables and the summary are made again naming it, and no
    fit job runs (results/README.md, "A run across machines")."""
    work = tmp_path / "work"
    shutil.copytree(e2e, work, symlinks=True)
    machine = {"cpu": "The fits' CPU", "logical_cores": 7, "system": "Linux x"}
    overlay = tmp_path / "machine.yaml"
    overlay.write_text(yaml.safe_dump({"machine": machine}))
    res = snakemake(
        "-s", str(SNAKEFILE), "--directory", str(work), "--cores", "2",
        "--configfile", str(overlay),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    counts = job_counts(res.stdout + res.stderr)
    assert counts.get("table") == 2 and "fit" not in counts, counts
    for row in _read_csv(work / "results/tables/nuswide_linear_cost.csv"):
        assert row["machine"] == "The fits' CPU, 7 logical cores"
    prov = json.loads((work / "results/summary.json").read_text())["provenance"]
    assert prov["machine"] == machine
    assert prov["run"]["label"] == "full"  # a label, not a reduced run


def test_a_fresh_clone_dry_run_says_why_it_shows_only_downloads(tmp_path):
    """With no data at hand, the default target's plan is the first download (the
    prepare_data checkpoint decides the rest): a dry run says so and how to see all."""
    res = snakemake("-n", "--nolock", "--config", f"data_root={tmp_path / 'data'}")
    assert res.returncode == 0, res.stderr[-3000:]
    assert set(job_counts(res.stdout)) == {"prepare_data", "all", "total"}
    out = res.stdout + res.stderr
    assert "Dry run: data set(s) secstr" in out and "not prepared yet" in out
    assert "`snakemake -n full` lists every job" in out


# ------------------------------------------------------------ adding a method

TOY_RUNNER = '''
"""A toy method: the first r columns of a fixed random projection of the views."""

import numpy as np


from tcca_core.protocol.run import Fit


def run_toy(data, points):
    V = np.hstack([np.asarray(X, float) for X in data.row_data(range(data.m))])
    for gp in points:
        P = gp["scale"] * np.random.default_rng(data.seed).standard_normal(
            (V.shape[1], V.shape[1])
        )
        yield Fit(
            lambda P=P: P,
            lambda P: lambda r: V @ P[:, :r],
            params=gp,
            r_max=V.shape[1],
        )
'''

TOY_ENTRY = """

register(
    MethodSpec(
        "toy",
        "Toy projection",
        "linear",
        {"scale": (1.0, 2.0)},
        runner="tcca_core.toy:run_toy",
    )
)
"""


@pytest.fixture(scope="module")
def toy_library(tmp_path_factory):
    """A copy of the library with one method added: a runner and a registry entry."""
    src = tmp_path_factory.mktemp("toy") / "src"
    shutil.copytree(
        REPO / "src" / "tcca_core",
        src / "tcca_core",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (src / "tcca_core" / "toy.py").write_text(TOY_RUNNER)
    with open(src / "tcca_core" / "registry.py", "a", encoding="utf-8") as f:
        f.write(TOY_ENTRY)
    return src


def _dry_run_with(library: Path, work: Path, config: dict):
    (work / "config").mkdir(parents=True, exist_ok=True)
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    (work / "mirror").mkdir(exist_ok=True)  # the fixture's mirror must exist, empty
    env = snakemake_env()
    env["PYTHONPATH"] = f"{library}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return subprocess.run(
        [SNAKEMAKE, "-s", str(SNAKEFILE), "--directory", str(work), "-n",
         "--nolock", "--", "table_nuswide_linear"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_registered_method_runs_through_a_dry_run(toy_library, tmp_path):
    """Adding a method is one runner plus one registry entry: the configuration
    accepts it with its options, the pipeline schedules its fit job, and a wrong
    option is named with the toy's own options."""
    config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    methods = config["datasets"]["nuswide"]["settings"]["linear2"]["methods"]
    methods["toy"] = {"scale": [1.0]}
    res = _dry_run_with(toy_library, tmp_path / "ok", config)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Fitting toy on nuswide/linear2" in res.stdout
    assert job_counts(res.stdout)["fit"] == 3  # bsf, tcca and toy
    methods["toy"] = {"eps": [1.0]}
    res = _dry_run_with(toy_library, tmp_path / "bad", config)
    assert res.returncode != 0
    assert (
        "invalid config: datasets.nuswide.settings.linear2.methods.toy.eps: toy has "
        "no option 'eps'; allowed: scale" in res.stdout + res.stderr
    )
    # the unchanged library does not know the toy method
    res = snakemake(
        "-s", str(SNAKEFILE), "--directory", str(tmp_path / "ok"), "-n",
        "--nolock", "--", "table_nuswide_linear",
    )  # fmt: skip
    assert res.returncode != 0 and "unknown method 'toy'" in res.stdout + res.stderr
