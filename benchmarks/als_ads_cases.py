"""The two Ads cases of ALS breakdown, before and after the Solver II fix.

Before the ALS solves were made scale-invariant (commit a823328), two TCCA fits on
Ads' raw (uncentered) views broke down: the relative reconstruction error fell to a
lowest value and then rose, which exact ALS never does.

* case A, split 1: ``TCCA(150, eps=10, center=False)``: 0.0551 at sweep 47, 0.187 by
  sweep 57, and the stopping rule then fired on the plateau;
* case B, split 4: ``TCCA(95, eps=1e-3, center=False, init="hosvd", n_init=1)``:
  0.446 at sweep 13, 0.99 by sweep 133, overflow at sweep 134.

The acceptance criterion: both fit without a rise, case A ending at or below 0.0533
and case B at or below 0.4460.

The data and the fit follow the pipeline (``config/config.yaml``, setting
``ads/l100``): Ads through :func:`tcca_core.datasets.load`, the five labeled splits
of :func:`tcca_core.protocol.make_splits` (seed 0, 100 labeled rows, 20 % of the
rest for validation, ``fit_on="exclude_validation"``), TCCA fitted on the split's
fit rows (every row but the validation rows) with ``random_state`` the config seed.
``--splits-file`` checks the drawn splits against the pipeline's own file
(``<results_dir>/splits/ads/l100.json``, written by the ``splits`` rule).

The whole error trace of the kept start is recorded through ``cp_als``'s callback
(the fit's ``reconstruction_errors_`` stops at the iterate it keeps, so it cannot
show a rise). Reported per case: ALS sweeps, the lowest error and its sweep, the
error of the last sweep and of the iterate kept, the largest rise of the error above
its running minimum (relative), ``converged_``, the fit's wall time and any
ConvergenceWarning, and the downstream accuracy of the protocol's RLS (gamma 1e-2,
trained on the split's labeled rows, scored on its validation and test rows).

``--baseline-src`` runs the same calls first on another copy of ``tcca_core`` (a
``src`` folder, in a child process with ``PYTHONPATH`` set to it), so that the table
shows before and after, e.g. the shipped solver of commit 962f818::

    mkdir -p /tmp/oldsolver && git archive 962f818 src | tar -x -C /tmp/oldsolver
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/als_ads_cases.py --root data --mirror /path/to/mirror \\
        --splits-file results/splits/ads/l100.json \\
        --baseline-src /tmp/oldsolver/src --baseline-label "shipped (962f818)" \\
        --label "fixed (a823328)"

``--mirror`` is a folder laid out as ``<mirror>/ads/<file>`` (the data API's
convention); without it the raw files are downloaded. Each fit takes 1 to 4 minutes
on one core. One BLAS thread is used (set before numpy loads) so that times compare.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

#: The two cases: split, rank, TCCA options, the acceptance bound on the
#: final error and what the shipped solver did.
CASES = {
    "A": {
        "split": 1,
        "r": 150,
        "options": {"eps": 10.0},
        "bound": 0.0533,
        "before": "0.0551 at sweep 47, 0.187 by sweep 57",
    },
    "B": {
        "split": 4,
        "r": 95,
        "options": {"eps": 1e-3, "init": "hosvd", "n_init": 1},
        "bound": 0.4460,
        "before": "0.446 at sweep 13, 0.99 by sweep 133, overflow at 134",
    },
}
#: A rise of the error above its running minimum by less than this (relative) is
#: rounding (tcca_core.solver.als.ROUNDING).
ROUNDING = 1e-10


# ------------------------------------------------------------------- data, splits


def load_ads(root: str, mirror: str | None, offline: bool):
    """Ads as the pipeline's fit jobs see it: (views, y), every row (no subset)."""
    import numpy as np

    from tcca_core.datasets import load

    data = load("ads", root=root, mirror=mirror, offline=offline)
    subset = np.arange(len(data.y))  # jobs.random_subset(N, None): every row
    return [X[subset] for X in data.views], np.asarray(data.y)[subset]


def draw_splits(y, args):
    """The labeled splits of ``ads/l100`` (pipeline.jobs.draw_splits)."""
    from tcca_core.protocol.splits import make_splits

    return make_splits(
        y,
        n_labeled=args.n_labeled,
        n_splits=args.n_splits,
        seed=args.seed,
        val_fraction=args.val_fraction,
        fit_on="exclude_validation",
    )


def check_splits(splits, path: str) -> str:
    """Compare the drawn splits with a pipeline splits file; raise if they differ."""
    import numpy as np

    from tcca_core.protocol.splits import Split

    with open(path) as fh:
        doc = json.load(fh)
    theirs = [Split.from_dict(d) for d in doc["splits"]]
    if not np.array_equal(doc["subset"], np.arange(len(doc["subset"]))):
        raise SystemExit(f"{path}: a subset of the rows; ads/l100 uses every row")
    if len(theirs) != len(splits):
        raise SystemExit(f"{path}: {len(theirs)} splits, drew {len(splits)}")
    for a, b in zip(splits, theirs, strict=True):
        for part in ("labeled", "validation", "test", "fit"):
            if not np.array_equal(getattr(a, part), getattr(b, part)):
                raise SystemExit(f"{path}: split {a.index}'s {part} rows differ")
    return f"identical to {path}"


def digest(views) -> str:
    """Short sha1 of the views' contents (CSR arrays or dense), to compare runs."""
    import numpy as np
    import scipy.sparse as sp

    h = hashlib.sha1()
    for X in views:
        parts = (X.indptr, X.indices, X.data) if sp.issparse(X) else (X,)
        for a in parts:
            h.update(np.ascontiguousarray(a).view(np.uint8).ravel())
    return h.hexdigest()[:12]


# ------------------------------------------------------------------- error traces


class Tracer:
    """Record every ALS run's full error trace through ``cp_als``'s callback.

    Runs resumed by the race of starts (successive halving) continue the trace of
    the run they resume. The kept start's trace is the one that
    ``reconstruction_errors_`` (cut at the kept iterate) is a prefix of.
    """

    def __init__(self):
        self.chains = {}  # id(result) -> (result, trace); holds the result alive

    def __enter__(self):
        from tcca_core.solver import als as _als

        self._als, self._orig = _als, _als.cp_als
        orig, chains = self._orig, self.chains

        def traced(*args, resume=None, callback=None, **kwargs):
            _, trace = chains.pop(id(resume), (None, [])) if resume else (None, [])

            def record(n_iter, err):
                trace.append(float(err))
                if callback is not None:
                    callback(n_iter, err)

            res = orig(*args, resume=resume, callback=record, **kwargs)
            chains[id(res)] = (res, trace)
            return res

        _als.cp_als = traced
        return self

    def __exit__(self, *exc):
        self._als.cp_als = self._orig

    def kept_trace(self, kept_errors) -> list[float]:
        kept = [float(e) for e in kept_errors]
        found = [t for _, t in self.chains.values() if t[: len(kept)] == kept]
        if len(found) != 1:
            raise RuntimeError(
                f"{len(found)} recorded ALS runs match the kept errors; expected 1"
            )
        return found[0]


def rise(trace) -> tuple[float, int]:
    """Largest relative rise of the error above its running minimum, and its sweep."""
    low, worst, at = float("inf"), 0.0, 0
    for sweep, e in enumerate(trace, start=1):
        low = min(low, e)
        if e / low - 1.0 > worst:
            worst, at = e / low - 1.0, sweep
    return worst, at


# ------------------------------------------------------------------- the cases


def run_case(name: str, views, y, split, args) -> dict:
    """Fit one case on its split's fit rows; return what the table shows."""
    import numpy as np
    from sklearn.exceptions import ConvergenceWarning

    from tcca_core import TCCA
    from tcca_core.protocol.learners import _Context

    case = CASES[name]
    fit_rows = split.fit_rows(len(y))
    fit_views = [X[fit_rows] for X in views]
    est = TCCA(case["r"], center=False, random_state=args.seed, **case["options"])
    with Tracer() as tracer, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        est.fit(fit_views)
        wall = time.perf_counter() - t0
    trace = tracer.kept_trace(est.reconstruction_errors_)
    conv = [
        str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)
    ]
    others = sorted({w.category.__name__ for w in caught} - {"ConvergenceWarning"})
    k = int(np.argmin(trace))
    row = {
        "case": name,
        "split": split.index,
        "r": case["r"],
        "options": case["options"],
        "n_fit": len(fit_rows),
        "fit_digest": digest(fit_views),
        "init": est.init_,
        "engine": est.algorithm_,
        "n_starts": len(est.start_errors_),
        "sweeps": len(trace),
        "lowest": trace[k],
        "lowest_sweep": k + 1,
        "last": trace[-1],
        "kept": float(est.reconstruction_errors_[-1]),
        "kept_sweep": int(est.n_iter_),
        "rise": rise(trace)[0],
        "rise_sweep": rise(trace)[1],
        "converged": bool(est.converged_),
        "wall_s": wall,
        "warnings": conv,
        "other_warnings": others,
        "trace": trace,
    }
    if not args.no_accuracy:
        ctx = _Context(y, split, "rls", gamma=args.gamma)
        Z = est.transform([X[ctx.rows] for X in views])
        ((_, val_acc, test_acc),) = ctx.score(ctx.outputs(Z))
        row["val_acc"], row["test_acc"] = val_acc, test_acc
    return row


def measure(args) -> dict:
    """Load, split and fit every case with the tcca_core found on sys.path."""
    import tcca_core

    views, y = load_ads(args.root, args.mirror, args.offline)
    splits = draw_splits(y, args)
    checked = check_splits(splits, args.splits_file) if args.splits_file else None
    rows = []
    for name in args.cases:
        rows.append(run_case(name, views, y, splits[CASES[name]["split"]], args))
        print(f"[{args.label}] case {name} done in {rows[-1]['wall_s']:.0f} s")
    return {
        "label": args.label,
        "package": os.path.dirname(tcca_core.__file__),
        "splits": checked or "drawn, not checked against a file",
        "rows": rows,
    }


def run_baseline(args) -> dict:
    """The same command in a child process importing tcca_core from another src."""
    with tempfile.TemporaryDirectory(prefix="als-ads-") as tmp:
        out = os.path.join(tmp, "baseline.json")
        cmd = [sys.executable, os.path.abspath(__file__), *args.forward]
        cmd += ["--label", args.baseline_label, "--json", out, "--json-only"]
        env = {**os.environ, "PYTHONPATH": os.path.abspath(args.baseline_src)}
        subprocess.run(cmd, env=env, check=True)
        with open(out) as fh:
            return json.load(fh)


# ------------------------------------------------------------------- report


def print_table(results: list[dict]) -> None:
    head = (
        "solver",
        "case",
        "sweeps",
        "lowest (sweep)",
        "last",
        "kept (sweep)",
        "max rise (sweep)",
        "converged_",
        "wall s",
        "test acc %",
        "ConvergenceWarning",
    )
    lines, notes = [], []
    for res in results:
        for row in res["rows"]:
            text = "no"
            if row["warnings"]:
                notes.append(f"[{len(notes) + 1}] {res['label']}, case {row['case']}: ")
                notes[-1] += " | ".join(row["warnings"])
                text = f"yes [{len(notes)}]"
            acc = f"{100 * row['test_acc']:.2f}" if "test_acc" in row else "-"
            lines.append(
                (
                    res["label"],
                    row["case"],
                    str(row["sweeps"]),
                    f"{row['lowest']:.6g} ({row['lowest_sweep']})",
                    f"{row['last']:.6g}",
                    f"{row['kept']:.6g} ({row['kept_sweep']})",
                    f"{row['rise']:.3g} ({row['rise_sweep']})",
                    str(row["converged"]),
                    f"{row['wall_s']:.1f}",
                    acc,
                    text,
                )
            )
    widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=True)]

    def fmt(cells):
        return (
            "| "
            + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
            + " |"
        )

    print(fmt(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for cells in lines:
        print(fmt(cells))
    for note in notes:
        print(note)


def print_context(results: list[dict]) -> None:
    for res in results:
        print(
            f"{res['label']}: tcca_core from {res['package']}; splits {res['splits']}"
        )
        for row in res["rows"]:
            opts = ", ".join(f"{k}={v!r}" for k, v in row["options"].items())
            extra = ", other warnings: " + ", ".join(row["other_warnings"])
            print(
                f"  case {row['case']}: split {row['split']}, TCCA({row['r']}, {opts}, "
                f"center=False), {row['n_fit']} fit rows (sha1 {row['fit_digest']}), "
                f"start {row['init']} of {row['n_starts']}, engine {row['engine']}"
                + (extra if row["other_warnings"] else "")
                + (
                    f", validation acc {100 * row['val_acc']:.2f} %"
                    if "val_acc" in row
                    else ""
                )
            )


def print_verdict(res: dict) -> None:
    print(f"acceptance ({res['label']}): final error at or below the bound, no rise")
    for row in res["rows"]:
        case = CASES[row["case"]]
        ok = row["last"] <= case["bound"] and row["rise"] <= ROUNDING
        print(
            f"  case {row['case']}: last {row['last']:.6g} <= {case['bound']} and "
            f"max rise {row['rise']:.3g} <= {ROUNDING:g}: "
            f"{'holds' if ok else 'FAILS'} (shipped: {case['before']})"
        )


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--root", default="data", help="data folder (default: data)")
    p.add_argument(
        "--mirror", help="folder with the raw files as <mirror>/ads/<file> (optional)"
    )
    p.add_argument("--offline", action="store_true", help="download nothing")
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    p.add_argument("--seed", type=int, default=0, help="config seed (default: 0)")
    p.add_argument("--n-splits", type=int, default=5)
    p.add_argument("--n-labeled", type=int, default=100)
    p.add_argument("--val-fraction", type=float, default=0.2)
    p.add_argument(
        "--splits-file", help="the pipeline's splits/ads/l100.json to check against"
    )
    p.add_argument("--gamma", type=float, default=1e-2, help="RLS gamma (1e-2)")
    p.add_argument("--no-accuracy", action="store_true", help="skip the RLS scores")
    p.add_argument("--label", default="current", help="this solver's name in the table")
    p.add_argument(
        "--baseline-src", help="a src folder holding another tcca_core to run first"
    )
    p.add_argument("--baseline-label", default="baseline")
    p.add_argument("--json", help="also write the results (traces included) here")
    p.add_argument(
        "--json-only", action="store_true", help="with --json: print no table"
    )
    args = p.parse_args(argv)
    # what the child process for the baseline gets: every option but these
    drop = {"--label", "--baseline-src", "--baseline-label", "--json", "--json-only"}
    args.forward, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a.split("=", 1)[0] in drop:
            skip = "=" not in a and a != "--json-only"
        else:
            args.forward.append(a)

    results = [run_baseline(args)] if args.baseline_src else []
    results.append(measure(args))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results[-1], fh)
        if args.json_only:
            return
    print()
    print_context(results)
    print()
    print_table(results)
    print()
    print_verdict(results[-1])


if __name__ == "__main__":
    main()
