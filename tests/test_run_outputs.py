"""Where a run writes, and a run that cannot fail on one missing source.

- the folder of a run (``tcca_core.pipeline.config.run_location``): the full
  configuration writes the published ``results/`` and REPRODUCTION.md; any other
  configuration writes ``results/<name>/``, says "reduced run" in its titles, and may
  not name the published folder;
- a quick-style run (config/quick.yaml plus a small overlay on a NUS-WIDE look-alike)
  in a fresh clone leaves ``git status`` clean, reproduction file included;
- with the UCI site unreachable (every download goes to a closed port on 127.0.0.1,
  through the proxy variables: nothing leaves the machine), with and without a
  mirror, Ads is skipped with one line saying what was tried, what to download and
  where to put it; the run goes on with NUS-WIDE and exits 0; ``strict: true`` makes
  it an error; ``offline: true`` skips it before any job.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from _scripts import load_script
from _snakemake import REPO, SNAKEFILE, SNAKEMAKE, snakemake
from tcca_core.pipeline.config import ConfigError, run_location

needs_snakemake = pytest.mark.skipif(
    SNAKEMAKE is None, reason="snakemake is not installed"
)
FIXTURE_CONFIG = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())


def _write_fixture(folder: Path) -> Path:
    return load_script(".test/make_fixture.py").write(folder)


# ------------------------------------------------------------------ run_location


BASE = {"seed": 0, "n_splits": 5, "r_grid": "paper", "data_root": "data"}


def test_the_full_configuration_writes_the_published_folder(tmp_path):
    # keys that change where data are or how jobs run keep it the full one
    cfg = {**BASE, "mirror": "/m", "offline": True, "fit_cache": ".c", "strict": True}
    run = run_location(cfg, BASE, [], workdir=tmp_path)
    assert run == {
        "results": "results",
        "logs": "logs",
        "reduced": False,
        "label": "full",
        "published": True,
        "reproduction": "REPRODUCTION.md",
        "note": "",
    }


def test_any_other_configuration_writes_its_own_folder(tmp_path):
    quick = {**BASE, "n_splits": 2}
    run = run_location(quick, BASE, ["config/quick.yaml"], workdir=tmp_path)
    assert run["results"] == "results/quick" and run["logs"] == "results/quick/logs"
    assert run["reduced"] and not run["published"]
    assert run["reproduction"] == "results/quick/REPRODUCTION.md"
    assert run["note"] == "reduced run: quick"
    # two overlays name it together; --config values alone: "custom"
    assert run_location(quick, BASE, ["a.yaml", "/x/b.yml"])["results"] == "results/a-b"
    assert run_location(quick, BASE, [])["results"] == "results/custom"
    # an explicit folder is used as it is
    mine = {**quick, "results_dir": "out/mine/"}
    assert run_location(mine, BASE, [], workdir=tmp_path)["results"] == "out/mine"


@pytest.mark.parametrize(
    "folder",
    ["results", "./results", "results/", "results/tables", "results/figures/x"],
)
def test_a_reduced_run_may_not_write_the_published_folder(tmp_path, folder):
    cfg = {**BASE, "n_splits": 2, "results_dir": folder}
    with pytest.raises(ConfigError, match="invalid config: results_dir: .* published"):
        run_location(cfg, BASE, ["config/quick.yaml"], workdir=tmp_path)
    # the full configuration may name it
    full = {**BASE, "results_dir": folder}
    if folder.rstrip("/") in ("results", "./results"):
        assert run_location(full, BASE, [], workdir=tmp_path)["published"]


# -------------------------------------------------------------- a fresh clone


def _fresh_clone(dest: Path) -> Path:
    """The working tree's files as git sees them (tracked, and untracked that are
    not ignored), committed in a new repository: a fresh clone of what is here."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)

    def git(*args):
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=dest, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "clone")
    return dest


# The quick configuration on the NUS-WIDE look-alike: one labeled count per table, a
# baseline, TCCA and KTCCA, r in {2, 4}; the other data sets are skipped (offline).
TINY = {
    "offline": True,
    "r_grid": [2, 4],
    "datasets": {
        "nuswide": {
            "settings": {
                "linear4": {"subset": 160, "methods": {"bsf": {}, "tcca": {"eps": [1.0]}}},
                "kernel4": {"subset": 160, "methods": {"ktcca": {"eps": [1.0]}}},
            }
        }
    },
    "tables": {
        "nuswide_linear": {"columns": [{"setting": "linear4", "label": "#labeled = 4", "paper": "4"}]},
        "nuswide_kernel": {"columns": [{"setting": "kernel4", "label": "#labeled = 4", "paper": "4"}]},
    },
}  # fmt: skip


@needs_snakemake
def test_a_quick_run_in_a_fresh_clone_leaves_git_status_clean(tmp_path):
    clone = _fresh_clone(tmp_path / "clone")
    published = {
        p: (clone / p).read_bytes()
        for p in ("REPRODUCTION.md", "results/summary.json", "results/tables/ads.md")
    }
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(yaml.safe_dump({**TINY, "mirror": str(tmp_path / "mirror")}))
    _write_fixture(tmp_path / "mirror")
    overlays = ["--configfile", "config/quick.yaml", str(tiny)]
    res = snakemake("--cores", "2", *overlays, cwd=clone, blas_threads=1)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-5000:]
    # the data sets it cannot have: one line each, before any job
    for dataset in ("secstr", "ads", "mfeat"):
        lines = [x for x in out.splitlines() if f"Skipping data set {dataset}:" in x]
        assert len(lines) == 1, (dataset, lines)
        assert "offline: nothing is downloaded" in lines[0]
    end = next(x for x in out.splitlines() if x.startswith("Skipped data sets: "))
    assert sorted(end.split(": ")[1].split(" (")[0].split(", ")) == [
        "ads", "mfeat", "secstr"
    ]  # fmt: skip
    # the end says where everything is
    assert (
        "Outputs of this run (reduced run (quick-tiny)) are in results/quick/:" in out
    )
    assert "tables:  results/quick/tables/" in out
    assert "report:  snakemake --report results/quick/report.html" in out

    quick = clone / "results" / "quick"
    md = (quick / "tables" / "nuswide_linear.md").read_text()
    assert md.startswith(
        "**Annotation accuracy (%) at the best dimension, NUS-WIDE mammal, linear "
        "methods (kNN) [validation-selected (A)] [reduced run: quick-tiny]**"
    )
    assert "not the full configuration" in md
    for suffix in ("_best_r.md", "_cost.md", ".tex", "_best_r.tex", "_cost.tex"):
        text = (quick / "tables" / f"nuswide_kernel{suffix}").read_text()
        assert "reduced run: quick-tiny" in text, suffix
    html = (quick / "report" / "nuswide_linear.html").read_text()
    assert html.index("validation-selected (A)") < html.index("best mean over r (B)")
    summary = json.loads((quick / "summary.json").read_text())
    assert summary["provenance"]["run"]["reduced"] is True
    assert set(summary["skipped"]) == {"secstr", "ads", "mfeat"}

    res = snakemake("--cores", "1", "reproduction", *overlays, cwd=clone)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    text = (quick / "REPRODUCTION.md").read_text()
    assert "**Reduced run (quick-tiny).**" in text
    assert "](figures/nuswide_linear_accuracy.png)" in text

    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert status == "", status
    for path, content in published.items():
        assert (clone / path).read_bytes() == content, path


# ------------------------------------------------------ the UCI site unreachable


@pytest.fixture
def no_network(monkeypatch):
    """Every download goes through a proxy on a closed port of 127.0.0.1 (connection
    refused at once): the UCI site, PyPI, anything, is unreachable."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(var, f"http://127.0.0.1:{port}")
    for var in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    return port


def _ads_and_nuswide(work: Path, *, mirror: bool, **keys) -> Path:
    """A working directory: the look-alike NUS-WIDE (in the mirror, or placed in
    data/raw/) with a baseline, and Ads (nowhere: it must be downloaded)."""
    cfg = json.loads(json.dumps(FIXTURE_CONFIG))
    cfg["datasets"]["nuswide"]["settings"] = {
        "linear2": {**cfg["datasets"]["nuswide"]["settings"]["linear2"], "methods": {"bsf": {}}}
    }  # fmt: skip
    del cfg["tables"]["nuswide_kernel"]
    cfg["datasets"]["ads"] = {
        "settings": {"l10": {"learner": "rls", "n_labeled": 10, "methods": {"bsf": {}}}}
    }
    cfg["tables"]["ads"] = {
        "dataset": "ads",
        "title": "Ads",
        "columns": [{"setting": "l10", "label": "#labeled = 10"}],
    }
    if mirror:
        _write_fixture(work / "mirror")
    else:
        cfg["mirror"] = None
        _write_fixture(work / "data" / "raw")
    cfg.update(keys)
    (work / "config").mkdir(parents=True)
    (work / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return work


def _run(work: Path):
    res = snakemake(
        "-s", str(SNAKEFILE), "--directory", str(work), "--cores", "2",
        cwd=work, blas_threads=1,
    )  # fmt: skip
    return res, res.stdout + res.stderr


@needs_snakemake
@pytest.mark.parametrize("mirror", [True, False], ids=["with-mirror", "without-mirror"])
def test_unreachable_uci_skips_ads_with_one_line_and_goes_on(
    tmp_path, no_network, mirror
):
    work = _ads_and_nuswide(tmp_path / "w", mirror=mirror)
    res, out = _run(work)
    assert res.returncode == 0, out[-5000:]
    lines = [x for x in out.splitlines() if "Skipping data set ads:" in x]
    assert len(lines) == 1, lines
    line = lines[0]
    # what was tried ...
    if mirror:
        assert "tried the mirror mirror/ads/ (not there)" in line
    assert "https://archive.ics.uci.edu/" in line and "Connection refused" in line
    # ... what to download and where to put it
    assert "download https://archive.ics.uci.edu/static/public/51/" in line
    assert "put it in data/raw/ads/" in line
    assert "Skipped data sets: ads" in out
    # the run went on with NUS-WIDE; nothing of Ads
    assert (work / "results/tables/nuswide_linear.md").is_file()
    assert not (work / "results/tables/ads.md").exists()
    summary = json.loads((work / "results/summary.json").read_text())
    assert list(summary["tables"]) == ["nuswide_linear"]
    assert summary["skipped"]["ads"] in line
    assert not list((work / "data").rglob("*.part"))


@needs_snakemake
def test_strict_makes_a_missing_data_set_an_error(tmp_path, no_network):
    work = _ads_and_nuswide(tmp_path / "w", mirror=True, strict=True)
    res, out = _run(work)
    assert res.returncode != 0
    assert "Data set ads cannot be obtained (strict: the run stops):" in out
    assert "Connection refused" in out and "put it in data/raw/ads/" in out


@needs_snakemake
def test_offline_skips_before_any_job(tmp_path, no_network):
    work = _ads_and_nuswide(tmp_path / "w", mirror=True, offline=True)
    res, out = _run(work)
    assert res.returncode == 0, out[-5000:]
    lines = [x for x in out.splitlines() if "Skipping data set ads:" in x]
    assert len(lines) == 1 and "offline: nothing is downloaded" in lines[0], lines
    assert not (work / "results/data/ads.json").exists()  # no job for it
    assert (work / "results/data/nuswide.json").exists()
    assert (work / "results/tables/nuswide_linear.md").is_file()
