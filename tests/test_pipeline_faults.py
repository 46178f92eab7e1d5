"""Faults of the Snakemake pipeline.

- a bad configuration (unknown key, wrong type, empty grid, r above what the methods
  allow, unknown method, unknown data set, ...) is rejected before any job runs, with
  one line naming the key;
- the configuration is checked against the library's own facts (registry, data-set
  specs, the paper's tables), not copies of them;
- (slow) two runs from clean, on 1 core with 1 BLAS thread and on 2 cores with 2 BLAS
  threads per fit, give byte-identical tables, timing columns aside;
- (slow) a run killed in the middle of a fit job (SIGTERM to Snakemake, SIGKILL to its
  whole process group) resumes: the rerun redoes only the unfinished jobs and the tables
  equal those of an uninterrupted run.

Everything runs on the .test fixture (a tiny NUS-WIDE look-alike) in temporary
folders; nothing here reads ../shared or the repository's data/ and results/.
"""

from __future__ import annotations

import base64
import copy
import csv
import gzip
import io
import json
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from _scripts import load_script
from _snakemake import REPO, SNAKEFILE, SNAKEMAKE, snakemake, snakemake_env

FIXTURE_CONFIG = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())

needs_snakemake = pytest.mark.skipif(
    SNAKEMAKE is None, reason="snakemake is not installed"
)


def snakemake_cmd(work: Path, *args) -> list[str]:
    return [SNAKEMAKE, "-s", str(SNAKEFILE), "--directory", str(work), *args]


def run_snakemake(work: Path, *args, blas_threads: int = 1, timeout: int = 900):
    return snakemake(
        *snakemake_cmd(work, *args)[1:],
        cwd=work,
        timeout=timeout,
        blas_threads=blas_threads,
    )


def make_workdir(work: Path, config: dict | None = None, mirror: bool = True) -> Path:
    """A working directory with config/config.yaml (the fixture's by default)."""
    (work / "config").mkdir(parents=True, exist_ok=True)
    (work / "config" / "config.yaml").write_text(
        yaml.safe_dump(FIXTURE_CONFIG if config is None else config, sort_keys=False)
    )
    if mirror:
        load_script(".test/make_fixture.py").write(work / "mirror")
    return work


def job_counts(output: str) -> dict[str, int]:
    """The "Job stats" table of a run: rule -> number of jobs."""
    counts = {}
    if "Job stats:" not in output:
        return counts
    for line in output.split("Job stats:", 1)[1].splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        counts[parts[0]] = int(parts[1])
    return counts


# ------------------------------------------------------------------ bad configurations


def _setting(cfg, name="linear2"):
    return cfg["datasets"]["nuswide"]["settings"][name]


def _unknown_dataset(cfg):
    cfg["datasets"]["nuswid"] = cfg["datasets"].pop("nuswide")


def _huge_kernel_r(cfg):
    _setting(cfg, "kernel2").update(subset=100, r_grid=[2, 4, 150])


def _both_label_counts(cfg):
    _setting(cfg)["n_labeled"] = 20


def _schema_faults(cfg):
    """Five schema faults at once: every one is reported, each on its own line."""
    cfg.update(n_splitz=3, n_splits="five", r_grid=[], fit_grain="pont")
    _setting(cfg)["methods"].update(tcca2={})


def _schema_limits(cfg):
    """Values within the schema's types but outside its limits, reported together."""
    cfg.update(data_root="", mirror=" ", n_splits=1_000_000, val_fraction=0.999)
    _setting(cfg)["views"] = ["bow"]


def _bad_folders(cfg):
    """Folders that cannot be used, reported together."""
    cfg.update(data_root="/", fit_cache="results/tables/cache", mirror="no/such/mirror")


def _late_values(cfg):
    """Values that failed later with a bare exception (IndexError, KeyError) or were
    accepted silently: every one reported, one line each."""
    _setting(cfg).update(views=[0, 17], pool="validation")
    _setting(cfg, "kernel2")["subset"] = 10**9
    cfg["tables"]["nuswide_linear"]["paper"] = "nuswide_linaer"
    cfg["tables"]["nuswide_kernel"]["columns"][0]["paper"] = "5"


K = "datasets.nuswide.settings.linear2"
# (id, change to the fixture's config, texts the message must hold, default run?)
# The schema's faults are reported together; the later checks stop at the first.
BAD_CONFIGS = [
    ("schema-faults-together", _schema_faults, (
        "invalid config: n_splitz: unknown key (did you mean 'n_splits'?)",
        "invalid config: n_splits: expected integer, got 'five'",
        "invalid config: r_grid: must not be empty",
        f"invalid config: {K}.methods.tcca2: unknown method 'tcca2'",
        "invalid config: fit_grain: 'pont' is not one of method, split, point (did you mean 'point'?)",
    ), True),
    ("r-above-bound", _huge_kernel_r, ("invalid config: datasets.nuswide.settings.kernel2.r_grid: r = 150 is above 100",), True),
    ("unknown-dataset", _unknown_dataset, ("invalid config: datasets.nuswid: unknown data set (did you mean 'nuswide'?)",), True),
    ("unknown-key", lambda c: c.update(n_splitz=3), ("invalid config: n_splitz: unknown key (did you mean 'n_splits'?)",), False),
    ("unknown-nested-key", lambda c: _setting(c).update(per_clas=2), (f"invalid config: {K}.per_clas: unknown key",), False),
    ("wrong-type", lambda c: c.update(n_splits="five"), ("invalid config: n_splits: expected integer, got 'five'",), False),
    ("wrong-type-nested", lambda c: _setting(c).update(learner=3), (f"invalid config: {K}.learner: expected string",), False),
    ("empty-r-grid", lambda c: c.update(r_grid=[]), ("invalid config: r_grid: must not be empty",), False),
    ("empty-eps-grid", lambda c: _setting(c)["methods"]["tcca"].update(eps=[]), (f"invalid config: {K}.methods.tcca.eps: must not be empty",), False),
    ("empty-columns", lambda c: c["tables"]["nuswide_linear"].update(columns=[]), ("invalid config: tables.nuswide_linear.columns: must not be empty",), False),
    ("unknown-method", lambda c: _setting(c)["methods"].update(tcca2={}), (f"invalid config: {K}.methods.tcca2: unknown method 'tcca2'",), False),
    ("unknown-method-option", lambda c: _setting(c)["methods"]["tcca"].update(epz=[1.0]), (f"invalid config: {K}.methods.tcca.epz: tcca has no option 'epz' (did you mean 'eps'?)",), False),
    ("unknown-load-option", lambda c: c["datasets"]["nuswide"].update(load={"split_sed": 1}), ("invalid config: datasets.nuswide.load.split_sed: unknown option",), False),
    ("n_labeled-and-per_class", _both_label_counts, (f"invalid config: {K}: give exactly one of n_labeled, per_class",), False),
    ("pending-unknown-dataset", lambda c: c.update(pending={"nuswid": "later"}), ("invalid config: pending.nuswid: not a data set of this configuration",), False),
    ("schema-limits", _schema_limits, (
        "invalid config: data_root: must not be empty (got '')",
        "invalid config: mirror: must be a folder name, got ' '",
        "invalid config: n_splits: must be at most 100, got 1000000",
        "invalid config: val_fraction: must be at most 0.95, got 0.999",
        f"invalid config: {K}.views: needs at least 2 views, got 1 (['bow'])",
    ), True),
    ("late-values", _late_values, (
        f"invalid config: {K}.views: position 17 is out of range: the data set has 3 views (positions 0 to 2)",
        f"invalid config: {K}.pool: data set 'nuswide' has no part 'validation' (it has 'train', 'test')",
        "invalid config: datasets.nuswide.settings.kernel2.subset: 1000000000 is above the 269648 rows of nuswide",
        "invalid config: tables.nuswide_linear.paper: unknown paper table 'nuswide_linaer'; known: ads, nuswide_kernel, nuswide_linear, secstr",
        "invalid config: tables.nuswide_kernel.columns[0].paper: paper table 'nuswide_kernel' has no column '5'; it has '4', '6', '8'",
    ), True),
    ("folders", _bad_folders, (
        "invalid config: data_root: '/' is the file system's root",
        "invalid config: fit_cache: 'results/tables/cache' is inside results/tables, the published results",
        "invalid config: mirror: 'no/such/mirror' does not exist",
    ), True),
]  # fmt: skip


def _dry_run_bad(root: Path, case) -> tuple:
    name, change, _, _ = case
    cfg = copy.deepcopy(FIXTURE_CONFIG)
    change(cfg)
    work = make_workdir(root / name, cfg, mirror=False)
    (work / "mirror").mkdir()  # the fixture's mirror folder, empty: it exists
    res = run_snakemake(work, "-n", "--nolock", timeout=300)
    created = sorted(
        p.name for p in work.iterdir() if p.name not in ("config", "mirror")
    )
    return res, created


def _dry_runs(root: Path, cases) -> dict:
    # a Snakemake start is seconds of CPU: two at a time
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda c: _dry_run_bad(root, c), cases)
        return {c[0]: r for c, r in zip(cases, results, strict=True)}


@pytest.fixture(scope="module")
def bad_config_runs(tmp_path_factory, request):
    """Dry runs of every bad configuration selected in this session, run in pairs."""
    root = tmp_path_factory.mktemp("bad_configs")
    selected = {
        item.callspec.id
        for item in request.session.items
        if getattr(item, "originalname", None)
        == "test_bad_config_is_rejected_at_start_naming_the_key"
    }
    return _dry_runs(root, [c for c in BAD_CONFIGS if c[0] in selected])


@needs_snakemake
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c[0], marks=() if c[3] else pytest.mark.slow)
        for c in BAD_CONFIGS
    ],
)
def test_bad_config_is_rejected_at_start_naming_the_key(bad_config_runs, case):
    res, created = bad_config_runs[case[0]]
    message = res.stdout + res.stderr
    assert res.returncode != 0, message[-3000:]
    for text in case[2]:
        assert text in message, message[-3000:]
    # one line, not Snakemake's dump of the schema and the whole config
    assert "Failed validating" not in message and len(message) < 4000, message[-3000:]
    assert "Job stats" not in message  # no job was even scheduled
    assert not {"results", "logs", "data"} & set(created), created


@needs_snakemake
def test_a_key_given_twice_is_refused_before_any_job(tmp_path):
    """Snakemake keeps the last of two equal keys; the workflow refuses them, in the
    base configuration and in an overlay alike, one line each naming file, key, line."""
    work = make_workdir(tmp_path / "w", mirror=False)
    (work / "mirror").mkdir()
    base = work / "config" / "config.yaml"
    base.write_text(base.read_text() + "seed: 3\n")  # the fixture has seed: 0
    overlay = work / "mine.yaml"
    overlay.write_text("n_splits: 1\nr_grid: [2]\nn_splits: 2\n")
    res = run_snakemake(work, "-n", "--nolock", "--configfile", "mine.yaml")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    seed_line = 1 + base.read_text().splitlines().index("seed: 0")
    assert (
        "invalid config: config/config.yaml, line "
        f"{len(base.read_text().splitlines())}: duplicate key 'seed' "
        f"(first at line {seed_line})"
    ) in out, out[-3000:]
    assert "mine.yaml, line 3: duplicate key 'n_splits' (first at line 1)" in out
    assert "Job stats" not in out and len(out) < 4000, out[-3000:]
    assert not {"results", "logs", "data"} & {p.name for p in work.iterdir()}


@needs_snakemake
def test_a_reduced_run_through_a_link_to_results_is_refused(tmp_path):
    """A results_dir that is a symbolic link to results/ used to pass for another
    folder: the reduced run overwrote the published tables through it."""
    work = make_workdir(tmp_path / "w")
    published = work / "results" / "tables" / "nuswide_linear.csv"
    published.parent.mkdir(parents=True)
    published.write_text("published\n")
    (work / "out").symlink_to(work / "results")
    overlay = work / "mine.yaml"
    overlay.write_text(yaml.safe_dump({"n_splits": 1, "results_dir": "out"}))
    res = run_snakemake(work, "--cores", "1", "--configfile", "mine.yaml")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert "invalid config: results_dir: 'out' (a link to" in out, out[-3000:]
    assert "holds the published results of the full configuration" in out
    assert "Job stats" not in out
    assert published.read_text() == "published\n"
    assert sorted(p.name for p in (work / "results").iterdir()) == ["tables"]


def _dry_run_pending(tmp_path: Path, pending: dict) -> str:
    """A dry run of the fixture with ``pending`` set; its output (it must succeed)."""
    cfg = copy.deepcopy(FIXTURE_CONFIG)
    cfg["pending"] = pending
    res = run_snakemake(make_workdir(tmp_path, cfg), "-n", "--nolock", timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    return out


@needs_snakemake
def test_pending_dataset_leaves_the_default_target(tmp_path):
    """A run in parts: a data set marked pending schedules no job and says why."""
    out = _dry_run_pending(tmp_path, {"nuswide": "kernel settings still running"})
    assert (
        "Leaving data set 'nuswide' out of the default target and the summary: "
        "pending (kernel settings still running)."
    ) in out
    assert job_counts(out) == {"all": 1, "total": 1}, out[-3000:]  # no fit, no table


@needs_snakemake
def test_pending_method_is_left_out_of_its_setting(tmp_path):
    """One method of one setting pending: its fit job is not scheduled, the rest is."""
    out = _dry_run_pending(tmp_path, {"nuswide/linear2/tcca": "still running"})
    assert job_counts(out)["fit"] == 2, out[-3000:]  # bsf and ktcca; tcca left out
    assert "Fitting tcca on" not in out


@needs_snakemake
def test_fixture_config_passes_the_checks(tmp_path):
    """The control: the unmodified fixture configuration schedules its jobs."""
    work = make_workdir(tmp_path)
    res = run_snakemake(work, "-n", "--nolock", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert job_counts(res.stdout + res.stderr)["fit"] == 3


@needs_snakemake
def test_snakefile_from_another_folder_overlays_its_base_config(tmp_path):
    """`snakemake -s <repo>/workflow/Snakefile --configfile mine.yaml` from a folder without
    config/config.yaml overlays the repository's configuration (it used to run
    without it and print a page of misleading errors)."""
    overlay = tmp_path / "mine.yaml"
    pending = {d: "later" for d in ("secstr", "ads", "mfeat", "nuswide")}
    overlay.write_text(yaml.safe_dump({"pending": pending}))
    res = snakemake(
        "-s", str(SNAKEFILE), "--configfile", str(overlay), "-n", "--nolock",
        cwd=tmp_path, timeout=300,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "invalid config" not in out
    assert job_counts(out) == {"all": 1, "total": 1}, out[-3000:]
    assert not {p.name for p in tmp_path.iterdir()} - {"mine.yaml", ".snakemake"}


# ------------------------------------------------------------ facts behind the checks


@pytest.fixture(scope="module")
def wf_config():
    from tcca_core.pipeline import config

    return config


def test_the_checks_read_the_registry(wf_config):
    """No copies: the schema's method and learner names and each method's options
    are the registry's."""
    from tcca_core import registry

    schema = wf_config.load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert schema["$defs"]["method"]["enum"] == list(registry.METHODS)
    learner = schema["$defs"]["setting"]["properties"]["learner"]
    assert learner["enum"] == list(registry.LEARNERS)
    assert wf_config.r_grid_of({"r_grid": "paper"}) == registry.R_GRID_PAPER
    with pytest.raises(wf_config.ConfigError, match="tcca has no option 'lambda1'"):
        wf_config.resolve_settings(
            {
                "datasets": {
                    "mfeat": {
                        "settings": {
                            "s": {"learner": "knn", "methods": {"tcca": {"lambda1": 1}}}
                        }
                    }
                },
                "tables": {},
            }
        )


def test_command_line_booleans_are_booleans(wf_config):
    """`--config strict=true` arrives as the string 'true': boolean keys take it;
    other strings stay errors, and non-boolean keys are left alone."""
    import yaml

    schema_path = REPO / "workflow" / "schemas" / "config.schema.yaml"
    full = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg = {**full, "strict": "true", "post_hoc": "False", "results_dir": "true"}
    wf_config.check_schema(cfg, schema_path)
    assert cfg["strict"] is True and cfg["post_hoc"] is False
    assert cfg["results_dir"] == "true"  # a folder name, not a boolean
    with pytest.raises(wf_config.ConfigError, match="invalid config: strict"):
        wf_config.check_schema({**full, "strict": "yes please"}, schema_path)


def test_post_hoc_methods_are_left_out_unless_asked_for(wf_config):
    import yaml

    full = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    default = wf_config.resolve_settings(copy.deepcopy(full))
    assert "tcca_nc" not in default["secstr"]["84k"]["methods"]
    assert "tcca" in default["secstr"]["84k"]["methods"]
    asked = wf_config.resolve_settings({**copy.deepcopy(full), "post_hoc": True})
    assert "tcca_nc" in asked["secstr"]["84k"]["methods"]
    assert "post_hoc" in wf_config.RUN_KEYS  # it writes the published folder


def test_dataset_shapes_come_from_the_specs(wf_config):
    from tcca_core.datasets import mfeat, nuswide

    n, views = wf_config.dataset_shape("mfeat")
    assert n == 2000 and dict(views) == mfeat.DIMS
    n, views = wf_config.dataset_shape("nuswide")
    assert n == nuswide.N_IMAGES and [d for _, d in views] == [500, 144, 128]
    assert [d for _, d in wf_config.dataset_shape("ads")[1]] == [588, 495, 472]
    assert wf_config.dataset_shape("no_such") is None


def test_r_bound(wf_config):
    rb = wf_config.r_bound
    assert rb("mfeat", ["bsf", "cat"]) is None  # no method has an r
    # kernel methods: the rows they are fitted on
    assert rb("mfeat", ["ktcca"], subset=500)[0] == 500
    assert rb("mfeat", ["ktcca"])[0] == 2000
    # linear methods: also prod(d) / max(d) of the chosen views
    assert rb("mfeat", ["tcca"], views=["zer", "mor"])[0] == 6  # min(47, 6)
    assert rb("mfeat", ["cca_bst"], views=[4, 5])[0] == 6  # by position
    assert rb("mfeat", ["tcca"], views=["fac", "fou", "kar"])[0] == 2000
    assert rb("secstr", ["tcca"])[0] == 105 * 105
    assert rb("secstr", ["dse"], subset=5000)[0] == 5000
    assert rb("secstr", ["tcca"], fit_extra="secstr-extra")[0] == 105 * 105
    bound, why = rb("ads", ["cca_bst", "kcca_bst"], subset=300)
    assert bound == 300 and "300 rows" in why


# --------------------------------------------------------------- whole runs (slow)

# Columns and keys that hold measurements of the run (time, memory, threads, machine),
# not results: they differ between any two runs.
TIMING = {
    "fit_s", "fit_s_std", "peak_mb", "peak_mb_std", "threads", "machine",
    "fit time (s)", "peak memory (MB)", "job time (s)", "job max RSS (MB)",
    "cost_at_selected_r", "cost_by_r",
}  # fmt: skip


def _without_timing(path: Path) -> bytes:
    """The file's bytes, or for CSV and JSON its content without the TIMING columns."""
    data = path.read_bytes()
    if path.suffix == ".csv":
        rows = list(csv.reader(io.StringIO(data.decode())))
        keep = [i for i, c in enumerate(rows[0]) if c not in TIMING]
        return "\n".join(",".join(r[i] for i in keep) for r in rows).encode()
    if path.suffix == ".json":

        def strip(o):
            if isinstance(o, dict):
                return {k: strip(v) for k, v in o.items() if k not in TIMING}
            if isinstance(o, list):
                return [strip(v) for v in o]
            return o

        return json.dumps(strip(json.loads(data)), sort_keys=True).encode()
    return data


def result_files(work: Path) -> dict[str, bytes]:
    """Every result a user reads, timing aside (the committed rows/ bundle carries the
    fits' timings, and its cells are the fits' own): fits, gathered runs, tables (all of
    them, cost tables without their timing columns; .md/.tex cost tables and cost
    figures are renderings of timings, and so are the report's HTML pages, which show
    the accuracy tables above the cost table), accuracy figures and the summary."""
    out = {}
    for path in sorted((work / "results").rglob("*")):
        rel = path.relative_to(work).as_posix()
        if not path.is_file() or rel.startswith(
            (
                "results/benchmarks/",
                "results/splits/",
                "results/report/",
                "results/rows/",
            )
        ):
            continue
        if "_cost" in path.name and path.suffix != ".csv":
            continue
        out[rel] = _without_timing(path)
    return out


def assert_same_results(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    differ = [f for f in want if got[f] != want[f]]
    assert not differ, f"differ: {differ}"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The fixture workflow from clean on 1 core, 1 BLAS thread: its results."""
    work = make_workdir(tmp_path_factory.mktemp("reference"))
    res = run_snakemake(work, "--cores", "1", blas_threads=1)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    files = result_files(work)
    assert "results/tables/nuswide_linear.csv" in files
    assert "results/summary.json" in files
    return files


@needs_snakemake
@pytest.mark.slow
def test_results_identical_on_1_and_2_cores(tmp_path, reference):
    """From clean on 2 cores, fits with 2 threads (so 2 BLAS threads: Snakemake sets
    OMP/OPENBLAS/MKL_NUM_THREADS to a job's threads): the same results, byte for byte."""
    work = make_workdir(tmp_path)
    res = run_snakemake(work, "--cores", "2", "--set-threads", "fit=2", blas_threads=2)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    with open(work / "results/runs/nuswide/linear2.csv", newline="") as f:
        assert {r["threads"] for r in csv.DictReader(f)} == {"2"}  # 2-thread fits
    assert_same_results(result_files(work), reference)


def _fits(work: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (work / "results/fits").rglob("*.csv")}


def _wait_for_second_fit(work: Path, proc: subprocess.Popen, timeout: float = 900):
    """Block until one fit is done and another fit job is running (its log exists,
    its output does not)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        assert proc.poll() is None, "the run ended before a fit could be interrupted"
        done = _fits(work)
        logs = (
            (work / "logs/fit").rglob("*.log") if (work / "logs/fit").is_dir() else []
        )
        running = [
            log
            for log in logs
            if not (work / "results/fits" / log.relative_to(work / "logs/fit"))
            .with_suffix(".csv")
            .exists()
        ]
        if done and running:
            return done
        time.sleep(0.02)
    raise AssertionError("no fit job started in time")


@needs_snakemake
@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGTERM-group", "SIGKILL-group"])
def test_killed_run_resumes(tmp_path, reference, how):
    """Kill the run in the middle of a fit job and rerun: only the unfinished jobs run
    again, finished fits are kept (same mtime), and the results are the reference's.

    SIGTERM to Snakemake (`kill <pid>`): it lets the running fit finish, then stops.
    SIGTERM to the process group (a batch system's cancel): the fit dies too.
    SIGKILL to the group (`kill -9`, the OOM killer): nobody cleans up; the rerun
    asks for --unlock, then --rerun-incomplete redoes whatever was cut short."""
    work = make_workdir(tmp_path)
    with open(tmp_path / "first_run.log", "w") as log:
        proc = subprocess.Popen(
            snakemake_cmd(work, "--cores", "1"),
            cwd=work,
            env=snakemake_env(1),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, jobs included
        )
        try:
            done = _wait_for_second_fit(work, proc)
            if how == "SIGTERM":
                proc.send_signal(signal.SIGTERM)
            else:
                os.killpg(proc.pid, getattr(signal, how.split("-")[0]))
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert proc.returncode != 0
    time.sleep(1)  # let the killed jobs' processes go
    # no partial table at a final path: every fit there is complete
    for fit in (work / "results/fits").rglob("*.csv"):
        text = fit.read_text()
        assert text.endswith("\n") and len(text.splitlines()) > 1, fit
    # a fit that finished before the signal counts as done, unless Snakemake had not
    # recorded it yet (its marker in .snakemake/incomplete/): --rerun-incomplete redoes it
    markers = {p.name for p in (work / ".snakemake" / "incomplete").glob("*")}
    done.update(
        (fit, mtime)
        for fit, mtime in _fits(work).items()
        if base64.urlsafe_b64encode(fit.relative_to(work).as_posix().encode()).decode()
        not in markers
    )
    n_fits = 3

    res = run_snakemake(work, "--cores", "1")
    if how == "SIGKILL-group":
        # the lock of the killed run is left behind: the user is told to --unlock
        assert res.returncode != 0
        assert "Directory cannot be locked" in res.stderr, res.stderr[-3000:]
        assert "--unlock" in res.stderr
        unlock = run_snakemake(work, "--unlock")
        assert unlock.returncode == 0, unlock.stderr[-3000:]
        res = run_snakemake(work, "--cores", "1", "--rerun-incomplete")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    for fit, mtime in done.items():
        assert fit.stat().st_mtime_ns == mtime, f"{fit} was redone"
    assert job_counts(res.stdout + res.stderr).get("fit", 0) == n_fits - len(done)
    assert not list((work / "results").rglob("*.part"))
    assert_same_results(result_files(work), reference)


def _with_bad_ads(work: Path, bad: str, **keys) -> Path:
    """The fixture's NUS-WIDE (linear setting, BSF only: a short run) and Ads, whose
    mirror files are there by name but damaged: route "ready" (files at hand), found
    bad only when the prepare_data job reads them."""
    cfg = copy.deepcopy(FIXTURE_CONFIG)
    _setting(cfg)["methods"] = {"bsf": {}}
    del (
        cfg["datasets"]["nuswide"]["settings"]["kernel2"],
        cfg["tables"]["nuswide_kernel"],
    )
    cfg["datasets"]["ads"] = {
        "settings": {"l20": {"learner": "rls", "n_labeled": 20, "methods": {"bsf": {}}}}
    }
    cfg["tables"]["ads"] = {
        "dataset": "ads",
        "paper": None,
        "title": "Ads",
        "columns": [{"setting": "l20", "label": "20"}],
    }
    cfg.update(offline=True, **keys)
    make_workdir(work, cfg)
    ads = work / "mirror" / "ads"
    ads.mkdir()
    data = gzip.compress(b"1,2,3,ad.\n" * 200)
    # truncated (as an interrupted download leaves it), or whole but not the pinned file
    (ads / "ad.data.gz").write_bytes(
        data[: len(data) // 2] if bad == "truncated" else data
    )
    (ads / "ad.names").write_text("| not the attributes\n")
    return work


@needs_snakemake
@pytest.mark.slow
@pytest.mark.parametrize("bad", ["truncated", "wrong-file"])
def test_a_dataset_found_bad_when_prepared_is_skipped_like_a_missing_one(tmp_path, bad):
    """Ads' mirror files exist but are damaged: one "Skipping" line, the rest of the
    run goes on and it exits 0 (it used to run Ads' splits anyway and fail with "data
    set 'ads' was skipped in this run")."""
    work = _with_bad_ads(tmp_path / "w", bad)
    res = run_snakemake(work, "--cores", "2", timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-5000:]
    assert out.count("Skipping data set ads: ") == 1, out[-5000:]
    assert "was skipped in this run" not in out
    assert "Skipped data sets: ads (why: above" in out
    assert (work / "results/tables/nuswide_linear.csv").is_file()
    assert not list((work / "results").rglob("*ads*.csv"))
    assert not (work / "results/splits/ads").exists()
    summary = json.loads((work / "results/summary.json").read_text())
    assert list(summary["skipped"]) == ["ads"]
    if bad == "truncated":
        return
    # the next run tries Ads again, skips it again, and redoes nothing else
    before = {f: f.stat().st_mtime_ns for f in (work / "results").rglob("*.*")}
    again = run_snakemake(work, "--cores", "2", timeout=600)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out[-5000:]
    assert out.count("Skipping data set ads: ") == 1, out[-5000:]
    after = {f: f.stat().st_mtime_ns for f in (work / "results").rglob("*.*")}
    redone = {
        f.relative_to(work).as_posix() for f in after if after[f] != before.get(f)
    }
    # known: the figure at a glance (a few seconds) is redrawn too; the fits,
    # tables and summary are not
    assert redone <= {
        "results/data/ads.json",
        "results/benchmarks/prepare_data/ads.tsv",
        "results/figures/at_a_glance.png",
        "results/figures/at_a_glance.pdf",
        "results/benchmarks/glance/glance.tsv",
    }


@needs_snakemake
@pytest.mark.slow
def test_a_dataset_found_bad_when_prepared_fails_a_strict_run(tmp_path):
    work = _with_bad_ads(tmp_path / "w", "truncated", strict=True)
    res = run_snakemake(work, "--cores", "2", timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "Data set ads cannot be obtained (strict: the run stops): " in out, out[
        -5000:
    ]


# -------------------------------------------------- value checks without the data


def _mfeat_config(**setting):
    base = {"learner": "rls", "per_class": 2, "methods": {"tcca": {}}}
    return {
        "datasets": {"mfeat": {"settings": {"s": {**base, **setting}}}},
        "tables": {"t": {"dataset": "mfeat", "title": "T", "paper": None,
                         "columns": [{"setting": "s", "label": "s"}]}},
    }  # fmt: skip


def _problems(wf_config, cfg):
    settings = {
        d: {s: {**c, "methods": c["methods"]} for s, c in dcfg["settings"].items()}
        for d, dcfg in cfg["datasets"].items()
    }
    return wf_config.value_problems(cfg, settings)


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ({"views": ["fac", "fou"]}, None),
        ({"views": [4, 5]}, None),
        ({"views": [0, 17]}, "position 17 is out of range"),
        ({"views": [-1, 0]}, "position -1 is out of range"),
        ({"views": ["fac", "face"]}, "unknown view 'face'"),
        ({"views": ["fac", 1]}, "view 'fac' is given twice"),
        ({"pool": "train"}, "data set 'mfeat' has no part 'train' (it has none)"),
        ({"subset": 2001}, "2001 is above the 2000 rows of mfeat"),
        ({"subset": 2000}, None),
        ({"subset": 500, "methods": {"dse": {"subset": 600}}}, "600 is above the 500"),
    ],
)
def test_value_problems(wf_config, setting, expected):
    problems = _problems(wf_config, _mfeat_config(**setting))
    if expected is None:
        assert problems == []
    else:
        (problem,) = problems
        assert problem[0].startswith("datasets.mfeat.settings.s."), problem
        assert expected in problem[1], problem


def test_value_problems_paper_tables(wf_config):
    cfg = _mfeat_config()
    cfg["tables"]["t"]["columns"][0]["paper"] = "4"
    assert _problems(wf_config, cfg) == [(
        "tables.t.columns[0].paper",
        "the table has no paper table (`paper: null`) to take a column from",
    )]  # fmt: skip
    cfg["tables"]["t"]["paper"] = "nuswide_linear"
    assert _problems(wf_config, cfg) == []


def test_dataset_parts_match_the_loaders():
    """Each DatasetSpec's ``parts`` (what a setting's pool may name) are the splits
    its loader gives."""
    import numpy as np

    from tcca_core.datasets import DATASETS, Dataset

    for name, spec in DATASETS.items():
        ds = Dataset(name, [np.zeros((20, 2))], np.zeros(20, int), {})
        if spec.finish is not None:
            ds = spec.finish(ds)
        assert tuple(ds.splits) == spec.parts, name


def test_job_time_checks(monkeypatch):
    """What the configuration check cannot know without the data: the jobs say it."""
    import numpy as np

    from tcca_core import datasets
    from tcca_core.pipeline import jobs
    from tcca_core.protocol import make_splits

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="subset = 11 is above the 10 rows"):
        jobs.random_subset(10, 11, rng)
    assert len(jobs.random_subset(10, 10, rng)) == 10
    y = np.repeat(np.arange(2), 50)
    tiny = make_splits(y, n_labeled=10, n_splits=1, seed=0, val_fraction=0.9)
    with pytest.raises(ValueError, match="split 0 has 81 validation and 9 test rows"):
        jobs.check_eval_rows(tiny, "datasets.x.settings.y")
    jobs.check_eval_rows(make_splits(y, n_labeled=10, n_splits=1, seed=0), "x")
    fake = datasets.Dataset(
        "mfeat", [np.zeros((4, 2))] * 3, None, {"view_names": ["a", "b", "c"]}
    )
    monkeypatch.setattr(datasets, "load", lambda *a, **k: fake)
    with pytest.raises(
        ValueError,
        match=r"has 3 views .* \(positions 0 to 2\); config asks for \[0, 17\]",
    ):
        jobs.load_views("mfeat", data_root="data", views=[0, 17])
