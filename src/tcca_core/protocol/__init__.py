"""Evaluation protocol of Luo et al. (TKDE 2015, section 5), shared by every method.

Rows are samples throughout. The protocol is four layers, one module each:

- :mod:`~tcca_core.protocol.splits`: :func:`make_splits` draws the labeled sets (five
  random draws from a seed) and splits the rest of the evaluation pool into
  validation (20%) and test (80%).
- :mod:`~tcca_core.protocol.learners`: the base learners (RLS, kNN), each evaluated
  over its own validation grid (kNN's k, RLS's gamma).
- :mod:`~tcca_core.protocol.runners`: one runner per method of the registry
  (:data:`tcca_core.registry.METHODS`), driven by :func:`run_method`
  (:mod:`~tcca_core.protocol.run`; the runners' contract is
  :mod:`~tcca_core.protocol.plugin`), which fits one dimension-reduction method (or a
  baseline without one), sweeps r and every parameter of the method's grid, trains
  the learner on the labeled rows only and scores validation and test. It returns a
  tidy table (:mod:`~tcca_core.protocol.results`), one row per (method, split, r,
  parameters), with the DR fit's time and peak memory.
- :mod:`~tcca_core.protocol.selection`: :func:`select` reduces such tables to the
  paper's "accuracy at the best dimension" under both readings (baselines.md section
  1): (A) validation-selected parameters per split, mean +- std over splits; (B) per
  r the validation-selected parameters, mean over splits, then the best r.

Labels never reach the unsupervised step: every DR method is fitted on features only.
The learner sees the labels of the labeled rows, selection the labels of the
validation rows; the test labels are used for nothing but ``test_acc``.

The methods ("bsf", "cat", "cca_bst", "cca_avg", "cca_ls", "dse", "ssmvd", "tcca",
"tcca_nc" (TCCA on the uncentered views, an investigation) and, for kernels, "bsk",
"avg", "kcca_bst", "kcca_avg", "ktcca"), their default grids and the learners are
listed in :mod:`tcca_core.registry`; :data:`METHODS` here is the same mapping.

Every name is imported on first use, so ``from tcca_core.protocol.selection import
select`` (numpy and pandas only) does not load the estimators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from ..registry import (
        EPS_GRID_KERNEL,
        EPS_GRID_LINEAR,
        GAMMA,
        K_MAX,
        LAMBDA_GRID,
        LEARNERS,
        METHODS,
        R_GRID_PAPER,
        MethodSpec,
    )
    from .results import RESULT_COLUMNS
    from .run import run_method
    from .selection import accuracy_by_r, select, select_per_split
    from .splits import Split, make_splits, restrict_split, splits_from_labeled

__all__ = [
    "R_GRID_PAPER",
    "EPS_GRID_LINEAR",
    "EPS_GRID_KERNEL",
    "LAMBDA_GRID",
    "K_MAX",
    "GAMMA",
    "RESULT_COLUMNS",
    "Split",
    "MethodSpec",
    "METHODS",
    "LEARNERS",
    "make_splits",
    "splits_from_labeled",
    "restrict_split",
    "run_method",
    "select",
    "select_per_split",
    "accuracy_by_r",
]

# name -> module (relative to this package) that defines it
_HOME = {
    **dict.fromkeys(
        (
            "R_GRID_PAPER",
            "EPS_GRID_LINEAR",
            "EPS_GRID_KERNEL",
            "LAMBDA_GRID",
            "K_MAX",
            "GAMMA",
            "MethodSpec",
            "METHODS",
            "LEARNERS",
        ),
        "..registry",
    ),
    **dict.fromkeys(
        ("Split", "make_splits", "splits_from_labeled", "restrict_split"), ".splits"
    ),
    **dict.fromkeys(("RESULT_COLUMNS",), ".results"),
    **dict.fromkeys(("_Context", "_Out"), ".learners"),
    **dict.fromkeys(("run_method", "_Run"), ".run"),
    **dict.fromkeys(("_measure", "_add_costs"), ".measure"),
    **dict.fromkeys(("select", "select_per_split", "accuracy_by_r"), ".selection"),
}


__getattr__, __dir__ = lazy_attributes(globals(), _HOME)
