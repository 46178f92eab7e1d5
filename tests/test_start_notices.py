"""The line naming a data set that cannot be had ("Skipping data set nuswide: ... its
host is gone ...") is printed when a real run starts, once, and
not by `snakemake --lint` nor by a dry run (-n): Snakemake's ``onstart`` handler
prints it (workflow/rules/common.smk, skip_notices)."""

from __future__ import annotations

import pytest

from _snakemake import SNAKEMAKE, snakemake

pytestmark = pytest.mark.skipif(SNAKEMAKE is None, reason="snakemake is not installed")

# offline, an empty data folder: every data set of the configuration is skipped
# (NUS-WIDE whatever the network: its host is gone)
DATASETS = ("secstr", "ads", "nuswide", "mfeat")


def _run(tmp_path, *args):
    res = snakemake(
        *args, "--directory", str(tmp_path), "--config", "offline=true", timeout=300
    )
    return res, res.stdout + res.stderr


def test_lint_and_dry_run_name_no_skipped_data_set(tmp_path):
    for args in (("--lint",), ("-n", "--cores", "1")):
        res, out = _run(tmp_path, *args)
        assert res.returncode == 0, out[-3000:]
        assert "Skipping data set" not in out, (args, out[-3000:])


def test_a_real_run_names_each_skipped_data_set_once(tmp_path):
    res, out = _run(tmp_path, "--cores", "1")
    assert res.returncode == 0, out[-3000:]
    for dataset in DATASETS:
        lines = [x for x in out.splitlines() if f"Skipping data set {dataset}:" in x]
        assert len(lines) == 1, (dataset, out[-3000:])
    assert "its host is gone" in out
    assert "Skipped data sets: " in out  # the end of the run names them again
