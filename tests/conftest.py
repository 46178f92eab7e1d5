"""Shared fixtures: seeded generators and small multi-view data with a planted signal."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits


def planted_views(
    n: int = 120,
    dims=(6, 7, 8),
    *,
    n_latent: int = 2,
    noise: float = 1.0,
    n_classes: int = 2,
    seed: int = 0,
):
    """Views X_p = z A_p + noise, labels from the first latent coordinate.

    Returns (views, y) with views a list of (n, d_p) arrays and y integer labels in
    0..n_classes-1 (roughly balanced).
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, n_latent))
    views = [
        z @ rng.standard_normal((n_latent, d)) + noise * rng.standard_normal((n, d))
        for d in dims
    ]
    score = z[:, 0] + 0.5 * rng.standard_normal(n)
    cuts = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    return views, np.digitize(score, cuts)


@pytest.fixture(scope="session", autouse=True)
def fit_cache_key(tmp_path_factory):
    """Give the suite, and the pipelines it starts, a fit-cache key of its own.

    Without it every FitCache would create the user's real key in ~/.config.
    Set in os.environ so that snakemake subprocesses inherit it.
    """
    import os

    folder = tmp_path_factory.mktemp("fit-cache-key")
    folder.chmod(0o700)
    key = str(folder / "fit-cache.key")
    old = os.environ.get("TCCA_FIT_CACHE_KEY_FILE")
    os.environ["TCCA_FIT_CACHE_KEY_FILE"] = key
    yield key
    if old is None:
        os.environ.pop("TCCA_FIT_CACHE_KEY_FILE", None)
    else:
        os.environ["TCCA_FIT_CACHE_KEY_FILE"] = old


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def make_views():
    """Factory for :func:`planted_views` (call it with the wanted sizes)."""
    return planted_views


@pytest.fixture
def single_blas_thread():
    """One BLAS thread inside the test (opt in with ``usefixtures``).

    The matrices in unit tests are tiny; on a shared machine multi-threaded BLAS only
    adds contention. The limit is lifted when the test ends.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture
def fit_calls(monkeypatch) -> list[str]:
    """The kinds of the fits run_method actually computes (cache misses), in order."""
    import tcca_core.protocol as protocol

    calls = []
    original = protocol._Run.cached

    def counting(self, kind, idx, gp, fit, rows=None):
        def fit_counted():
            calls.append(kind)
            return fit()

        return original(self, kind, idx, gp, fit_counted, rows=rows)

    monkeypatch.setattr(protocol._Run, "cached", counting)
    return calls


# ------------------------------------------------- the sentinel's verdict, shown

_SENTINEL: list[str] = []


def pytest_runtest_logreport(report):
    """Keep the sentinel refit's verdict (tests/test_release.py) for the summary."""
    if report.when == "call":
        for name, value in report.user_properties:
            if name == "sentinel":
                _SENTINEL.append(str(value))


def pytest_terminal_summary(terminalreporter):
    """Show whether this library is number-neutral to the release, or how far
    each method moved, at the end of every run that refitted the sentinel."""
    for text in _SENTINEL:
        terminalreporter.section("sentinel refit against the release")
        terminalreporter.write_line(text)
