"""Each setting resolved: its methods, r grid and views, checked as it goes.

Step 3 of the configuration check (:mod:`tcca_core.pipeline.config`):
:func:`resolve_settings` checks cross-references and bounds (data sets, method sets
and settings named elsewhere, data-set options, method options from the registry's
:attr:`~tcca_core.registry.MethodSpec.options`, r grids above the largest r the
setting's methods can return, :func:`r_bound`) and returns every setting with its
``methods``, ``r_grid`` and ``same_as`` filled in. :func:`setting_views` and
:func:`r_grid_of` read a resolved setting back (the plan and the fit job use them).

Facts come from their homes: methods from :mod:`tcca_core.registry`, data-set shapes
from each :class:`~tcca_core.datasets.DatasetSpec`. No estimator is imported (the r
bound imports TCCA's own formula on use).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping

from ..datasets import DATASETS
from ..registry import METHODS, R_GRID_PAPER
from .config_schema import _fail

__all__ = [
    "dataset_shape",
    "r_bound",
    "r_grid_of",
    "resolve_settings",
    "setting_views",
]

# The configuration check's logger, as before the split: the post hoc warnings are
# filtered and tested under this name.
logger = logging.getLogger("tcca_core.pipeline.config")


def _check_method_options(key, methods):
    """Options of each method of a method set against what the method accepts."""
    for method, params in methods.items():
        spec = METHODS.get(method)
        allowed = None if spec is None else spec.options
        for option in params or {}:
            if allowed is not None and option not in allowed:
                hints = difflib.get_close_matches(option, allowed, n=1)
                _fail(
                    f"{key}.{method}.{option}",
                    f"{method} has no option {option!r}"
                    + (f" (did you mean {hints[0]!r}?)" if hints else "")
                    + f"; allowed: {', '.join(allowed) or 'none'}",
                )


def setting_views(dcfg: Mapping, setting: Mapping) -> list | None:
    """Return the views of a setting: its own, else its data set's (None: all)."""
    return setting.get("views", dcfg.get("views"))


def _check_r_grid(dataset, dcfg, setting, s):
    """Reject an r above the largest r that any method of the setting can return."""
    grid = r_grid_of(s)
    bound = r_bound(
        dataset,
        s["methods"],
        views=setting_views(dcfg, s),
        subset=s.get("subset"),
        fit_extra=s.get("fit_extra"),
        extra_subset=s.get("extra_subset"),
    )
    if bound is None or max(grid) <= bound[0]:
        return
    key = f"datasets.{dataset}.settings.{setting}"
    own = "r_grid" in dcfg["settings"][setting]
    too_big = [r for r in grid if r > bound[0]]
    _fail(
        f"{key}.r_grid" if own else "r_grid",
        f"r = {', '.join(map(str, too_big))} {'is' if len(too_big) == 1 else 'are'} "
        f"above {bound[0]}, the largest r that any method of {key} "
        f"({', '.join(s['methods'])}) can return ({bound[1]}); every method would "
        "skip it: lower the grid" + ("" if own else " or give the setting its own"),
    )


def _runs_by_default(method: str) -> bool:
    spec = METHODS.get(method)
    return spec is None or spec.runs_by_default


def resolve_settings(cfg: dict) -> dict:
    """Resolve each setting's `methods` and `r_grid`, checking as it goes.

    Checks cross-references, data-set and method options, and the r grids against
    what the methods allow (ConfigError naming the key).
    """
    method_sets = cfg.get("method_sets", {})
    for name, methods in method_sets.items():
        _check_method_options(f"method_sets.{name}", methods)
    resolved: dict[str, dict] = {}
    known = sorted(DATASETS)
    for dataset, dcfg in cfg["datasets"].items():
        if dataset not in DATASETS:
            hints = difflib.get_close_matches(dataset, known, n=1)
            _fail(
                f"datasets.{dataset}",
                "unknown data set"
                + (f" (did you mean {hints[0]!r}?)" if hints else "")
                + f"; tcca_core.datasets has {', '.join(known)}",
            )
        spec = DATASETS[dataset]
        options = [*spec.prepare_options, *spec.load_options]
        for option in dcfg.get("load") or {}:
            if option not in options:
                _fail(
                    f"datasets.{dataset}.load.{option}",
                    f"unknown option of data set {dataset!r}; "
                    f"allowed: {', '.join(options) or 'none'}",
                )
        resolved[dataset] = {}
        for setting, scfg in dcfg["settings"].items():
            key = f"datasets.{dataset}.settings.{setting}"
            methods = scfg["methods"]
            if isinstance(methods, str):
                if methods not in method_sets:
                    _fail(
                        f"{key}.methods",
                        f"unknown method set {methods!r} (method_sets has: "
                        f"{', '.join(sorted(method_sets)) or 'none'})",
                    )
                methods = method_sets[methods]
            else:
                _check_method_options(f"{key}.methods", methods)
            extra = scfg.get("fit_extra")
            if extra and extra not in DATASETS:
                _fail(f"{key}.fit_extra", f"unknown data set {extra!r} ({known})")
            resolved[dataset][setting] = {
                **scfg,
                "methods": {m: dict(p or {}) for m, p in methods.items()},
                "r_grid": scfg.get("r_grid", cfg.get("r_grid", "paper")),
                "same_as": dict(scfg.get("same_as") or {}),
            }
            _check_r_grid(dataset, dcfg, setting, resolved[dataset][setting])
    for dataset, settings in resolved.items():
        for setting, scfg in settings.items():
            for method, other in scfg["same_as"].items():
                key = f"datasets.{dataset}.settings.{setting}.same_as.{method}"
                if other not in settings:
                    _fail(key, f"no setting {other!r} in data set {dataset!r}")
                if method not in settings[other]["methods"]:
                    _fail(key, f"setting {other!r} does not run {method!r}")
                if method in scfg["methods"]:
                    _fail(key, f"{method!r} is also run in this setting")
    for key in cfg.get("pending") or {}:
        dataset, _, rest = key.partition("/")
        if dataset not in resolved:
            _fail(
                f"pending.{key}",
                f"not a data set of this configuration ({', '.join(resolved)})",
            )
        if rest:  # one method of one setting: its fits are left out of the tables
            setting, method = rest.split("/")
            scfg = resolved[dataset].get(setting)
            if scfg is None or method not in scfg["methods"]:
                _fail(f"pending.{key}", f"{dataset}/{setting} does not run {method!r}")
            del scfg["methods"][method]
    if not cfg.get("post_hoc", False):
        # post hoc methods (the registry's role) run only on request; never silently
        left_out: dict[str, list[str]] = {}
        for dataset, settings in resolved.items():
            for setting, scfg in settings.items():
                for m in [m for m in scfg["methods"] if not _runs_by_default(m)]:
                    del scfg["methods"][m]
                    left_out.setdefault(m, []).append(f"{dataset}/{setting}")
        for m, where in left_out.items():
            logger.warning(
                "Not running %s (%s) in %s: it is post hoc (added after test results "
                "were seen); set post_hoc: true to run it",
                m,
                METHODS[m].description,
                ", ".join(where),
            )
    for table, tcfg in cfg["tables"].items():
        key = f"tables.{table}"
        if tcfg["dataset"] not in resolved:
            _fail(f"{key}.dataset", f"unknown data set {tcfg['dataset']!r}")
        for i, col in enumerate(tcfg["columns"]):
            if col["setting"] not in resolved[tcfg["dataset"]]:
                _fail(
                    f"{key}.columns[{i}].setting",
                    f"data set {tcfg['dataset']!r} has no setting {col['setting']!r}",
                )
    return resolved


def dataset_shape(name: str) -> tuple[int, list[tuple[str, int]]] | None:
    """(most rows, [(view name, dimension), ...]) of a data set, without its files.

    Upper bounds: NUS-WIDE's rows depend on its ``selection`` (all 269,648 images
    bound them) and Ads' first view has 587 columns with ``include_local: false``.
    Read from the data set's :class:`~tcca_core.datasets.DatasetSpec`. ``None`` for a
    data set whose shape is not known (no r check is then made).
    """
    spec = DATASETS.get(name)
    return None if spec is None else spec.shape()


def r_bound(
    dataset: str,
    methods,
    *,
    views=None,
    subset: int | None = None,
    fit_extra: str | None = None,
    extra_subset: int | None = None,
) -> tuple[int, str] | None:
    """Return the largest r any of ``methods`` can return on a setting, and why.

    Every method caps r at its own r_max (rows above it are recorded as
    ``r_capped``); an r above this bound is capped for every method of the setting,
    a configuration mistake. ``None`` when no method has an r or the data set's shape
    is not known.
    """
    kinds = {METHODS[m].r_bound if m in METHODS else "rows" for m in methods} - {None}
    shape = dataset_shape(dataset)
    if not kinds or shape is None:
        return None
    n_max, named = shape
    n = n_max if subset is None else min(int(subset), n_max)
    why = (
        f"{n} rows, its `subset`"
        if subset is not None and subset < n_max
        else f"at most {n} rows, all of {dataset}"
    )
    if fit_extra:
        extra_shape = dataset_shape(fit_extra)
        if extra_shape is None:
            return None
        n_extra = extra_shape[0] if extra_subset is None else int(extra_subset)
        n += n_extra
        why += f" plus {n_extra} extra rows of {fit_extra}"
    if "rows" in kinds:
        return n, f"the methods are fitted on {why}"
    names = [v for v, _ in named]
    try:
        dims = [
            named[v][1] if isinstance(v, int) else named[names.index(v)][1]
            for v in (views or range(len(named)))
        ]
    except (ValueError, IndexError):  # a bad view name: the fit job says which
        return n, f"the methods are fitted on {why}"
    # TCCA's own bound, not a copy of its formula (imported here: the other checks
    # need no numpy)
    from ..solver.params import max_cp_rank

    cap, _ = max_cp_rank(n, dims)
    if cap < n:
        return cap, (
            f"prod(d) / max(d) = {cap} for view dimensions {dims}: TCCA's bound, "
            "and CCA's min(d_i, d_j) is lower"
        )
    return n, f"the methods are fitted on {why}"


def r_grid_of(setting: Mapping) -> list[int]:
    """Return the r grid of a resolved setting (``"paper"``: R_GRID_PAPER)."""
    grid = setting["r_grid"]
    return list(R_GRID_PAPER) if grid == "paper" else list(grid)
