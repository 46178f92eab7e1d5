"""The registry: every method and learner of the protocol, as plain facts.

One entry per method holds everything the rest of the project needs to know about it
without running it: its key, the paper's label, its family, its validation grid and
the other options a configuration may give it, what bounds its dimension r, and the
dotted name of the function that runs it. The protocol
(:func:`tcca_core.protocol.run_method`), the pipeline's configuration checks
(:mod:`tcca_core.pipeline.config`, ``workflow/rules/common.smk`` and the schema's
method names), the tables (:mod:`tcca_core.reporting`) and REPRODUCTION.md
(:mod:`tcca_core.reproduction`) all read this module; none keeps a copy.

Standard library only: the configuration is checked in every Snakemake process, and
importing this module costs nothing. The runners themselves live in
:mod:`tcca_core.protocol.runners` and are imported only when a method runs.

Adding a method is a runner (a function ``runner(data, points)`` that yields the
method's fits, :class:`tcca_core.protocol.run.Fit`; see
:mod:`tcca_core.protocol.runners`) plus one :func:`register` call (or one entry in
:data:`METHODS` below); nothing else in the library or the pipeline changes.
docs/architecture.md shows where each kind of change goes.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EPS_GRID_KERNEL",
    "EPS_GRID_LINEAR",
    "GAMMA",
    "K_MAX",
    "LAMBDA_GRID",
    "LEARNERS",
    "METHODS",
    "ROLES",
    "R_GRID_PAPER",
    "LearnerSpec",
    "MethodSpec",
    "method_names",
    "methods_where",
    "register",
    "resolve",
]

# ---------------------------------------------------------------- grids and defaults

#: r grid of the paper's SecStr figure: 5, 10, ..., 100, 110, ..., 200, 220, ..., 300.
R_GRID_PAPER: list[int] = (
    list(range(5, 101, 5)) + list(range(110, 201, 10)) + list(range(220, 301, 20))
)
#: eps of CCA, CCA-LS and TCCA on NUS-WIDE: 1e-5, ..., 1e4 (SecStr and Ads: 1e-2).
EPS_GRID_LINEAR: tuple[float, ...] = tuple(10.0**i for i in range(-5, 5))
#: eps of KCCA and KTCCA: 1e-7, ..., 1e2.
EPS_GRID_KERNEL: tuple[float, ...] = tuple(10.0**i for i in range(-7, 3))
#: lambda_1 and lambda_2 of SSMVD (baselines.md section 7, our decision).
LAMBDA_GRID: tuple[float, ...] = (0.0, 1e-3, 1e-2, 1e-1, 1.0)
#: kNN's k is chosen in 1..K_MAX on validation.
K_MAX = 10
#: RLS's gamma (Foster et al. 2008).
GAMMA = 1e-2


#: The roles of a method (:attr:`MethodSpec.role`), each with one meaning.
ROLES = ("paper", "extension", "post_hoc")


def resolve(dotted: str) -> Any:
    """Import and return the object named ``"package.module:attribute"``."""
    module, _, attr = dotted.partition(":")
    if not module or not attr:
        raise ValueError(f"expected 'package.module:attribute', got {dotted!r}")
    return getattr(importlib.import_module(module), attr)


# ------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class MethodSpec:
    """One method of the registry.

    Attributes
    ----------
    name : str
        Registry key, e.g. ``"cca_bst"`` (also the configuration's method name and
        the file names of its fit jobs).
    label : str
        The paper's name, e.g. ``"CCA (BST)"`` (table rows, figures, reports).
    family : {"linear", "kernel"}
        Which of the paper's tables the method belongs to.
    grid : dict
        Default grid: parameter name -> tuple of candidate values, all chosen on
        validation (with r, the view/pair and the learner's own parameter).
        ``params`` of :func:`tcca_core.protocol.run_method` overrides entries
        (SecStr/Ads: ``{"eps": 1e-2}``).
    extra : tuple of str
        Further keyword arguments of the estimator that ``params`` may set.
    has_r : bool
        Whether the method has a dimension r.
    nested : bool
        Whether the solution for r is the first r columns of the one for r_max (one
        fit per grid point serves every r; ``fit_shared`` is then True).
    transductive : bool
        No out-of-sample map: the method embeds every row it is evaluated on. Such a
        method also takes the option ``subset`` (fit on a random subset of the
        evaluation rows, the paper's 10K-of-84K SecStr setting).
    uses_kernels : bool
        Whether it works on the views' kernel matrices (the setting's ``kernel``).
    accepts_fit_views : bool
        Whether extra unlabeled data (``fit_views``) can enter its statistics.
    per : str or None
        ``"view"`` or ``"pair"`` when that is a validation-selected parameter.
    role : {"paper", "extension", "post_hoc"}
        What the method is to the reproduction (:data:`ROLES`). ``"paper"``: one of
        the paper's methods; it runs by default and its numbers enter the paper's
        claims and verdicts (REPRODUCTION.md). ``"extension"``: ours, beside the
        paper's; it runs by default and is shown in the tables and figures, but no
        claim or verdict reads it. ``"post_hoc"``: added after test results were
        seen (an investigation); it runs only with the configuration's ``post_hoc:
        true`` (the configuration check says so for each one it leaves out) and is
        judged in its own section of REPRODUCTION.md (``description``,
        ``post_hoc_note``), never in the claims.
    description : str
        What the method is, in a few words (a post hoc method's section title in
        REPRODUCTION.md and the configuration check's note).
    post_hoc_note : str
        For a post hoc method: REPRODUCTION.md's paragraph on it, after "**Post
        hoc.** <label>": what it changes and why it was added.
    estimators : tuple of str
        ``"package.module:Class"`` of the estimators whose fits the runner's
        ``Fit.fit`` returns: the classes the fit cache
        (:mod:`tcca_core.fit_cache`) may store and rebuild. A fit of any other class
        is not cached on disk (a warning).
    group : str or None
        A family within the family: ``"cca"`` for the CCA-based baselines, whose
        behaviour the paper's claims describe together.
    style : (str, str, str)
        Colour, marker and line style of its line in the figures (a kernel method
        looks like its linear counterpart; a method without r is drawn as a level,
        dashed or dash-dotted). Methods whose lines can coincide differ in more than
        colour: the AVG variants are dashed with hollow markers, so that the BST
        line under them stays visible.
    runner : str
        ``"package.module:function"`` of the runner, ``runner(data, points)``
        yielding :class:`~tcca_core.protocol.run.Fit` units
        (:mod:`tcca_core.protocol.runners`); imported when the method first runs.
    """

    name: str
    label: str
    family: str
    grid: Mapping[str, tuple] = field(default_factory=dict)
    extra: tuple[str, ...] = ()
    has_r: bool = True
    nested: bool = False
    transductive: bool = False
    uses_kernels: bool = False
    accepts_fit_views: bool = False
    per: str | None = None
    role: str = "paper"
    group: str | None = None
    style: tuple[str, str, str] = ("C9", "x", "-")
    runner: str = field(default="", kw_only=True, compare=False)
    description: str = field(default="", kw_only=True, compare=False)
    post_hoc_note: str = field(default="", kw_only=True, compare=False)
    estimators: tuple[str, ...] = field(default=(), kw_only=True, compare=False)

    def __post_init__(self) -> None:
        """Check the entry (a malformed registration fails at import, not in a job)."""
        if not self.name.replace("_", "").isalnum() or not self.name[0].isalpha():
            raise ValueError(
                f"method name {self.name!r}: letters, digits and '_', starting with "
                "a letter (it is used in file names and the configuration)"
            )
        if self.family not in ("linear", "kernel"):
            raise ValueError(
                f"method {self.name!r}: family must be 'linear' or 'kernel', "
                f"got {self.family!r}"
            )
        if self.role not in ROLES:
            raise ValueError(
                f"method {self.name!r}: role must be one of {', '.join(ROLES)}, "
                f"got {self.role!r}"
            )
        if self.role == "post_hoc" and not (self.description and self.post_hoc_note):
            raise ValueError(
                f"method {self.name!r}: a post hoc method needs a description and a "
                "post_hoc_note (REPRODUCTION.md describes it with them)"
            )
        for dotted in self.estimators:
            if ":" not in dotted:
                raise ValueError(
                    f"method {self.name!r}: estimators name 'package.module:Class', "
                    f"got {dotted!r}"
                )
        if self.per not in (None, "view", "pair"):
            raise ValueError(f"method {self.name!r}: per must be None, view or pair")
        if ":" not in self.runner:
            raise ValueError(
                f"method {self.name!r}: runner must name 'package.module:function', "
                f"got {self.runner!r}"
            )
        both = set(self.grid) & set(self.extra)
        if both:
            raise ValueError(
                f"method {self.name!r}: {sorted(both)} both in grid and extra"
            )

    @property
    def paper(self) -> bool:
        """Whether it is one of the paper's methods (``role == "paper"``)."""
        return self.role == "paper"

    @property
    def runs_by_default(self) -> bool:
        """Whether a run without ``post_hoc: true`` fits it (all but post hoc)."""
        return self.role != "post_hoc"

    @property
    def options(self) -> tuple[str, ...]:
        """What a configuration may give this method: grid, extra and ``subset``."""
        return (
            *self.grid,
            *self.extra,
            *(("subset",) if self.transductive else ()),
        )

    @property
    def r_bound(self) -> str | None:
        """What bounds r: ``None`` (no r), ``"rows"`` or ``"views"``.

        ``"rows"``: the number of rows the method is fitted on (kernel and
        transductive methods). ``"views"``: that and prod(d) / max(d) of the view
        dimensions (TCCA's CP-rank bound, which is at least the min(d_i, d_j) of the
        CCA variants).
        """
        if not self.has_r:
            return None
        return "rows" if self.uses_kernels or self.transductive else "views"

    def load_runner(self) -> Callable:
        """Return the runner function (imports its module)."""
        return resolve(self.runner)

    def grid_points(self, params: Mapping[str, Any] | None = None) -> list[dict]:
        """Every grid point of the method: its grid, with ``params`` overriding it.

        The one expansion of a method's grid: :func:`~tcca_core.protocol.run_method`
        fits these points, and the pipeline's plan cuts a fit job into one per
        point (``fit_grain: point``), so that point k is the same in both.

        Parameters
        ----------
        params : mapping, optional
            Parameter name -> value or sequence of values: a grid entry replaced, or
            an option of :attr:`extra` added to the grid (a single value is a grid
            of one). Not ``subset``, which is no grid parameter.

        Returns
        -------
        list of dict
            The product of the values, the grid's keys first, the last key varying
            fastest (SSMVD's 25 (lambda1, lambda2) pairs: lambda1 0, lambda2 0,
            0.001, ..., 1; then lambda1 0.001, ...).

        Raises
        ------
        ValueError
            A parameter that is neither in the grid nor in :attr:`extra`, or an
            empty sequence of values.
        """
        grid = {k: tuple(v) for k, v in self.grid.items()}
        for key, value in (params or {}).items():
            if key not in self.grid and key not in self.extra:
                allowed = sorted(set(self.grid) | set(self.extra))
                raise ValueError(
                    f"method {self.name!r} has no parameter {key!r}; allowed: {allowed}"
                )
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                value = (value,)
            if len(value) == 0:
                raise ValueError(f"the grid of {key!r} is empty")
            grid[key] = tuple(value)
        keys = list(grid)
        return [
            dict(zip(keys, values, strict=True))
            for values in itertools.product(*(grid[k] for k in keys))
        ]


_RUNNERS = "tcca_core.protocol.runners"
#: The CP-ALS solver's options a TCCA/KTCCA grid point may set (``warm_start`` goes
#: to ``fit_path``, the rest to the estimator).
_SOLVER_OPTIONS = ("max_iter", "tol", "init", "n_init", "warm_start", "algorithm")
_LIN, _KER = "linear", "kernel"
#: The estimators whose fits the runners return (``MethodSpec.estimators``).
_TCCA, _KTCCA = "tcca_core._tcca:TCCA", "tcca_core._ktcca:KTCCA"
_CCA, _KCCA = "tcca_core.baselines._cca:CCA", "tcca_core.baselines._cca:KCCA"
_CCALS = "tcca_core.baselines._cca_ls:CCALS"

#: Every method, in the paper's row order (linear methods, then kernel methods).
METHODS: dict[str, MethodSpec] = {}


def register(spec: MethodSpec, *, replace: bool = False) -> MethodSpec:
    """Add a method to :data:`METHODS` (at the end of the row order).

    Registering an existing name is an error unless ``replace`` (which keeps the
    method's place in the row order).
    """
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"expected a MethodSpec, got {type(spec).__name__}")
    if spec.name in METHODS and not replace:
        raise ValueError(f"method {spec.name!r} is already registered")
    METHODS[spec.name] = spec
    return spec


for _spec in (
    MethodSpec(
        "bsf",
        "BSF",
        _LIN,
        extra=("normalize",),
        has_r=False,
        per="view",
        group="single",
        style=("0.55", "", "--"),
        runner=f"{_RUNNERS}:run_bsf",
    ),
    MethodSpec(
        "cat",
        "CAT",
        _LIN,
        extra=("normalize",),
        has_r=False,
        group="single",
        style=("0.1", "", "-."),
        runner=f"{_RUNNERS}:run_cat",
    ),
    MethodSpec(
        "cca_bst",
        "CCA (BST)",
        _LIN,
        {"eps": EPS_GRID_LINEAR},
        extra=("center",),
        nested=True,
        accepts_fit_views=True,
        per="pair",
        group="cca",
        style=("C0", "o", "-"),
        runner=f"{_RUNNERS}:run_cca_bst",
        estimators=(_CCA,),
    ),
    MethodSpec(
        "cca_avg",
        "CCA (AVG)",
        _LIN,
        {"eps": EPS_GRID_LINEAR},
        extra=("center",),
        nested=True,
        accepts_fit_views=True,
        group="cca",
        style=("C1", "s", "--"),
        runner=f"{_RUNNERS}:run_cca_avg",
        estimators=(_CCA,),
    ),
    MethodSpec(
        "cca_ls",
        "CCA-LS",
        _LIN,
        {"eps": EPS_GRID_LINEAR},
        extra=("center",),
        nested=True,
        accepts_fit_views=True,
        group="cca",
        style=("C2", "^", "-"),
        runner=f"{_RUNNERS}:run_cca_ls",
        estimators=(_CCALS,),
    ),
    MethodSpec(
        "dse",
        "DSE",
        _LIN,
        extra=("view_embedding", "n_neighbors", "pca_components"),
        transductive=True,
        group="spectral",
        style=("C4", "v", "-"),
        runner=f"{_RUNNERS}:run_dse",
        estimators=("tcca_core.baselines._dse:DSE",),
    ),
    MethodSpec(
        "ssmvd",
        "SSMVD",
        _LIN,
        {"lambda1": LAMBDA_GRID, "lambda2": LAMBDA_GRID},
        extra=("view_embedding", "n_neighbors", "pca_components", "max_iter", "tol"),
        transductive=True,
        group="spectral",
        style=("C5", "D", "-"),
        runner=f"{_RUNNERS}:run_ssmvd",
        estimators=("tcca_core.baselines._ssmvd:SSMVD",),
    ),
    MethodSpec(
        "tcca",
        "TCCA",
        _LIN,
        {"eps": EPS_GRID_LINEAR},
        extra=(*_SOLVER_OPTIONS, "center"),
        accepts_fit_views=True,
        group="tensor",
        style=("C3", "*", "-"),
        runner=f"{_RUNNERS}:run_tcca",
        estimators=(_TCCA,),
    ),
    # The paper's formulas on the raw (uncentered) views: an investigation of the
    # SecStr gap (REPRODUCTION.md), shown beside TCCA, never instead of it.
    MethodSpec(
        "tcca_nc",
        "TCCA (uncentered)",
        _LIN,
        {"eps": EPS_GRID_LINEAR, "center": (False,)},
        extra=_SOLVER_OPTIONS,
        accepts_fit_views=True,
        role="post_hoc",
        group="tensor",
        style=("C6", "P", "--"),
        runner=f"{_RUNNERS}:run_tcca",
        estimators=(_TCCA,),
        description="TCCA on the raw (uncentered) views",
        post_hoc_note=(
            "applies the paper's TCCA formulas to the raw views instead of the "
            "centered views the paper states. It was added after the test results of "
            "the centered TCCA were seen (docs/investigations.md, *SecStr: TCCA below "
            "the CCA family, and centering*)"
        ),
    ),
    MethodSpec(
        "bsk",
        "BSK",
        _KER,
        has_r=False,
        uses_kernels=True,
        per="view",
        group="single",
        style=("0.55", "", "--"),
        runner=f"{_RUNNERS}:run_bsk",
    ),
    MethodSpec(
        "avg",
        "AVG",
        _KER,
        has_r=False,
        uses_kernels=True,
        group="single",
        style=("0.1", "", "-."),
        runner=f"{_RUNNERS}:run_avg",
    ),
    MethodSpec(
        "kcca_bst",
        "KCCA (BST)",
        _KER,
        {"eps": EPS_GRID_KERNEL},
        nested=True,
        uses_kernels=True,
        per="pair",
        group="cca",
        style=("C0", "o", "-"),
        runner=f"{_RUNNERS}:run_kcca_bst",
        estimators=(_KCCA,),
    ),
    MethodSpec(
        "kcca_avg",
        "KCCA (AVG)",
        _KER,
        {"eps": EPS_GRID_KERNEL},
        nested=True,
        uses_kernels=True,
        group="cca",
        style=("C1", "s", "--"),
        runner=f"{_RUNNERS}:run_kcca_avg",
        estimators=(_KCCA,),
    ),
    MethodSpec(
        "ktcca",
        "KTCCA",
        _KER,
        {"eps": EPS_GRID_KERNEL},
        extra=(*_SOLVER_OPTIONS, "jitter", "center"),
        uses_kernels=True,
        group="tensor",
        style=("C3", "*", "-"),
        runner=f"{_RUNNERS}:run_ktcca",
        estimators=(_KTCCA,),
    ),
):
    register(_spec)
del _spec


def method_names() -> list[str]:
    """Every registered method's key, in the paper's row order."""
    return list(METHODS)


def methods_where(**facts: Any) -> tuple[str, ...]:
    """Keys of the methods whose attributes equal ``facts``, in row order.

    E.g. ``methods_where(role="paper", family="linear", has_r=True)``: the paper's
    linear dimension-reduction methods.
    """
    return tuple(
        name
        for name, spec in METHODS.items()
        if all(getattr(spec, k) == v for k, v in facts.items())
    )


# ------------------------------------------------------------------------ learners


@dataclass(frozen=True)
class LearnerSpec:
    """One base learner: what it is called and the grid it is tuned over.

    Attributes
    ----------
    name : str
        Registry key, the configuration's ``learner``.
    label : str
        Display name.
    param : str
        The learner's validation-selected parameter, also the column of the
        protocol's results that records it (``"k"``, ``"gamma"``).
    grid : tuple
        Its default candidate values (each one is trained and scored; validation
        picks among them together with the method's own parameters).
    prefer : {"smaller", "larger"}
        The tie-break between equally accurate values (smaller k; larger gamma, the
        more regularized model).
    impl : str
        ``"package.module:Class"`` of the implementation
        (:mod:`tcca_core.protocol.learners`).
    """

    name: str
    label: str
    param: str
    grid: tuple
    prefer: str = "smaller"
    impl: str = field(default="", kw_only=True, compare=False)

    def load(self) -> Callable:
        """Return the implementation class (imports its module)."""
        return resolve(self.impl)


_LEARNERS = "tcca_core.protocol.learners"

#: The base learners of the paper's experiments (5.1).
LEARNERS: dict[str, LearnerSpec] = {
    s.name: s
    for s in (
        # Regularized least squares, the bias penalized, one-vs-rest.
        LearnerSpec(
            "rls", "RLS", "gamma", (GAMMA,), "larger", impl=f"{_LEARNERS}:RLSLearner"
        ),
        # k nearest neighbours, every k in 1..K_MAX from one sorted distance matrix.
        LearnerSpec(
            "knn",
            "kNN",
            "k",
            tuple(range(1, K_MAX + 1)),
            "smaller",
            impl=f"{_LEARNERS}:KNNLearner",
        ),
    )
}
