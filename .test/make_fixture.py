"""Write a tiny NUS-WIDE look-alike for the integration test of the pipeline.

The files have the official names and formats (tcca_core.datasets.nuswide reads them
like the real archives): Low_Level_Features/{BoW_int,Normalized_CORR,Normalized_WT}.dat
and Groundtruth/AllLabels/Labels_<concept>.txt. NUS-WIDE is the one data set whose raw
files are not pinned by checksum, so a fixture can stand in for it; everything else in
the pipeline (preparation, splits, fits, tables, figures) runs unchanged.

    python .test/make_fixture.py .test/mirror
    snakemake --directory .test --cores 2
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from tcca_core.datasets.nuswide import CONCEPTS, VIEWS

PER_CONCEPT = 16  # single-label images per concept
N_NOISE = 8  # images with no mammal concept or two of them (dropped by the loader)


def _rows(X, integer: bool) -> str:
    # the official .dat files are space-separated with a trailing space
    fmt = (lambda v: str(int(v))) if integer else (lambda v: f"{v:.6f}")
    return "".join(" ".join(map(fmt, row)) + " \n" for row in X)


def write(mirror: str | Path, seed: int = 0) -> Path:
    """Write ``<mirror>/nuswide/`` and return it. Same seed, same bytes."""
    rng = np.random.default_rng(seed)
    C = len(CONCEPTS)
    y = np.repeat(np.arange(C), PER_CONCEPT)
    n = y.size + N_NOISE
    labels = np.zeros((n, C), dtype=int)
    labels[np.arange(y.size), y] = 1
    for i in range(y.size, n):  # zero or two concepts
        labels[i, rng.choice(C, size=2 * (i % 2), replace=False)] = 1
    order = rng.permutation(n)
    labels, cls = labels[order], np.r_[y, np.zeros(N_NOISE, int)][order]

    base = Path(mirror) / "nuswide"
    feat, gt = base / "Low_Level_Features", base / "Groundtruth" / "AllLabels"
    feat.mkdir(parents=True, exist_ok=True)
    gt.mkdir(parents=True, exist_ok=True)
    for name, file_all, _split_files, dim in VIEWS:
        # weak class signal (a few percent of the spread), so accuracies are not 100 %
        centers = 0.5 + 0.1 * rng.random((C, dim))
        if name == "bow":  # visual-word counts with class-dependent rates
            X = rng.poisson(2.0 * centers[cls])
        else:  # normalized descriptors around a class centre
            X = np.clip(centers[cls] + 0.2 * rng.standard_normal((n, dim)), 0, None)
            X /= X.sum(axis=1, keepdims=True)
        (feat / file_all).write_text(_rows(X, name == "bow"))
    for c, concept in enumerate(CONCEPTS):
        (gt / f"Labels_{concept}.txt").write_text(
            "".join(f"{v}\n" for v in labels[:, c])
        )
    return base


if __name__ == "__main__":
    print(write(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "mirror"))
