"""The learner layer: base learners trained on a representation, scored per split.

Rows are samples throughout. Each learner of :data:`tcca_core.registry.LEARNERS` is a
class here that trains on the labeled rows of a representation (features, or a kernel
against the labeled rows) and predicts the evaluation rows (validation, then test)
once for every value of its own validation grid, the registry's
(:attr:`~tcca_core.registry.LearnerSpec.grid`) unless a call gives another: kNN for
every k of its grid from one sorted distance matrix, RLS for every gamma of its grid
(the paper's 1e-2 by default). Validation then picks the learner's value together
with the method's parameters (:mod:`tcca_core.protocol.selection`).

:class:`_Context` holds the labels of one split; it is the only place that reads y.

Adding a learner: a :class:`Learner` subclass here and a
:class:`~tcca_core.registry.LearnerSpec` entry naming it (its parameter must be a
column of :data:`~tcca_core.protocol.results.RESULT_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from ..learners import RLS, KernelRLS, euclidean_knn, kernel_knn
from ..registry import LEARNERS, LearnerSpec
from .splits import Split

__all__ = ["KNNLearner", "Learner", "RLSLearner", "make_learner"]


@dataclass
class _Out:
    """Learner output on the evaluation rows (validation, then test).

    ``labels[g]`` are the predictions with the learner's ``grid[g]`` (kNN's k, RLS's
    gamma).
    """

    labels: np.ndarray  # (G, n_eval)
    grid: list  # the learner's values, one per row of labels
    scores: np.ndarray | None = None  # RLS (G, n_eval, C); binary as [-s, s]
    votes: np.ndarray | None = None  # kNN (G, n_eval, C) vote fractions


class Learner:
    """A base learner of the protocol, evaluated for every value of its grid.

    Parameters
    ----------
    spec : LearnerSpec
        Its registry entry (name and parameter).
    grid : sequence
        The values of its parameter to evaluate (default: the registry's).
    """

    #: Name of the keyword of :func:`~tcca_core.protocol.run_method` that sets the
    #: grid the old way (``k_max`` for kNN, ``gamma`` for RLS), if any.
    legacy_option: ClassVar[str | None] = None

    def __init__(self, spec: LearnerSpec, grid: Sequence | None = None):
        self.spec = spec
        grid = spec.grid if grid is None else grid
        if isinstance(grid, np.ndarray):
            grid = grid.tolist()
        if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence | range):
            grid = (grid,)
        if len(grid) == 0:
            raise ValueError(f"the grid of learner {spec.name!r} is empty")
        self.grid = tuple(grid)

    @classmethod
    def grid_from(cls, value) -> Sequence:
        """Return the grid that :attr:`legacy_option` = ``value`` stands for."""
        raise NotImplementedError

    def predict(self, Z_lab, y_lab, Z_eval, classes) -> _Out:
        """Train on (Z_lab, y_lab); predict Z_eval for every grid value."""
        raise NotImplementedError

    def predict_kernel(self, K_ll, K_el, y_lab, diag_lab, diag_eval, classes) -> _Out:
        """Predict the same from the kernels labeled x labeled, evaluated x labeled."""
        raise NotImplementedError

    def aggregate(self, outs: list[_Out], classes) -> _Out:
        """Combine the outputs of several pair models (CCA (AVG), KCCA (AVG))."""
        raise NotImplementedError


def _rls_scores(S: np.ndarray) -> np.ndarray:
    return np.column_stack([-S, S]) if S.ndim == 1 else S


class RLSLearner(Learner):
    """Regularized least squares (bias penalized, one-vs-rest), per gamma."""

    legacy_option = "gamma"

    @classmethod
    def grid_from(cls, value) -> Sequence:
        """``gamma``: one value or a sequence of values."""
        if isinstance(value, Sequence | np.ndarray):
            return tuple(value)
        return (value,)

    def _decide(self, S: np.ndarray, classes) -> _Out:
        return _Out(classes[np.argmax(S, axis=2)], list(self.grid), scores=S)

    def predict(self, Z_lab, y_lab, Z_eval, classes) -> _Out:
        """RLS scores of the evaluated rows, one set per gamma."""
        S = np.stack(
            [
                _rls_scores(RLS(g).fit(Z_lab, y_lab).decision_function(Z_eval))
                for g in self.grid
            ]
        )
        return self._decide(S, classes)

    def predict_kernel(self, K_ll, K_el, y_lab, diag_lab, diag_eval, classes) -> _Out:
        """Kernel RLS scores of the evaluated rows, one set per gamma."""
        S = np.stack(
            [
                _rls_scores(KernelRLS(g).fit(K_ll, y_lab).decision_function(K_el))
                for g in self.grid
            ]
        )
        return self._decide(S, classes)

    def aggregate(self, outs: list[_Out], classes) -> _Out:
        """CCA (AVG): the mean of the pair models' scores."""
        scores = [cast(np.ndarray, o.scores) for o in outs]
        return self._decide(np.mean(scores, axis=0), classes)


class KNNLearner(Learner):
    """k nearest neighbours (Euclidean or kernel distance), per k."""

    legacy_option = "k_max"

    @classmethod
    def grid_from(cls, value) -> Sequence:
        """``k_max``: every k in 1..k_max."""
        return range(1, int(value) + 1)

    def _pick(self, res, n_lab: int) -> _Out:
        """Return the rows of a 1..k_top result for the grid's k (those <= n_lab)."""
        ks = [k for k in self.grid if k <= n_lab]
        if not ks:
            raise ValueError(
                f"kNN: every k of the grid {list(self.grid)} exceeds the {n_lab} "
                "labeled rows"
            )
        if ks == list(range(1, len(ks) + 1)):  # the usual 1..k_max: every row
            return _Out(res.labels, list(res.k_values), votes=res.votes)
        idx = [k - 1 for k in ks]
        return _Out(res.labels[idx], ks, votes=res.votes[idx])

    def _k_top(self, n_lab: int) -> int:
        return max([k for k in self.grid if k <= n_lab] or [1])

    def predict(self, Z_lab, y_lab, Z_eval, classes) -> _Out:
        """Return kNN votes with the Euclidean distance, for every k of the grid."""
        n_lab = len(y_lab)
        return self._pick(
            euclidean_knn(Z_lab, y_lab, Z_eval, self._k_top(n_lab)), n_lab
        )

    def predict_kernel(self, K_ll, K_el, y_lab, diag_lab, diag_eval, classes) -> _Out:
        """Return kNN votes with the kernel distance, for every k of the grid."""
        n_lab = len(y_lab)
        res = kernel_knn(
            K_el, y_lab, self._k_top(n_lab), diag_query=diag_eval, diag_ref=diag_lab
        )
        return self._pick(res, n_lab)

    def aggregate(self, outs: list[_Out], classes) -> _Out:
        """Majority vote over the pair models.

        A tie goes to the largest summed vote fraction, then to the lowest class
        index (baselines.md section 1).
        """
        C = classes.size
        codes = np.stack([np.searchsorted(classes, o.labels) for o in outs])
        counts = (codes[..., None] == np.arange(C)).sum(axis=0)  # (G, n, C)
        frac = np.sum([cast(np.ndarray, o.votes) for o in outs], axis=0)
        key = np.where(counts == counts.max(axis=2, keepdims=True), frac, -np.inf)
        labels = classes[np.argmax(key, axis=2)]
        return _Out(labels, outs[0].grid, votes=frac / len(outs))


def make_learner(name: str, grid: Sequence | None = None, **legacy) -> Learner:
    """Make the learner ``name`` of the registry, over ``grid`` (default: its own).

    ``legacy`` may hold the learner's old keyword (``k_max=...`` for kNN,
    ``gamma=...`` for RLS; the other learners' are ignored), used when no ``grid``
    is given.
    """
    try:
        spec = LEARNERS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"learner must be one of {', '.join(map(repr, LEARNERS))}, got {name!r}"
        ) from None
    cls = cast("type[Learner]", spec.load())
    option = cls.legacy_option
    if grid is None and option is not None and option in legacy:
        grid = cls.grid_from(legacy[option])
    return cls(spec, grid)


class _Context:
    """Labels and rows of one split; the only place that reads y."""

    def __init__(
        self,
        y,
        split: Split,
        learner: str | Learner,
        k_max: int | None = None,
        gamma: float | None = None,
    ):
        if isinstance(learner, Learner):
            self.model = learner
        else:
            legacy: dict[str, Any] = {"k_max": k_max, "gamma": gamma}
            legacy = {k: v for k, v in legacy.items() if v is not None}
            self.model = make_learner(learner, None, **legacy)
        self.learner = self.model.spec.name
        self.param = self.model.spec.param
        self.lab, self.val, self.test = split.labeled, split.validation, split.test
        # The rows every representation is computed on: labeled, validation, test.
        self.rows = np.concatenate([self.lab, self.val, self.test])
        self.n_l, self.n_v = self.lab.size, self.val.size
        self.y_lab = y[self.lab]
        self.y_val = y[self.val]
        self._y_test = y[self.test]  # read by score() only
        self.classes = np.unique(self.y_lab)
        if self.classes.size < 2:
            raise ValueError(
                f"the labeled rows hold {self.classes.size} class; need >= 2"
            )

    def outputs(self, Z) -> _Out:
        """Train on the labeled rows of Z (rows ordered as self.rows), predict."""
        return self.model.predict(
            Z[: self.n_l], self.y_lab, Z[self.n_l :], self.classes
        )

    def kernel_outputs(self, K_rows_lab: np.ndarray, diag_rows: np.ndarray) -> _Out:
        """Predict the same from the kernel between self.rows and the labeled rows."""
        return self.model.predict_kernel(
            K_rows_lab[: self.n_l],
            K_rows_lab[self.n_l :],
            self.y_lab,
            diag_rows[: self.n_l],
            diag_rows[self.n_l :],
            self.classes,
        )

    def aggregate(self, outs: list[_Out]) -> _Out:
        """Combine pair models (CCA (AVG)); see the learner's ``aggregate``."""
        return self.model.aggregate(outs, self.classes)

    def score(self, out: _Out) -> list[tuple]:
        """(learner value, val_acc, test_acc) for each value of the output."""
        pv, pt = out.labels[:, : self.n_v], out.labels[:, self.n_v :]
        va = (pv == self.y_val).mean(axis=1)
        ta = (pt == self._y_test).mean(axis=1)
        return [
            (g, float(a), float(b)) for g, a, b in zip(out.grid, va, ta, strict=True)
        ]
