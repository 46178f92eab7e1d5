"""The release owns the published numbers; a library change is measured against it.

- module digests see code, not comments, docstrings or messages;
- each method's fit code is the set of modules its fits executed, so code no fit
  runs (compose, model_selection, the Dask engine) belongs to no output;
- the sentinel refit at HEAD is compared with the release's committed rows:
  identical at the release's code (determinism), and a real numeric change (the
  ALS tolerance) names the methods it moves with their drift;
- REPRODUCTION.md's release section says which release owns the numbers, and
  says so loudly when the library has moved.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tcca_core.pipeline import release, sentinel
from tcca_core.pipeline.code_units import (
    PACKAGE,
    executed_modules,
    module_digest,
)
from tcca_core.registry import METHODS
from tcca_core.reproduction.release import drift_table as release_section_table
from tcca_core.reproduction.release import release_banner, release_section

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def manifest():
    return release.read_manifest(REPO)


@pytest.fixture(scope="module")
def head_status():
    """The check of this library against the release: the sentinel refit."""
    return release.check_head(REPO)


@pytest.fixture(scope="module")
def verified(head_status):
    """The code of this tree as the check ran it: each method's executed modules
    (a changed module is then seen against this tree, moved numbers or not)."""
    return head_status["executed"]


# ------------------------------------------------------------ module digests


def _digest_of(tmp_path, text: str) -> str:
    path = tmp_path / "m.py"
    path.write_text(text)
    return module_digest(path)


BASE = '''
import logging
import warnings
logger = logging.getLogger(__name__)
TOL = 1e-5


def swamped_message(eps):
    return f"eps = {eps:g} swamps the data"


def fit(x, tol=TOL):
    """Fit."""
    logger.info("rank %d: %d sweeps", x, 3)
    if x < 0:
        raise ValueError(f"x must be >= 0, got {x}")
    message = "stopped early"
    message += " (see the docs)"
    warnings.warn(message + "!", UserWarning)
    return x * tol
'''


def test_a_changed_message_moves_no_digest(tmp_path):
    before = _digest_of(tmp_path, BASE)
    for old, new in [
        ('"rank %d: %d sweeps"', '"rank %d took %d ALS sweeps"'),
        ('f"x must be >= 0, got {x}"', 'f"x: negative ({x})"'),
        ('"stopped early"', '"ALS stopped early"'),
        ('" (see the docs)"', '" (docs/tcca.md)"'),
        ('f"eps = {eps:g} swamps the data"', 'f"eps {eps} is too large"'),
        ('"""Fit."""', '"""Fit the model (reworded)."""'),
    ]:
        assert old in BASE
        assert _digest_of(tmp_path, BASE.replace(old, new)) == before, new


def test_a_changed_number_or_expression_moves_the_digest(tmp_path):
    before = _digest_of(tmp_path, BASE)
    for old, new in [
        ("TOL = 1e-5", "TOL = 1e-6"),
        ("return x * tol", "return tol * x"),
        ("if x < 0:", "if x <= 0:"),
        ("UserWarning)", "RuntimeWarning)"),
    ]:
        assert old in BASE
        assert _digest_of(tmp_path, BASE.replace(old, new)) != before, new
    assert module_digest(tmp_path / "none.py") == "missing"


def test_executed_modules_names_what_ran(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "used.py").write_text("def f():\n    return 1\n")
    (pkg / "idle.py").write_text("def g():\n    return 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import pkg.idle  # noqa: F401  (imported, never called)
    import pkg.used

    with executed_modules(pkg.used.__file__.rsplit("/", 1)[0]) as seen:
        pkg.used.f()
    assert seen == {"pkg/used.py"}


# -------------------------------------------------------------- the manifest


def test_the_release_names_the_published_library(manifest):
    summary = json.loads((REPO / "results" / "summary.json").read_text())
    prov = summary["provenance"]
    assert manifest["library_digest"] == prov["source_digest"]
    assert manifest["grid_commit"] == prov["git"]["commit"]
    assert manifest["version"] == "1.0.0"


def test_every_method_has_its_fit_code_and_only_that(manifest):
    assert set(manifest["methods"]) == set(METHODS)  # the sentinel covers them all
    everything = {m for mods in manifest["methods"].values() for m in mods}
    for idle in (
        "tcca_core/compose.py",
        "tcca_core/model_selection.py",
        "tcca_core/_dask.py",
        "tcca_core/_dask_chunks.py",
        "tcca_core/solver/dask.py",
        "tcca_core/solver/dask_chunks.py",
        "tcca_core/pipeline/sentinel.py",
    ):
        assert idle not in everything, idle
    for method in ("tcca", "ktcca"):
        assert "tcca_core/_als.py" in manifest["methods"][method]
    assert "tcca_core/_als.py" not in manifest["methods"]["cca_bst"]
    assert "tcca_core/protocol/run.py" in manifest["methods"]["bsf"]


def _copy(tmp_path) -> Path:
    copy = tmp_path / "tcca_core"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_messages_and_unexecuted_code_stale_nothing(tmp_path, manifest, verified):
    """A log message in the solver, a change to compose.py and one to the Dask
    engine leave every output current (no fit executes the last two)."""
    copy = _copy(tmp_path)
    here = release.code_changes(manifest, REPO, verified=verified)
    assert here["methods"] == {}  # the tree as the check found it
    assert release.code_changes(manifest, REPO, package=copy, verified=verified) == here
    _edit(
        copy / "solver" / "engine.py",
        '"rank %d (%d/%d): %d ALS sweeps',
        '"rank %d (%d of %d): %d sweeps',
    )
    _edit(
        copy / "compose.py",
        "from __future__ import annotations",
        "from __future__ import annotations\n\n_UNUSED = 1",
    )
    dask = copy / "solver" / "dask.py"
    dask.write_text(dask.read_text() + "\n_CHUNK_FLOOR = 2\n")
    changes = release.code_changes(manifest, REPO, package=copy, verified=verified)
    assert changes == here


def test_a_numeric_change_names_its_methods(tmp_path, manifest, verified):
    """A changed ALS constant or solver default (the tolerance) is a change of the
    fit code of TCCA, its uncentered variant and KTCCA, a changed default of TCCA
    alone (center) of the first two, and none of any other method (compared with
    this tree as checked)."""
    here = release.code_changes(manifest, REPO, verified=verified)

    def grown(edit):
        copy = _copy(tmp_path / edit[0].replace("/", "_"))
        _edit(copy / edit[0], edit[1], edit[2])
        changes = release.code_changes(manifest, REPO, package=copy, verified=verified)
        out = {
            m: sorted(set(mods) - set(here["methods"].get(m, ())))
            for m, mods in changes["methods"].items()
        }
        return {m: mods for m, mods in out.items() if mods}

    # each edit changes the expression whatever its value is now
    als = grown(("solver/als.py", "\nWINDOW = ", "\nWINDOW = 1 + "))
    assert set(als) == {"tcca", "tcca_nc", "ktcca"}, als
    assert als["ktcca"] == ["tcca_core/solver/als.py"]
    tol = grown(
        ("solver/params.py", "tol: float = _option(", "tol: float = _option(2 * ")
    )
    assert set(tol) == {"tcca", "tcca_nc", "ktcca"}, tol
    center = grown(("_tcca.py", "center: bool = ", "center: bool = not "))
    assert set(center) == {"tcca", "tcca_nc"}, center


# ------------------------------------------------------------- the sentinel


def test_sentinel_at_head(record_property, head_status):
    """Refit the sentinel set at this library and compare with the release.

    It passes whether or not numbers moved (a change that moves numbers is
    allowed; it is reported, in the terminal summary and by the command); at the
    release's own code it must be identical (the fits are deterministic).
    """
    status = head_status
    text = release.status_text(status)
    record_property("sentinel", text)
    verdict = status["sentinel"]
    assert verdict is not None
    no_change = not any(status["changes"].values())
    if no_change and status["environment_matches"]:
        assert verdict["neutral"], text
    for method, m in verdict["moved"].items():
        assert method in METHODS
        assert m["rows"] or m["fits"] or m["missing"]


def test_sentinel_names_a_changed_tolerance(monkeypatch):
    """A real numeric change (a looser ALS tolerance) moves TCCA and KTCCA and
    nothing else; the drift is measured and shown."""
    from tcca_core._ktcca import KTCCA
    from tcca_core._tcca import TCCA

    baseline = sentinel.read_baseline(REPO / release.SENTINEL)
    monkeypatch.setitem(TCCA.__init__.__kwdefaults__, "tol", 1e-2)
    monkeypatch.setitem(KTCCA.__init__.__kwdefaults__, "tol", 1e-2)
    picked = ("tcca", "ktcca", "cca_bst")
    rows, fits, _ = sentinel.run_sentinel(methods=picked)
    keep = {"rows": [], "fits": []}
    for r in baseline["rows"]:
        if r["key"].split("|")[2] in picked:
            keep["rows"].append(r)
    for f in baseline["fits"]:
        if f["entry"].split("/")[0] in picked:
            keep["fits"].append(f)
    verdict = sentinel.compare(keep, rows, fits)
    assert not verdict["neutral"]
    assert {"tcca", "ktcca"} <= set(verdict["moved"])
    assert "cca_bst" not in verdict["moved"]
    assert verdict["moved"]["tcca"]["fits"] > 0
    assert verdict["moved"]["tcca"]["max_abs_corr"] > 0
    table = release_section_table(verdict["moved"])
    assert "| TCCA |" in table and "| KTCCA |" in table


def test_compare_counts_missing_fits():
    baseline = {
        "rows": [{"key": "c|tcca|tcca|2||||3|", "val_acc": 0.5, "test_acc": 0.5}],
        "fits": [],
    }
    import pandas as pd

    verdict = sentinel.compare(
        baseline, pd.DataFrame(columns=list(sentinel.ROW_KEYS)), []
    )
    assert verdict["moved"]["tcca"]["missing"] == 1


# ------------------------------------------------- what REPRODUCTION.md says


def _status(**over):
    status = {
        "release": "1.0.0",
        "commit": "abc123def4567890",
        "dirty": False,
        "changes": {"methods": {}, "data": [], "scripts": []},
        "sentinel": {"neutral": True, "moved": {}},
        "environment_matches": True,
        "stale": [],
    }
    status.update(over)
    return status


def test_release_section_neutral_and_moved(manifest):
    text = release_section(manifest, None)
    assert "release 1.0.0" in text and manifest["library_digest"][:12] in text
    assert "No check" in text
    neutral = release_section(
        manifest,
        _status(
            changes={
                "methods": {"tcca": ["tcca_core/_als.py"]},
                "data": [],
                "scripts": [],
            }
        ),
    )
    assert "number-neutral" in neutral and "moved" not in neutral
    moved = release_section(
        manifest,
        _status(
            changes={
                "methods": {"tcca": ["tcca_core/_als.py"]},
                "data": [],
                "scripts": [],
            },
            sentinel={
                "neutral": False,
                "moved": {
                    "tcca": {
                        "rows": 3,
                        "fits": 2,
                        "max_abs_acc": 1.25,
                        "max_abs_corr": 0.0123,
                        "missing": 0,
                    },
                    "ktcca": {
                        "rows": 0,
                        "fits": 1,
                        "max_abs_acc": 0.0,
                        "max_abs_corr": 1e-9,
                        "missing": 0,
                    },
                },
            },
        ),
    )
    assert "The library has moved since release 1.0.0" in moved
    banner = release_banner(
        manifest, _status(sentinel={"neutral": False, "moved": {"tcca": {}}})
    )
    assert "the library has moved" in banner and "TCCA" in banner
    assert "moved" not in release_banner(manifest, _status())
    assert "still release 1.0.0's" in moved
    assert "| TCCA | 3 | 2 | 1.25 | 0.0123 |" in moved
    assert "| KTCCA | 0 | 1 | 0 | 1e-09 |" in moved


def _release_tree(tmp_path, manifest) -> Path:
    """The release's library, scripts and published summary, from git history."""
    import subprocess
    import tarfile

    tree = tmp_path / "release"
    tree.mkdir()
    archive = tmp_path / "release.tar"
    subprocess.run(
        ["git", "archive", "-o", str(archive), manifest["cut_from"], "--",
         "src/tcca_core", "investigations", "results/summary.json"],
        cwd=REPO, check=True, capture_output=True,
    )  # fmt: skip
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    (tree / "release").mkdir()
    shutil.copy(REPO / release.MANIFEST, tree / release.MANIFEST)
    return tree


def test_the_strict_release_check_passes_at_the_release_and_fails_after(
    tmp_path, manifest
):
    tree = _release_tree(tmp_path, manifest)
    package = tree / "src" / "tcca_core"
    assert release.release_problems(tree, package=package) == []
    _edit(package / "_tcca.py", "tol: float = 1e-5", "tol: float = 1e-4")
    problems = release.release_problems(tree, package=package)
    assert any(p.startswith("tcca: fit code changed") for p in problems), problems
    assert any(p.startswith("ktcca: fit code changed") for p in problems), problems
    assert not any(p.startswith("bsf:") for p in problems), problems


def test_the_data_check_compares_prepared_views(monkeypatch, manifest):
    """Prepared views identical to the release's verify nothing beyond the data
    sets checked; a different or missing one is named."""
    recorded = manifest["prepared"]["views"]
    assert {"ads", "mfeat"} <= set(recorded)
    fake = dict(recorded)
    monkeypatch.setattr(release, "prepared_digests", lambda mirror, names: fake)
    assert set(release.data_check(manifest, "mirror").values()) == {"identical"}
    fake["ads"] = "0" * 64
    fake["mfeat"] = None
    result = release.data_check(manifest, "mirror")
    assert result == {"ads": "different", "mfeat": "not at hand"}
    text = release_section(
        manifest,
        _status(
            changes={
                "methods": {},
                "data": ["tcca_core/datasets/ads.py"],
                "scripts": [],
            },
            data=result,
        ),
    )
    assert "ads: different" in text and "mfeat: not at hand" in text
    assert "not checked: nuswide" in text
