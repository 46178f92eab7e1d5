"""A method is one plug-in: a runner and one ``register`` call.

The toy method below is added the way docs/architecture.md says, with nothing else
edited: its runner yields ``Fit`` units (a features-only fit and the representation
at each r), its estimator class is named in its registry entry. run_method caps r,
runs the learner, scores, measures and caches it; the fit cache stores its
estimator on disk; the tables and figures show it.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tcca_core.fit_cache import FitCache
from tcca_core.pipeline import jobs
from tcca_core.protocol import make_splits, run_method
from tcca_core.protocol.plugin import Fit
from tcca_core.registry import METHODS, MethodSpec, register

FITS: list[float] = []  # the toy fits actually computed (cache misses)


class ToyPCA:
    """Principal axes of the concatenated views, scaled (a features-only DR step)."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def get_params(self, deep=False):
        return {"scale": self.scale}

    def fit(self, views):
        FITS.append(self.scale)
        X = np.hstack([np.asarray(V, float) for V in views])
        self.mean_ = X.mean(axis=0)
        self.components_ = np.linalg.svd(X - self.mean_, full_matrices=False)[2].T
        return self

    def transform(self, views):
        X = np.hstack([np.asarray(V, float) for V in views])
        return self.scale * (X - self.mean_) @ self.components_


def run_toy(data, points):
    """The toy's runner: one fit per grid point, its first r axes at every r."""
    every = range(data.m)
    for gp in points:
        yield Fit(
            lambda gp=gp: ToyPCA(gp["scale"]).fit(data.fit_data(every)),
            lambda est: lambda r: est.transform(data.row_data(every))[:, :r],
            params=gp,
            r_max=lambda est: est.components_.shape[1],
            key=("toy", tuple(every), gp),
            shared=True,
        )


TOY = MethodSpec(
    "toy",
    "Toy projection",
    "linear",
    {"scale": (1.0, 2.0)},
    role="extension",
    runner="test_plugin:run_toy",
    estimators=("test_plugin:ToyPCA",),
)


@pytest.fixture
def toy():
    register(TOY)
    FITS.clear()
    yield "toy"
    del METHODS["toy"]


@pytest.fixture
def data(rng):
    N = 60
    y = np.repeat(np.arange(3), N // 3)
    views = [rng.standard_normal((N, d)) + y[:, None] for d in (3, 4, 2)]
    splits = make_splits(y, n_labeled=12, n_splits=2, seed=0)
    return views, y, splits


def test_a_registered_method_runs_capped_and_cached(toy, data, tmp_path):
    views, y, splits = data
    kw = {"r_grid": [2, 5, 20], "learner": "knn", "seed": 1}
    plain = run_method(views, y, splits[0], toy, **kw)
    # every (scale, r, k); r = 20 is above the 9 axes: capped, not evaluated
    assert set(plain["r"]) == {2, 5, 20} and set(plain["r_max"]) == {9}
    capped = plain[plain["r"] == 20]
    assert capped["r_capped"].all() and capped["val_acc"].isna().all()
    assert len(capped) == 2  # one row per scale
    scored = plain[~plain["r_capped"]]
    assert scored["k"].tolist() == list(range(1, 11)) * 4
    assert scored["fit_shared"].all() and (scored["dim"] == scored["r"]).all()
    assert scored["fit_s"].notna().all() and scored["peak_mb"].notna().all()
    assert {json.loads(p)["scale"] for p in plain["params"]} == {1.0, 2.0}
    assert FITS == [1.0, 2.0]
    # run_method caches it: the second split (same fit rows) fits nothing, and the
    # fit cache stores the toy's own estimator on disk for another process
    FITS.clear()
    cache = FitCache(tmp_path / "fits")
    cached = [run_method(views, y, s, toy, cache=cache, **kw) for s in splits]
    assert FITS == [1.0, 2.0] and cache.misses == 2
    again = FitCache(tmp_path / "fits")
    reread = run_method(views, y, splits[0], toy, cache=again, **kw)
    assert FITS == [1.0, 2.0] and again.hits == 2 and again.misses == 0
    cols = ["r", "k", "params", "val_acc", "test_acc"]
    pd.testing.assert_frame_equal(plain[cols], cached[0][cols])
    pd.testing.assert_frame_equal(plain[cols], reread[cols])


def test_a_registered_method_is_in_the_tables_and_figures(
    toy, data, tmp_path, monkeypatch
):
    from matplotlib.figure import Figure

    views, y, splits = data
    frames = [
        run_method(views, y, s, m, r_grid=[2, 5], learner="knn")
        for m in ("bsf", toy)
        for s in splits
    ]
    runs = pd.concat(frames, ignore_index=True)
    runs.insert(0, "setting", "two")
    runs.insert(0, "dataset", "nuswide")
    runs["threads"] = 1
    drawn: list[str] = []  # the labels of the lines of every figure saved
    savefig = Figure.savefig

    def spy(fig, *args, **kwargs):
        drawn.extend(line.get_label() for ax in fig.axes for line in ax.get_lines())
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    bench = tmp_path / "bench.tsv"
    bench.write_text("s\th:m:s\tmax_rss\n1.0\t0:00:01\t100.0\n")
    benchmarks = [
        {"setting": "two", "method": m, "benchmark": bench} for m in ("bsf", toy)
    ]
    names = [
        "csv", "md", "tex", "csv_best_r", "md_best_r", "tex_best_r", "json", "cost",
        "cost_md", "cost_tex", "cost_by_r", "accuracy_png", "accuracy_pdf",
        "cost_png", "cost_pdf",
    ]  # fmt: skip
    suffix = {"png": ".png", "pdf": ".pdf", "md": ".md", "tex": ".tex", "json": ".json"}
    out = {n: tmp_path / (n + suffix.get(n.rsplit("_", 1)[-1], ".csv")) for n in names}
    spec = {
        "name": "t",
        "title": "T",
        "dataset": "nuswide",
        "paper": None,
        "columns": [{"setting": "two", "label": "two"}],
        "same_as": {"two": {}},
    }
    jobs.build_table(runs, benchmarks, spec, out)
    table = out["md"].read_text()
    assert "Toy projection" in table and "BSF" in table
    assert table.index("BSF") < table.index("Toy projection")  # registry order
    assert "Toy projection" in out["cost_md"].read_text()
    assert "Toy projection" in drawn and out["accuracy_png"].stat().st_size > 0
