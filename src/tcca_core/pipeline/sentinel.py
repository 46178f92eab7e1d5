"""The sentinel refit: a library change shown number-neutral, or its drift measured.

A fixed, small set of fits (:data:`CASES`: every method of the registry, every
engine of TCCA, every input kind of the published grid: dense, scipy.sparse
one-hot, sparse high-dimensional views on the implicit engine, extra unlabeled
rows, transductive subsets, kernels) runs in a couple of minutes on 2 cores. Its
rows (validation and test accuracy of every grid point) and a fingerprint of
every fitted DR step (every array it holds, bit for bit, and its canonical
correlations, the objective) were committed at the release
(``release/sentinel.csv``). :func:`compare` refits them at HEAD:

- every row and fitted array identical: the change is **number-neutral**; the
  published outputs stay those of HEAD's code;
- otherwise the check names each method whose fits moved, with its largest change
  of accuracy and of canonical correlation, and the published results stay those
  of the release (REPRODUCTION.md says so, with that table).

While the fits run, the modules each method executes are recorded
(:func:`tcca_core.pipeline.code_units.executed_modules`): the code its fit rows
depend on, which the release manifest keeps.

``python -m tcca_core.pipeline.release`` runs it and says the verdict
(:mod:`tcca_core.pipeline.release`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["CASES", "Case", "compare", "fingerprint", "run_sentinel"]


# ------------------------------------------------------------------- the data


def _labels(rng, n: int, n_classes: int) -> np.ndarray:
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    return y


def _planted(rng, n, dims, n_classes, *, noise=1.0, nonnegative=False):
    """Dense views sharing a class signal: X_p = onehot(y) A_p + z B_p + noise."""
    y = _labels(rng, n, n_classes)
    Y = np.eye(n_classes)[y]
    z = rng.standard_normal((n, 2))
    views = []
    for d in dims:
        X = (
            Y @ rng.standard_normal((n_classes, d))
            + z @ rng.standard_normal((2, d))
            + noise * rng.standard_normal((n, d))
        )
        views.append(np.abs(X) if nonnegative else X)
    return views, y


def _one_hot(rng, n, n_classes, positions=3, alphabet=7):
    """SecStr-like views: each a one-hot code of categorical positions, sparse."""
    y = _labels(rng, n, n_classes)
    views = []
    for _ in range(3):
        cols = []
        for j in range(positions):
            agree = rng.random(n) < 0.5
            cat = np.where(agree, (y + j) % alphabet, rng.integers(0, alphabet, n))
            cols.append(j * alphabet + cat)
        rows = np.repeat(np.arange(n), positions)
        data = np.ones(n * positions)
        X = sp.csr_matrix(
            (data, (rows, np.stack(cols, 1).ravel())), shape=(n, positions * alphabet)
        )
        views.append(X)
    return views, y


def _sparse_wide(rng, n, dims, n_classes, density=0.05):
    """Ads-like views: sparse binary, wide enough for the implicit engine."""
    y = _labels(rng, n, n_classes)
    views = []
    for d in dims:
        signal = rng.random((n_classes, d)) < 4 * density
        on = (rng.random((n, d)) < density) | (signal[y] & (rng.random((n, d)) < 0.5))
        views.append(sp.csr_matrix(on.astype(float)))
    return views, y


# ------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class Case:
    """One data set of the sentinel and the methods fitted on it.

    ``methods``: method -> ``params`` of :func:`tcca_core.protocol.run_method`
    (several entries of one method: give them keys ``"tcca/dense"``; the method is
    the part before ``/``). ``split``: keyword arguments of
    :func:`tcca_core.protocol.splits.make_splits` (one split is drawn).
    """

    name: str
    make: Callable[[np.random.Generator], tuple]
    methods: Mapping[str, Mapping[str, Any]]
    split: Mapping[str, Any]
    learner: str = "rls"
    r_grid: Sequence[int] = (2, 4, 6)
    kernel: Any = "l2"
    extra_rows: int = 0
    seed: int = 0
    learner_grid: Sequence | None = field(default=None)


_TCCA = {"eps": 1e-2, "warm_start": True, "max_iter": 150}
_CCA = {"eps": 1e-2}

#: The sentinel set. Each case mirrors a kind of input of the published grid.
CASES: tuple[Case, ...] = (
    Case(  # SecStr: one-hot sparse views, RLS, 100 labeled; DSE/SSMVD on a subset
        "one_hot",
        lambda rng: _one_hot(rng, 360, 3),
        {
            "bsf": {},
            "cat": {},
            "cca_bst": _CCA,
            "cca_avg": _CCA,
            "cca_ls": _CCA,
            "dse": {"subset": 150},
            "ssmvd": {"subset": 150},
            "tcca": _TCCA,
            "tcca_nc": _TCCA,
        },
        {"n_labeled": 40},
    ),
    Case(  # SecStr 1.3M: extra unlabeled rows enter the statistics
        "one_hot_extra",
        lambda rng: _one_hot(rng, 480, 3),
        {"cca_bst": _CCA, "cca_avg": _CCA, "cca_ls": _CCA, "tcca": _TCCA},
        {"n_labeled": 40},
        extra_rows=160,
    ),
    Case(  # Ads: sparse wide views (implicit engine), fit on all but validation
        "sparse_wide",
        lambda rng: _sparse_wide(rng, 300, (60, 50, 40), 2),
        {
            "bsf": {},
            "cat": {},
            "cca_bst": _CCA,
            "cca_avg": _CCA,
            "cca_ls": _CCA,
            "dse": {},
            "ssmvd": {"lambda1": [0.0, 0.1], "lambda2": [0.0, 0.1]},
            "tcca": _TCCA,
        },
        {"n_labeled": 40, "fit_on": "exclude_validation"},
    ),
    Case(  # mfeat linear / NUS linear: dense views, kNN, per class, eps chosen
        "dense",
        lambda rng: _planted(rng, 200, (8, 10, 12), 4),
        {
            "cca_bst": {"eps": [1e-2, 1.0]},
            "cca_ls": {"eps": [1e-2, 1.0]},
            "tcca": {**_TCCA, "eps": [1e-2, 1.0]},
            "tcca/dense": {"eps": 1e-2, "algorithm": "dense"},
            "tcca/implicit": {"eps": 1e-2, "algorithm": "implicit"},
            "tcca/tensorly": {"eps": 1e-2, "algorithm": "tensorly", "max_iter": 50},
            "tcca/restarts": {"eps": 1e-2, "n_init": 3},
        },
        {"per_class": 4},
        learner="knn",
    ),
    Case(  # mfeat / NUS kernels: chi2 and l2 kernels, kNN, per class
        "kernel",
        lambda rng: _planted(rng, 120, (8, 10, 12), 4, nonnegative=True),
        {
            "bsk": {},
            "avg": {},
            "kcca_bst": {"eps": [1e-3, 1e-1]},
            "kcca_avg": {"eps": [1e-3, 1e-1]},
            "ktcca": {"eps": [1e-3, 1.0]},
        },
        {"per_class": 4},
        learner="knn",
        kernel=["chi2", "l2", "l2"],
    ),
    Case(  # linear kernels: KTCCA's ALS runs tens of sweeps (the l2 kernels above
        # converge to rounding within a few, whatever the stopping rule)
        "kernel_linear",
        lambda rng: _planted(rng, 120, (8, 10, 12), 4),
        {"kcca_avg": {"eps": 1e-1}, "ktcca": {"eps": [1e-3, 1e-1]}},
        {"per_class": 4},
        learner="knn",
        kernel="linear",
    ),
)


# ------------------------------------------------------------ the fingerprints


def _arrays(value, name: str, out: dict, depth: int = 0) -> None:
    """Every numeric array (and number) a fitted value holds, by a stable name."""
    if depth > 6:
        return
    if sp.issparse(value):
        value = value.toarray()
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biufc":
            out[name] = np.ascontiguousarray(value)
        return
    if isinstance(value, (bool, np.bool_)):
        return
    if isinstance(value, (int, float, np.integer, np.floating)):
        out[name] = np.asarray(value, dtype=float)
        return
    if isinstance(value, Mapping):
        for k in sorted(value, key=str):
            _arrays(value[k], f"{name}[{k}]", out, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _arrays(v, f"{name}[{i}]", out, depth + 1)
        return
    attrs = getattr(value, "__dict__", None)
    if attrs is not None:
        for k in sorted(attrs):
            # fitted attributes end with "_" (scikit-learn); times are not numbers
            # of the fit (they differ on every run)
            if k.endswith("_") and not k.startswith("_") and "second" not in k:
                _arrays(attrs[k], f"{name}.{k}", out, depth + 1)


def fingerprint(fitted) -> dict:
    """Return what a fitted DR step computed.

    A SHA-256 of every array it holds (bit for bit), their count, and its
    canonical correlations (the objective).
    """
    arrays: dict[str, np.ndarray] = {}
    _arrays(fitted, "fit", arrays)
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = arrays[name]
        h.update(f"{name}{a.shape}{a.dtype}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    corr = [
        float(v)
        for name in sorted(arrays)
        if name.endswith("correlations_")
        for v in np.ravel(arrays[name])
    ]
    return {"sha256": h.hexdigest(), "n_arrays": len(arrays), "correlations": corr}


class _Recorder(dict):
    """A cache that never hits and keeps the fingerprint of every fit stored."""

    def __init__(self) -> None:
        super().__init__()
        self.fits: list[dict] = []

    def __getitem__(self, key):
        raise KeyError(key)

    def __setitem__(self, key, value) -> None:
        fitted = value[0] if isinstance(value, tuple) else value
        kind, idx, gp = key[0], key[1], key[2]
        self.fits.append(
            {"kind": kind, "views": list(idx), "params": gp, **fingerprint(fitted)}
        )


# ------------------------------------------------------------------ the run


#: The sentinel's own modules, which run beside every fit but compute none.
_OWN = frozenset({"tcca_core/pipeline/sentinel.py", "tcca_core/pipeline/code_units.py"})

ROW_KEYS = ("case", "entry", "method", "r", "view", "pair", "params", "k", "gamma")


def _case_data(case: Case):
    rng = np.random.default_rng(case.seed)
    views, y = case.make(rng)
    extra = None
    if case.extra_rows:
        more, _ = case.make(np.random.default_rng(case.seed + 1))
        extra = [X[: case.extra_rows] for X in more]
    return views, y, extra


def run_sentinel(
    cases: Sequence[Case] = CASES,
    *,
    methods: Sequence[str] | None = None,
    progress=None,
) -> tuple[pd.DataFrame, list[dict], dict[str, list[str]]]:
    """Fit the sentinel set; return its rows, fit fingerprints and modules.

    Returns ``(rows, fits, modules)``: the accuracy rows (:data:`ROW_KEYS`,
    ``val_acc``, ``test_acc``), one fingerprint per fitted DR step (with its
    ``case``, ``entry`` and ``index`` among the entry's fits), and per method the
    modules of ``tcca_core`` its fits executed. ``methods``: only those (default
    every method of the cases). One BLAS thread, as the pipeline's fit jobs.
    """
    import warnings

    from threadpoolctl import threadpool_limits

    from ..protocol import make_splits, run_method
    from .code_units import executed_modules

    rows, fits = [], []
    modules: dict[str, set[str]] = {}
    # The sentinel's fits are compared, not used: their convergence warnings
    # (short max_iter on purpose) are not the user's concern.
    quiet = logging.getLogger("tcca_core")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases:
            views, y, extra = _case_data(case)
            split = make_splits(y, n_splits=1, seed=case.seed, **case.split)[0]
            for entry, params in case.methods.items():
                method = entry.split("/")[0]
                if methods is not None and method not in methods:
                    continue
                if progress is not None:
                    print(f"sentinel: {case.name} {entry}", file=progress, flush=True)
                rec = _Recorder()
                with executed_modules() as seen:
                    df = run_method(
                        views,
                        y,
                        split,
                        method,
                        r_grid=list(case.r_grid),
                        learner=case.learner,
                        params=dict(params),
                        fit_views=extra if _takes_extra(method, extra) else None,
                        seed=case.seed,
                        kernel=case.kernel,
                        cache=rec,
                    )
                modules.setdefault(method, set()).update(seen - _OWN)
                df = df.assign(case=case.name, entry=entry)
                rows.append(df)
                for i, f in enumerate(rec.fits):
                    fits.append({"case": case.name, "entry": entry, "index": i, **f})
    quiet.setLevel(level)
    table = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()
    if not table.empty:
        keep = [c for c in (*ROW_KEYS, "val_acc", "test_acc") if c in table.columns]
        table = table[keep]
    return table, fits, {m: sorted(s) for m, s in sorted(modules.items())}


def _takes_extra(method: str, extra) -> bool:
    """Whether a case's extra unlabeled rows go to this method (CCA, CCA-LS, TCCA)."""
    from ..registry import METHODS

    return extra is not None and METHODS[method].accepts_fit_views


# ------------------------------------------------------------- files and keys


def _row_key(row: Mapping) -> str:
    def norm(v):
        if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
            return ""
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return "|".join(norm(row.get(k)) for k in ROW_KEYS)


def write_baseline(path: Path, rows: pd.DataFrame, fits: list[dict]) -> None:
    """Write the sentinel's rows and fingerprints as one JSON document (no pickle)."""
    from .._io import atomic_write_text

    doc = {
        "rows": [
            {"key": _row_key(r), "val_acc": r["val_acc"], "test_acc": r["test_acc"]}
            for r in rows.to_dict("records")
        ],
        "fits": fits,
    }
    atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=True, default=str))


def read_baseline(path: Path) -> dict:
    """Return the committed sentinel document (:func:`write_baseline`)."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not {"rows", "fits"} <= set(doc):
        raise ValueError(f"{path}: not a sentinel document (rows and fits expected)")
    return doc


# ---------------------------------------------------------------- comparing


def _same(a, b) -> bool:
    fa, fb = (float("nan") if v is None else float(v) for v in (a, b))
    return (math.isnan(fa) and math.isnan(fb)) or fa == fb


def compare(baseline: Mapping, rows: pd.DataFrame, fits: list[dict]) -> dict:
    """Compare a refit with the committed sentinel; the verdict as a dict.

    ``neutral``: every row and every fit fingerprint identical, and the same rows
    and fits on both sides. ``moved``: method -> ``{"rows": changed rows, "fits":
    changed fits, "max_abs_acc": largest change of val/test accuracy (points of
    %), "max_abs_corr": largest change of a canonical correlation, "missing": keys
    on one side only}``; methods absent from ``moved`` are unchanged.
    """

    def method_of(key: str) -> str:
        return key.split("|")[1].split("/")[0]

    moved: dict[str, dict] = {}

    def bucket(method):
        return moved.setdefault(
            method,
            {
                "rows": 0,
                "fits": 0,
                "max_abs_acc": 0.0,
                "max_abs_corr": 0.0,
                "missing": 0,
            },
        )

    old = {r["key"]: r for r in baseline["rows"]}
    new = {_row_key(r): r for r in rows.to_dict("records")}
    for key in old.keys() | new.keys():
        if key not in old or key not in new:
            bucket(method_of(key))["missing"] += 1
            continue
        a, b = old[key], new[key]
        if _same(a["val_acc"], b["val_acc"]) and _same(a["test_acc"], b["test_acc"]):
            continue
        m = bucket(method_of(key))
        m["rows"] += 1
        for col in ("val_acc", "test_acc"):
            d = abs(float(a[col]) - float(b[col])) * 100
            if not math.isnan(d):
                m["max_abs_acc"] = max(m["max_abs_acc"], d)

    def fit_key(f):
        return f"{f['case']}|{f['entry']}|{f['index']}"

    old_fits = {fit_key(f): f for f in baseline["fits"]}
    new_fits = {fit_key(f): f for f in fits}
    for key in old_fits.keys() | new_fits.keys():
        method = key.split("|")[1].split("/")[0]
        if key not in old_fits or key not in new_fits:
            bucket(method)["missing"] += 1
            continue
        a, b = old_fits[key], new_fits[key]
        if a["sha256"] == b["sha256"]:
            continue
        m = bucket(method)
        m["fits"] += 1
        ca, cb = a.get("correlations") or [], b.get("correlations") or []
        if len(ca) == len(cb):
            for x, y in zip(ca, cb, strict=True):
                m["max_abs_corr"] = max(m["max_abs_corr"], abs(x - y))
        else:
            m["max_abs_corr"] = math.inf
    return {"neutral": not moved, "moved": dict(sorted(moved.items()))}


def verdict_text(result: Mapping) -> str:
    """One line, and the drift table where methods moved."""
    from ..reproduction.release import drift_table

    if result["neutral"]:
        return "sentinel: number-neutral (every sentinel row and fit identical)"
    names = ", ".join(result["moved"])
    return f"sentinel: numbers moved for {names}\n{drift_table(result['moved'])}"
