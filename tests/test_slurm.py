"""The SLURM profile (profiles/slurm), checked without and with a real SLURM.

Default suite (fast, no SLURM needed):
- every rule that is submitted (not a localrule, and runs something) gets threads,
  mem_mb and runtime from the profile;
- the profile's memory and run time grow with the attempt: a throwaway workflow whose
  rules carry the pipeline's names and wildcards fails twice and is retried through the
  profile (`retries: 2`) with the local executor; each attempt records what it got.

Marked ``slurm`` (deselected by default; CI runs them after `ci/slurm-local.sh start`,
which sets up a one-node SLURM with accounting on the machine itself):
- the .test configuration (a NUS-WIDE look-alike fixture written by
  .test/make_fixture.py, so no download and no ../shared) runs through
  `snakemake --profile profiles/slurm` on real sbatch and with `--cores 2` locally: the
  accuracy tables are byte-identical, the cost tables too once their time and memory
  columns are left out, and sacct lists every submitted job as COMPLETED;
- a job that SLURM kills for exceeding its memory is resubmitted with twice the memory
  and then succeeds.

    ci/slurm-local.sh start && python -m pytest -m slurm tests/test_slurm.py
"""

from __future__ import annotations

import csv
import importlib.util
import io
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from _scripts import load_script
from _snakemake import REPO, SNAKEFILE, SNAKEMAKE, snakemake

PROFILE = REPO / "profiles" / "slurm"
HAS_SLURM_PLUGIN = (
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None
)

pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")

# Status checks every 8 s instead of the plugin's 40 s start: a two-level DAG of short
# jobs then takes about a minute less. (A real cluster wants the gentler defaults.)
FAST_POLLING = (
    "--seconds-between-status-checks",
    "8",
    "--slurm-init-seconds-before-status-checks",
    "8",
)


def profile() -> dict:
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


# ------------------------------------------------------------ the profile (no SLURM)


def _rule_sources() -> str:
    return "\n".join(
        p.read_text() for p in [SNAKEFILE, *(REPO / "workflow/rules").glob("*.smk")]
    )


def submitted_rules() -> set[str]:
    """Rules that run something (script/shell/run) and are not local (a
    ``localrules:`` list or the rule's own ``localrule: True``)."""
    text = _rule_sources()
    local = set()
    for block in re.findall(r"^localrules:\n((?:[ \t]+\S.*\n?)+)", text, re.M):
        local |= {name.strip() for name in block.replace(",", " ").split()}
    rules = set()
    for name, body in re.findall(
        r"^rule (\w+):\n((?:[ \t]+.*\n|\n)+)", text + "\n", re.M
    ):
        if re.search(r"^[ \t]+localrule:[ \t]*True", body, re.M):
            local.add(name)
        elif re.search(r"^[ \t]+(script|shell|run|wrapper|notebook):", body, re.M):
            rules.add(name)
    return rules - local


def test_profile_sets_resources_for_every_submitted_rule():
    rules = submitted_rules()
    assert rules == {"splits", "fit"}  # update the profile when this changes
    prof = profile()
    assert prof["executor"] == "slurm" and prof["retries"] >= 1
    for rule in rules:
        assert prof["set-threads"][rule] == 1, rule  # as in a local run
        res = prof["set-resources"][rule]
        assert "attempt" in str(res["mem_mb"]) and "runtime" in res, rule
    assert {"mem_mb", "runtime", "slurm_account", "slurm_partition"} <= set(
        prof["default-resources"]
    )


# A throwaway workflow with the pipeline's rule names and wildcards: each attempt appends
# "threads mem_mb runtime" to a side file and fails until the third attempt.
RETRY_SNAKEFILE = """
ATTEMPT = (
    "echo {threads} {resources.mem_mb} {resources.runtime} >> {output}.attempts; "
    "test $(wc -l < {output}.attempts) -ge 3 && cp {output}.attempts {output}"
)

rule splits:
    output: "results/splits/{dataset}/{setting}.json"
    shell: ATTEMPT

rule fit:
    output: "results/fits/{dataset}/{setting}/{method}/split{split}.csv"
    shell: ATTEMPT
"""

RETRY_TARGETS = {
    "results/splits/ads/l100.json": "splits",
    "results/fits/mfeat/linear6/tcca/splitall.csv": "fit",
    "results/fits/nuswide/linear2/ktcca/split0.csv": "fit",
    "results/fits/secstr/1.3m/tcca/split0.csv": "fit",
}


def test_profile_resources_grow_with_the_attempt(tmp_path):
    (tmp_path / "Snakefile").write_text(RETRY_SNAKEFILE)
    res = snakemake(
        "--profile", str(PROFILE), "--executor", "local", "--cores", "1",
        "--directory", str(tmp_path), "-s", str(tmp_path / "Snakefile"),
        *RETRY_TARGETS,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    first_mem = {}
    for target in RETRY_TARGETS:
        attempts = [
            tuple(map(int, line.split()))
            for line in (tmp_path / target).read_text().splitlines()
        ]
        assert len(attempts) == 3, (target, attempts)  # retries: 2
        threads, mem, runtime = attempts[0]
        assert threads == 1 and mem >= 1000 and runtime >= 15, (target, attempts)
        assert attempts == [(1, k * mem, k * runtime) for k in (1, 2, 3)], target
        first_mem[target] = mem
    # SecStr's 1.3M setting (1.2M extra rows) gets the most, mfeat the least of the fits
    fits = {t: m for t, m in first_mem.items() if RETRY_TARGETS[t] == "fit"}
    assert max(fits, key=fits.get) == "results/fits/secstr/1.3m/tcca/split0.csv"
    assert min(fits, key=fits.get) == "results/fits/mfeat/linear6/tcca/splitall.csv"


# ---------------------------------------------------------------- on a real SLURM


def slurm_resources() -> list[str]:
    """The profile's defaults with the local cluster's account and partition."""
    if not HAS_SLURM_PLUGIN:
        pytest.fail(
            "snakemake-executor-plugin-slurm is not installed (extra `pipeline`)"
        )
    if shutil.which("sbatch") is None or shutil.which("sacct") is None:
        pytest.fail("no SLURM here: run `ci/slurm-local.sh start` (as root) first")
    info = subprocess.run(
        ["sinfo", "-h", "-o", "%P %a"], capture_output=True, text=True, check=False
    )
    assert info.returncode == 0 and " up" in info.stdout, info.stdout + info.stderr
    partition = info.stdout.split()[0].rstrip("*")
    account = os.environ.get("SLURM_LOCAL_ACCOUNT", "ci")
    defaults = {
        **profile()["default-resources"],
        "slurm_account": account,
        "slurm_partition": partition,
    }
    return ["--default-resources", *(f"{k}={v}" for k, v in defaults.items())]


def _load_fixture_writer():
    return load_script(".test/make_fixture.py")


def _fixture_workdir(root: Path) -> Path:
    (root / "config").mkdir(parents=True)
    shutil.copy(REPO / ".test/config/config.yaml", root / "config/config.yaml")
    _load_fixture_writer().write(root / "mirror")
    return root


# A job that needs more memory than its first attempt asks for: SLURM kills it
# (ci/slurm-local.sh sets OverMemoryKill; on clusters with cgroups the state is
# OUT_OF_MEMORY) and Snakemake resubmits it with attempt 2, so with twice the memory.
# The job step holds the rule's command and a Snakemake process (about 150 MB):
# 400 + 150 MB > 400 MB on the first attempt, < 800 MB on the second.
HOG_SNAKEFILE = """
rule hog:
    output: "hog.txt"
    resources:
        mem_mb=lambda wildcards, attempt: 400 * attempt,
        runtime=5,
    shell:
        "python -c 'import time; a = bytes([1]) * (400 * 2**20); time.sleep(5)' && "
        "echo {resources.mem_mb} > {output}"
"""

SUBMITTED = re.compile(
    r"Job \d+ has been submitted with SLURM jobid (\d+) "
    r"\(log: \S*/slurm_logs/rule_(\w+)/"
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three runs at once (the SLURM runs mostly wait for status checks): the .test
    configuration through the SLURM profile and locally with --cores 2, and the
    memory-hungry job through the SLURM profile. Each: (workdir, snakemake output)."""
    resources = slurm_resources()
    on_slurm = _fixture_workdir(tmp_path_factory.mktemp("on_slurm"))
    local = _fixture_workdir(tmp_path_factory.mktemp("local"))
    hog = tmp_path_factory.mktemp("hog")
    (hog / "Snakefile").write_text(HOG_SNAKEFILE)
    commands = {
        "on_slurm": (on_slurm, "-s", str(SNAKEFILE), "--profile", str(PROFILE),
                     *resources, *FAST_POLLING),
        "hog": (hog, "-s", str(hog / "Snakefile"), "--profile", str(PROFILE),
                *resources, *FAST_POLLING),
        "local": (local, "-s", str(SNAKEFILE), "--cores", "2"),
    }  # fmt: skip
    results = {}

    def run(name):
        workdir, *args = commands[name]
        results[name] = snakemake(*args, "--directory", str(workdir), timeout=480)

    threads = [threading.Thread(target=run, args=(name,)) for name in commands]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        name: (commands[name][0], res.stdout + res.stderr, res.returncode)
        for name, res in results.items()
    }


def sacct_states(jobids) -> dict[str, str]:
    res = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j", ",".join(jobids)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(line.split("|", 1) for line in res.stdout.split())


def _ok(run):
    workdir, log, returncode = run
    assert returncode == 0, log[-6000:]
    return workdir, log


def _without(header_pattern: str, rows: list[list[str]]) -> list[list[str]]:
    keep = [i for i, h in enumerate(rows[0]) if not re.search(header_pattern, h)]
    return [[row[i] for i in keep] for row in rows]


TIME_OR_MEMORY = r"time|memory|RSS|fit_s|peak_mb"


def _csv_rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def _md_rows(path: Path) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("|")
    ]


@pytest.mark.slurm
def test_slurm_run_gives_the_local_tables(runs):
    on_slurm, _ = _ok(runs["on_slurm"])
    local, _ = _ok(runs["local"])
    tables = sorted(p.name for p in (local / "results/tables").iterdir())
    assert tables == sorted(p.name for p in (on_slurm / "results/tables").iterdir())
    cost = [t for t in tables if "_cost" in t]
    accuracy = [
        t for t in tables if "_cost" not in t and t.endswith((".csv", ".md", ".tex"))
    ]
    assert len(accuracy) == 12 and len(cost) == 8, tables
    for name in accuracy:  # byte for byte
        assert (on_slurm / "results/tables" / name).read_bytes() == (
            local / "results/tables" / name
        ).read_bytes(), name
    for name in cost:  # the same but for the measured time and memory
        if name.endswith(".tex"):
            continue
        read = _csv_rows if name.endswith(".csv") else _md_rows
        ours, theirs = (read(d / "results/tables" / name) for d in (on_slurm, local))
        assert ours[0] == theirs[0] and len(ours) == len(theirs) > 1, name
        assert _without(TIME_OR_MEMORY, ours) == _without(TIME_OR_MEMORY, theirs), name


@pytest.mark.slurm
def test_slurm_run_submitted_every_split_and_fit(runs):
    _, log = _ok(runs["on_slurm"])
    submitted = SUBMITTED.findall(log)
    # .test: 2 settings -> 2 splits jobs; bsf + tcca and ktcca -> 3 fit jobs. Data
    # preparation, gathering, tables and summary are localrules.
    assert sorted(rule for _, rule in submitted) == ["fit"] * 3 + ["splits"] * 2, log[
        -3000:
    ]
    states = sacct_states([jobid for jobid, _ in submitted])
    assert len(states) == 5 and set(states.values()) == {"COMPLETED"}, states


@pytest.mark.slurm
def test_slurm_job_killed_for_memory_is_retried_with_more(runs):
    hog, log = _ok(runs["hog"])
    jobids = [jobid for jobid, _ in SUBMITTED.findall(log)]
    assert len(jobids) == 2, log[-3000:]
    assert re.search(
        r"SLURM-job '\d+' failed, SLURM status is: '(FAILED|OUT_OF_MEMORY)'", log
    )
    assert "Trying to restart job" in log, log[-3000:]
    assert "mem_mb=400," in log and "mem_mb=800," in log, log[-3000:]
    states = sacct_states(jobids)
    assert states[jobids[0]] in {"FAILED", "OUT_OF_MEMORY"}, states
    assert states[jobids[1]] == "COMPLETED", states
    assert (hog / "hog.txt").read_text().strip() == "800"
