"""
TCCA out of core: views stored as Zarr, fitted by Dask workers
==============================================================

    pip install "tcca[dask]"
    python examples/dask_zarr.py                      # a LocalCluster on this machine
    python examples/dask_zarr.py --scheduler tcp://scheduler:8786   # a real cluster

The views are written to a Zarr store chunk by chunk (never held whole), opened
lazily with ``dask.array.from_zarr``, and ``TCCA().fit`` runs every pass over
them as Dask tasks: the results (weights, correlations, projections) are small
NumPy arrays, and ``transform`` returns lazy Dask arrays, written back to Zarr
here. On a real cluster the store must be readable by every worker (a shared
file system or an object store URL such as s3://bucket/views.zarr), and the
workers need ``tcca`` installed.
"""

# The gallery's thumbnail (this example draws no figure): the published fit time
# and memory of SecStr, the largest data set.
# sphinx_gallery_thumbnail_path = "../results/figures/secstr_cost.png"

from __future__ import annotations

import argparse
import time

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

from tcca_core import TCCA


def write_views(store: str, rows: int, features: int, chunk_rows: int) -> None:
    """Three views sharing a two-dimensional latent signal, written as Zarr."""
    rs = da.random.RandomState(0)
    z = rs.standard_normal((rows, 2), chunks=(chunk_rows, -1))
    for p in range(3):
        A = np.random.default_rng(p).standard_normal((2, features))
        noise = rs.standard_normal((rows, features), chunks=(chunk_rows, -1))
        X = z @ A + noise
        X.to_zarr(store, component=f"view{p}", overwrite=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--chunk-rows", type=int, default=None)
    ap.add_argument("--rank", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--store", default="views.zarr")
    ap.add_argument("--scheduler", default=None, help="address of a Dask scheduler")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="2GB", help="per LocalCluster worker")
    args = ap.parse_args()
    chunk_rows = args.chunk_rows or max(1, min(args.rows // 4, 100_000))

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            memory_limit=args.memory_limit,
            dashboard_address=None,
        )
        client = Client(cluster)
    with client:
        write_views(args.store, args.rows, args.features, chunk_rows)
        views = [da.from_zarr(args.store, component=f"view{p}") for p in range(3)]

        t = time.perf_counter()
        # one start: on data this size every restart costs passes over the store
        est = TCCA(
            n_components=args.rank,
            init="svd",
            n_init=1,
            max_iter=args.max_iter,
            random_state=0,
        ).fit(views)
        print(f"fit in {time.perf_counter() - t:.1f} s, {est.n_iter_} ALS sweeps")
        print("correlations", np.round(est.correlations_, 4))

        Z = est.transform(views)  # lazy: nothing computed yet
        Z.to_zarr(args.store, component="projected", overwrite=True)
        print("projected data written to", f"{args.store}/projected", Z.shape)


if __name__ == "__main__":
    main()
