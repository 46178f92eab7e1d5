"""The method registry (tcca_core.registry): one home for every fact about a method.

- it loads with the standard library only (the configuration is checked in every
  Snakemake process);
- each entry is consistent (its runner exists, its options are grid + extra, its r
  bound follows from its kind);
- adding a method is a runner plus one registry entry: a toy method registered here
  runs through the protocol, the selection and the tables with its own label.
  (tests/test_workflow.py runs the same toy method through a dry run of the
  pipeline.)
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tcca_core import registry, reporting
from tcca_core.protocol import make_splits, run_method

pytestmark = pytest.mark.usefixtures("single_blas_thread")


@pytest.mark.parametrize("module", ["tcca_core.registry", "tcca_core.paper"])
def test_light_modules_need_only_the_standard_library(module):
    code = (
        f"import sys; import {module}; "
        "heavy = {'numpy', 'pandas', 'scipy', 'sklearn', 'tensorly'} & "
        "set(sys.modules); assert not heavy, heavy"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr


def test_every_entry_is_consistent():
    assert list(registry.METHODS)[:3] == ["bsf", "cat", "cca_bst"]  # paper's rows
    for name, spec in registry.METHODS.items():
        assert spec.name == name
        assert callable(spec.load_runner()), name
        assert spec.options == (
            *spec.grid,
            *spec.extra,
            *(("subset",) if spec.transductive else ()),
        )
        if not spec.has_r:
            assert spec.r_bound is None
        else:
            rows = spec.uses_kernels or spec.transductive
            assert spec.r_bound == ("rows" if rows else "views"), name
    for name, spec in registry.LEARNERS.items():
        assert spec.name == name and spec.load().__name__.endswith("Learner")
    assert registry.R_GRID_PAPER[-1] == 300 and len(registry.R_GRID_PAPER) == 35


def test_a_malformed_entry_fails_when_registered():
    with pytest.raises(ValueError, match="runner must name"):
        registry.MethodSpec("x", "X", "linear", runner="no_colon")
    with pytest.raises(ValueError, match="family"):
        registry.MethodSpec("x", "X", "quadratic", runner="a:b")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(registry.METHODS["tcca"])
    with pytest.raises(ValueError, match="role must be one of paper, extension"):
        registry.MethodSpec("x", "X", "linear", role="ours", runner="a:b")
    with pytest.raises(ValueError, match="needs a description and a post_hoc_note"):
        registry.MethodSpec("x", "X", "linear", role="post_hoc", runner="a:b")


# ------------------------------------------------------------------------ roles


def _config(methods: dict, post_hoc: bool = False) -> dict:
    setting = {"learner": "knn", "per_class": 2, "methods": methods}
    return {
        "r_grid": [2],
        "post_hoc": post_hoc,
        "datasets": {"nuswide": {"settings": {"s": setting}}},
        "tables": {},
    }


def test_each_role_has_one_meaning(monkeypatch, caplog):
    """paper: runs, enters the claims; extension: runs by default, no claim reads it;
    post_hoc: runs only with post_hoc: true, and the check says why it did not."""
    from tcca_core import reproduction
    from tcca_core.pipeline.config import resolve_settings

    spec = {"runner": "a:b", "group": "tensor"}
    ext = registry.MethodSpec("ext", "Ext", "linear", role="extension", **spec)
    late = registry.MethodSpec(
        "late",
        "Late",
        "linear",
        role="post_hoc",
        description="a late idea",
        post_hoc_note="came late",
        **spec,
    )
    for m in (ext, late):
        monkeypatch.setitem(registry.METHODS, m.name, m)
    methods = {"bsf": {}, "ext": {}, "late": {}, "tcca_nc": {}}
    with caplog.at_level("WARNING", logger="tcca_core.pipeline.config"):
        run = resolve_settings(_config(methods))["nuswide"]["s"]["methods"]
    assert list(run) == ["bsf", "ext"]  # paper and extension run by default
    said = caplog.text
    assert "Not running late (a late idea) in nuswide/s: it is post hoc" in said
    assert "Not running tcca_nc (TCCA on the raw (uncentered) views)" in said
    assert "post_hoc: true" in said
    run = resolve_settings(_config(methods, post_hoc=True))["nuswide"]["s"]["methods"]
    assert list(run) == ["bsf", "ext", "late", "tcca_nc"]
    # only the paper's methods enter the claims; post hoc ones get their own section
    assert reproduction._of_paper("tcca") and not reproduction._of_paper("ext")
    assert not reproduction._post_hoc("ext") and reproduction._post_hoc("late")
    assert ext.runs_by_default and not late.runs_by_default and not ext.paper


def test_post_hoc_prose_is_the_registry_s(monkeypatch):
    """REPRODUCTION.md describes a post hoc method with its registry entry."""
    import dataclasses
    import json
    from pathlib import Path

    from tcca_core import reproduction

    summary = json.loads(
        (Path(__file__).resolve().parents[1] / "results/summary.json").read_text()
    )
    nc = dataclasses.replace(
        registry.METHODS["tcca_nc"],
        description="a renamed variant",
        post_hoc_note="is described by its own entry",
    )
    monkeypatch.setitem(registry.METHODS, "tcca_nc", nc)
    text = " ".join(reproduction.build(summary).split())
    assert "## Post hoc: a renamed variant" in text
    assert "**Post hoc.** TCCA (uncentered) is described by its own entry, so" in text
    assert "raw views instead of the centered" not in text
    assert "(#post-hoc-a-renamed-variant)" in text


def test_reporting_and_reproduction_read_the_registry():
    from tcca_core import reproduction

    assert reporting.METHOD_LABELS["cca_bst"] == "CCA (BST)"
    assert list(reporting.METHOD_LABELS) == list(registry.METHODS)
    assert reproduction._DR_KERNEL == ("kcca_bst", "kcca_avg", "ktcca")
    assert "tcca_nc" not in reproduction._DR_LINEAR  # not one of the paper's
    assert registry.METHODS["tcca_nc"].role == "post_hoc"


# ------------------------------------------------------------ a toy method, end to end


def run_toy(data, points):
    """Toy runner: the first r columns of a fixed random projection of the views."""
    from tcca_core.protocol.run import Fit

    V = np.hstack([np.asarray(X, float) for X in data.row_data(range(data.m))])
    for gp in points:
        rng = np.random.default_rng(data.seed)
        P = gp["scale"] * rng.standard_normal((V.shape[1], V.shape[1]))
        yield Fit(
            lambda P=P: P, lambda P: lambda r: V @ P[:, :r], params=gp, r_max=len(P)
        )


TOY = registry.MethodSpec(
    "toy",
    "Toy projection",
    "linear",
    {"scale": (1.0, 2.0)},
    runner=f"{__name__}:run_toy",
)


@pytest.fixture
def toy(monkeypatch):
    """The toy method in the registry for the test (removed afterwards)."""
    monkeypatch.setitem(registry.METHODS, "toy", TOY)
    return TOY


def test_a_registered_method_runs_through_protocol_and_tables(toy, make_views):
    views, y = make_views(n=90, dims=(4, 5, 6), n_classes=3, seed=3)
    splits = make_splits(y, n_labeled=30, n_splits=2, seed=0)
    runs = pd.concat(
        [
            run_method(views, y, s, "toy", r_grid=[2, 4, 40], learner="knn")
            for s in splits
        ]
        + [run_method(views, y, s, "bsf", learner="knn") for s in splits],
        ignore_index=True,
    ).assign(setting="s")
    toy_rows = runs[runs["method"] == "toy"]
    assert set(toy_rows["r"]) == {2, 4, 40} and toy_rows["r_capped"].sum() == 2 * 2
    assert set(toy_rows["params"]) == {'{"scale": 1.0}', '{"scale": 2.0}'}
    cells = reporting.accuracy_cells(runs, "val")
    table, _ = reporting.accuracy_table(
        cells, [{"setting": "s", "label": "S"}], paper=None
    )
    assert list(table["Method"]) == ["BSF", "Toy projection"]  # registry order
    with pytest.raises(ValueError, match="has no parameter 'eps'"):
        run_method(views, y, splits[0], "toy", params={"eps": [1.0]})
