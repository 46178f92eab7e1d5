"""TCCA on Dask: out-of-core sweeps against their bounds, and overhead.

Two parts, each printing a Markdown table (``--out`` writes them to a file):

``outofcore``: synthetic views (a planted latent signal plus noise, float64) are
written to a Zarr store on disk, uncompressed, chunk by chunk, larger than the
workers' total memory limit; then ``TCCA.fit_path`` at ranks ``--ranks`` runs on a
``LocalCluster(n_workers, threads_per_worker=1, memory_limit)`` reading the store.
Per rank: the wall time of one ALS sweep (m MTTKRP passes plus the line search's),
of one pass, the bytes read per sweep by the workers (``rchar`` of /proc/<pid>/io:
every byte read, page cache included), the workers' peak resident memory during
the fit (sampled every 0.2 s), and the bounds: one read of the data (a Dask pass
that only reads and sums it, timed on the same cluster) and the sweep's flops
(4 N r sum(d), the in-memory engine's) at the workers' DGEMM rate (one thread
each, measured on the workers).

``inmemory``: a SecStr-sized problem (3 views of 105 features, N = 84,000) fitted
by the in-memory implicit engine and by the Dask engine (views persisted in the
workers' memory), same start and sweeps: the objective of both (must agree) and
the time per sweep, whose difference is the Dask overhead.

    pip install -e ".[dask]"
    python benchmarks/bench_dask.py outofcore --rows 10_000_000 --features 100 \\
        --memory-limit 3GB --ranks 10 50 --store /data/views.zarr
    python benchmarks/bench_dask.py inmemory
"""

from __future__ import annotations

import argparse
import os
import shutil
import threading
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster

from tcca_core import TCCA
from tcca_core.solver import dask as tdask


def _proc_io() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def _dgemm_gflops(n: int = 1500, repeats: int = 3) -> float:
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((n, n))
    with threadpool_limits(1):
        a @ a
        t = time.perf_counter()
        for _ in range(repeats):
            a @ a
        dt = (time.perf_counter() - t) / repeats
    return 2 * n**3 / dt / 1e9


class PeakMemory:
    """The workers' resident memory, sampled in a thread; ``peak`` per worker."""

    def __init__(self, client: Client, every: float = 0.2):
        self.client, self.every = client, every
        self.peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                for w, rss in self.client.run(_rss).items():
                    self.peak[w] = max(self.peak.get(w, 0), rss)
            except Exception:  # a worker restarting: sample again
                pass
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


class PassLog:
    """Times every MTTKRP pass of the Dask engine, by rank (its factors' columns)."""

    def __init__(self):
        self.calls: list[tuple[int, float]] = []
        self._orig = tdask.DaskMoment.mttkrp

    def __enter__(self):
        log, orig = self.calls, self._orig

        def timed(op, factors, p):
            t = time.perf_counter()
            out = orig(op, factors, p)
            log.append((out.shape[1], time.perf_counter() - t))
            return out

        tdask.DaskMoment.mttkrp = timed  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc):
        tdask.DaskMoment.mttkrp = self._orig  # type: ignore[method-assign]


def write_store(store: str, rows: int, dims, chunk_rows: int) -> None:
    """Planted views written chunk by chunk (never held whole), uncompressed."""
    rs = da.random.RandomState(0)
    z = rs.standard_normal((rows, 2), chunks=(chunk_rows, -1))
    for p, d in enumerate(dims):
        A = np.random.default_rng(p).standard_normal((2, d))
        X = z @ A + rs.standard_normal((rows, d), chunks=(chunk_rows, -1))
        X = X.astype(np.float64)
        try:  # zarr 3
            X.to_zarr(store, component=f"view{p}", overwrite=True, compressors=None)
        except TypeError:  # zarr 2
            X.to_zarr(store, component=f"view{p}", overwrite=True, compressor=None)


def outofcore(args) -> str:
    dims = [args.features] * args.views
    N = args.rows
    total = 8 * N * sum(dims)
    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        memory_limit=args.memory_limit,
        dashboard_address=None,
    )
    client = Client(cluster)
    limit = sum(w["memory_limit"] for w in client.scheduler_info()["workers"].values())
    lines = []
    try:
        t = time.perf_counter()
        if not args.reuse_store or not Path(args.store).exists():
            write_store(args.store, N, dims, args.chunk_rows)
        write_s = time.perf_counter() - t
        views = [
            da.from_zarr(args.store, component=f"view{p}") for p in range(len(dims))
        ]
        gflops = sum(client.run(_dgemm_gflops).values())
        io0 = sum(client.run(_proc_io).values())
        t = time.perf_counter()
        dask.compute(*[X.sum() for X in views])
        read_s = time.perf_counter() - t
        read_bytes = sum(client.run(_proc_io).values()) - io0
        io0 = sum(client.run(_proc_io).values())
        with PeakMemory(client) as mem, PassLog() as log:
            t = time.perf_counter()
            fits = TCCA(
                init=args.init,
                n_init=1,
                max_iter=args.sweeps,
                tol=0.0,
                random_state=0,
            ).fit_path(views, args.ranks)
            fit_s = time.perf_counter() - t
        fit_bytes = sum(client.run(_proc_io).values()) - io0
        m = len(dims)
        passes_per_sweep = m + 1  # the m updates and the line search's error
        lines += [
            f"Data: N = {N:,} rows, {m} views x {args.features} features, float64, "
            f"{total / 1e9:.2f} GB as uncompressed Zarr ({args.chunk_rows:,}-row "
            f"chunks, {8 * args.chunk_rows * args.features / 1e6:.0f} MB per view "
            f"chunk) in {args.store}; written in {write_s:.0f} s.",
            f"Cluster: LocalCluster({args.workers} workers x 1 thread, memory_limit="
            f"{args.memory_limit}): {limit / 1e9:.2f} GB in all, "
            f"{total / limit:.1f}x less than the data.",
            f"Bounds: one read of the data {read_s:.1f} s ({read_bytes / 1e9:.2f} GB "
            f"read by the workers, {total / read_s / 1e9:.2f} GB/s); DGEMM "
            f"{gflops:.1f} GFLOP/s over the workers.",
            f"Whole fit_path (statistics, ||M||^2, start, {args.sweeps} sweeps per "
            f"rank, correlations): {fit_s:.0f} s, {fit_bytes / 1e9:.1f} GB read.",
            "",
            "| r | sweep (s) | pass (s) | read once (s) | sweep flops at DGEMM (s) "
            "| sweep / max(bound) | bytes read per sweep (GB) | worker peak memory "
            "(GB, limit) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        peak = max(mem.peak.values()) if mem.peak else 0
        for r in args.ranks:
            times = [s for k, s in log.calls if k == r]
            # the first passes of a rank may be its start (init="svd") at r + 10
            # columns; those are not counted
            per_pass = float(np.median(times)) if times else float("nan")
            sweep = per_pass * passes_per_sweep
            flops = 4.0 * N * r * sum(dims)
            dgemm_s = flops / (gflops * 1e9)
            bound = max(read_s, dgemm_s)
            lines.append(
                f"| {r} | {sweep:.1f} | {per_pass:.1f} | {read_s:.1f} | {dgemm_s:.1f} "
                f"| {sweep / bound:.1f} | {passes_per_sweep * read_bytes / 1e9:.1f} "
                f"| {peak / 1e9:.2f} ({limit / args.workers / 1e9:.1f}) |"
            )
        lines.append("")
        lines.append(
            "Per-worker peak resident memory (GB): "
            + ", ".join(f"{v / 1e9:.2f}" for v in mem.peak.values())
        )
        lines.append(
            "Correlations: "
            + "; ".join(
                f"r = {f.n_components}: {np.round(f.correlations_[:3], 3)}"
                for f in fits
            )
        )
    finally:
        client.close()
        cluster.close()
        if not args.keep_store:
            shutil.rmtree(args.store, ignore_errors=True)
    return "\n".join(lines)


def inmemory(args) -> str:
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    N, dims, r = args.rows, [105, 105, 105], args.rank
    z = rng.standard_normal((N, 2))
    views = [
        z @ rng.standard_normal((2, d)) + rng.standard_normal((N, d)) for d in dims
    ]  # noqa: E501
    kw = dict(
        n_components=r,
        init="svd",
        n_init=1,
        max_iter=args.sweeps,
        tol=0.0,
        random_state=0,
    )
    # the in-memory engine with as many BLAS threads as the cluster has workers
    with threadpool_limits(args.workers):
        t = time.perf_counter()
        ref = TCCA(algorithm="implicit", **kw).fit(views)
        mem_s = time.perf_counter() - t
    cluster = LocalCluster(
        n_workers=args.workers, threads_per_worker=1, dashboard_address=None
    )
    client = Client(cluster)
    try:
        dv = [da.from_array(X, chunks=(args.chunk_rows, -1)).persist() for X in views]
        dask.compute(*[X.sum() for X in dv])
        with PassLog() as log:
            t = time.perf_counter()
            got = TCCA(**kw).fit(dv)
            dask_s = time.perf_counter() - t
    finally:
        client.close()
        cluster.close()
    per_pass = float(np.median([s for k, s in log.calls if k == r]))
    diff = max(
        np.abs(a - b).max() / np.abs(b).max()
        for a, b in zip(got.projections_, ref.projections_, strict=True)
    )
    sweeps = ref.n_iter_
    err_mem, err_dask = ref.reconstruction_errors_[-1], got.reconstruction_errors_[-1]
    return "\n".join(
        [
            f"SecStr-sized: N = {N:,}, 3 x 105 features (dense), r = {r}, init='svd', "
            f"{sweeps} sweeps (tol=0); in-memory implicit engine with "
            f"{args.workers} BLAS threads vs LocalCluster({args.workers} x 1 thread), "
            f"views persisted in {args.chunk_rows:,}-row chunks.",
            "",
            "| engine | fit (s) | per sweep (s) | final error | mean rho |",
            "|---|---|---|---|---|",
            f"| in-memory (implicit) | {mem_s:.1f} | {mem_s / sweeps:.2f} "
            f"| {err_mem:.10f} | {np.mean(ref.correlations_):.6f} |",
            f"| Dask | {dask_s:.1f} | {dask_s / sweeps:.2f} | {err_dask:.10f} "
            f"| {np.mean(got.correlations_):.6f} |",
            "",
            f"Dask: {per_pass:.2f} s per MTTKRP pass (median), "
            f"{(dask_s - mem_s) / sweeps:.2f} s more per sweep than in memory "
            f"(fit times include the start and the statistics). Largest relative "
            f"difference of the projections: "
            f"{diff:.1e}.",
        ]
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    o = sub.add_parser("outofcore")
    o.add_argument("--rows", type=int, default=10_000_000)
    o.add_argument("--features", type=int, default=100)
    o.add_argument("--views", type=int, default=3)
    o.add_argument("--chunk-rows", type=int, default=100_000)
    o.add_argument("--workers", type=int, default=2)
    o.add_argument("--memory-limit", default="3GB")
    o.add_argument("--ranks", type=int, nargs="+", default=[10, 50])
    o.add_argument("--sweeps", type=int, default=3)
    o.add_argument("--init", default="random")
    o.add_argument("--store", default=os.path.join("/tmp", "tcca_bench.zarr"))
    o.add_argument("--keep-store", action="store_true")
    o.add_argument("--reuse-store", action="store_true")
    i = sub.add_parser("inmemory")
    i.add_argument("--rows", type=int, default=84_000)
    i.add_argument("--rank", type=int, default=50)
    i.add_argument("--sweeps", type=int, default=10)
    i.add_argument("--workers", type=int, default=2)
    i.add_argument("--chunk-rows", type=int, default=21_000)
    for p in (o, i):
        p.add_argument("--out", default=None)
    args = ap.parse_args()
    text = outofcore(args) if args.part == "outofcore" else inmemory(args)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
