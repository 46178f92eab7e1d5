"""The run's plan: every fact the rules and the jobs read, resolved once.

:func:`build_plan` turns the checked configuration (schema defaults filled in) into a
:class:`Plan`: where the run writes, the resolved settings, which fit jobs each
setting has, which settings each table needs, and the parameters of every job.
``workflow/rules/common.smk`` builds it once and only looks things up in it; the
jobs (:mod:`tcca_core.pipeline.jobs`) read their parameters back with
:meth:`SplitJob.from_params` and :meth:`FitJob.from_params`.

A job's parameters are **canonical** (:func:`canonical`): sorted keys, and a key
whose value is its field's default (``None``, ``{}``, ``fit_on: all``, ...) left out.
Snakemake reruns a job whose parameters changed, so a new optional field (or a
default written out in the configuration) reruns nothing.

Standard library only (besides :mod:`.config`): it is built in every Snakemake
process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..registry import METHODS
from .config import check_config
from .config_settings import setting_views
from .locations import run_location

__all__ = [
    "FIT",
    "FIT_BENCHMARK",
    "SPLIT_LABEL",
    "FitJob",
    "Plan",
    "Setting",
    "SplitJob",
    "build_plan",
    "canonical",
    "parse_label",
    "point_label",
    "sorted_keys",
    "strict_of",
]

_Job = TypeVar("_Job", bound="_Params")


class _Params:
    """Job parameters as a rule's ``params`` (:meth:`params`) and back."""

    def as_params(self) -> dict[str, Any]:
        """Return the canonical parameters (:func:`canonical`)."""
        return canonical(self)

    @classmethod
    def from_params(cls: type[_Job], params: Mapping[str, Any]) -> _Job:
        """Rebuild the job from its parameters (left-out keys take their default)."""
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(params) - known)
        if unknown:
            raise TypeError(f"{cls.__name__}: unknown parameters {unknown}")
        return cls(**params)


def sorted_keys(value: Any) -> Any:
    """Return ``value`` with the keys of every mapping in it sorted.

    A rule parameter's ``repr`` is Snakemake's rerun trigger: a default written out
    in the configuration, or an overlay, puts keys in another order, not other values.
    """
    if isinstance(value, Mapping):
        return {k: sorted_keys(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value


def canonical(job: Any) -> dict[str, Any]:
    """Return a job's fields as a dict: sorted, defaults and ``None`` left out.

    Snakemake compares a job's parameters by their ``repr``: sorting fixes the order,
    and leaving defaults out keeps a new optional field (or a default written out in
    the configuration) from changing the parameters of every job.
    """
    out = {}
    for f in sorted(dataclasses.fields(job), key=lambda f: f.name):
        value = getattr(job, f.name)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if value is None or value == default:
            continue
        out[f.name] = value
    return out


@dataclass(frozen=True, kw_only=True)
class SplitJob(_Params):
    """What drawing one setting's splits needs (:func:`~.fit_jobs.draw_splits`)."""

    dataset: str
    setting: str
    n_splits: int
    val_fraction: float
    seed: int
    load: dict = field(default_factory=dict)
    views: list | None = None
    n_labeled: int | None = None
    per_class: int | None = None
    subset: int | None = None
    pool: str | None = None
    fit_on: str = "all"


@dataclass(frozen=True, kw_only=True)
class FitJob(SplitJob):
    """A fit job (:func:`~.fit_jobs.run_fit_job`): a method on a split ("all": each)."""

    method: str
    split: str
    learner: str
    r_grid: list | str = "paper"
    params: dict = field(default_factory=dict)
    kernel: str | list = "l2"
    fit_extra: str | None = None
    extra_subset: int | None = None


@dataclass(frozen=True)
class Setting:
    """One resolved setting: a column's experiment on one data set."""

    dataset: str
    name: str
    #: method -> its options (pending methods, and post hoc ones unless asked, out)
    methods: dict[str, dict]
    #: fields of the setting's jobs: learner, views, r_grid, kernel, ...
    job: dict[str, Any]
    #: method -> the setting whose result it takes
    same_as: dict[str, str]

    @property
    def fit_extra(self) -> str | None:
        """The extra unlabeled data set of the subspace fit, if any."""
        return self.job.get("fit_extra")


#: The outputs of one table (``{table}`` filled in), relative to the run's folder.
TABLE_FILES = (
    *(
        f"tables/{{table}}{s}.{e}"
        for s in ("", "_best_r")
        for e in ("csv", "md", "tex")
    ),
    "tables/{table}.json",
    *(f"tables/{{table}}_cost.{e}" for e in ("csv", "md", "tex")),
    "tables/{table}_cost_by_r.csv",
    *(
        f"figures/{{table}}_{k}.{e}"
        for k in ("accuracy", "cost")
        for e in ("png", "pdf")
    ),
    "report/{table}.html",
)


@dataclass(frozen=True)
class Plan:
    """The resolved run: what the rules schedule and what each job is given."""

    #: the checked configuration, defaults filled in (the summary's provenance)
    config: dict
    #: where the run writes (:func:`~.locations.run_location`)
    run: dict
    #: data set -> setting name -> :class:`Setting`
    settings: dict[str, dict[str, Setting]]
    #: a data set that cannot be obtained fails the run
    strict: bool
    #: data sets marked pending -> why (left out of the default target)
    pending: dict[str, str]

    # ----------------------------------------------------------------- names
    @property
    def results(self) -> str:
        """The run's folder."""
        return self.run["results"]

    @property
    def logs(self) -> str:
        """The run's log folder."""
        return self.run["logs"]

    @property
    def datasets(self) -> list[str]:
        """The configuration's data sets."""
        return list(self.settings)

    @property
    def tables(self) -> list[str]:
        """The configuration's tables."""
        return list(self.config["tables"])

    @property
    def methods(self) -> list[str]:
        """Every method some setting runs, sorted."""
        return sorted(
            {m for d in self.settings.values() for s in d.values() for m in s.methods}
        )

    @property
    def setting_names(self) -> list[str]:
        """Every setting name, longest first (a wildcard pattern's alternatives)."""
        names = {s for d in self.settings.values() for s in d}
        return sorted(names, key=len, reverse=True)

    @property
    def split_labels(self) -> list[str]:
        """The splits of a fit job: one each (fit_grain: split), or "all" (the rest)."""
        if self.config["fit_grain"] == "split":
            return [str(k) for k in range(self.config["n_splits"])]
        return ["all"]

    def grid_points(self, dataset: str, setting: str, method: str) -> list[dict]:
        """Return a method's grid points in a setting (``MethodSpec.grid_points``).

        Its options in the setting over the registry's grid (SSMVD's 25 (lambda1,
        lambda2) pairs come from the registry alone); ``subset`` is no grid
        parameter.
        """
        options = self.settings[dataset][setting].methods[method] or {}
        return METHODS[method].grid_points(
            {k: v for k, v in options.items() if k != "subset"}
        )

    def fit_labels(self, dataset: str, setting: str, method: str) -> list[str]:
        """Return the split labels (wildcard values) of a method's fit jobs.

        ``fit_grain: method``: ``all``; ``split``: ``0``, ``1``, ...; ``point``:
        ``all.p00``, ``all.p01``, ... (:func:`point_label`), one job per grid point
        looping over the splits, and ``all`` for a method with one grid point.
        """
        splits = self.split_labels
        if self.config["fit_grain"] != "point":
            return splits
        return [
            label
            for split in splits
            for label in self._point_labels(dataset, setting, method, split)
        ]

    def _point_labels(
        self, dataset: str, setting: str, method: str, split: str
    ) -> list[str]:
        """Labels of a method's point jobs on ``split`` (``[split]``: one point)."""
        n = len(self.grid_points(dataset, setting, method))
        if n == 1:
            return [split]
        return [f"{split}.{point_label(k, n)}" for k in range(n)]

    def extras(self, dataset: str) -> list[str]:
        """Extra unlabeled data sets the settings of ``dataset`` fit on."""
        found = {s.fit_extra for s in self.settings[dataset].values() if s.fit_extra}
        return sorted(found)

    # ----------------------------------------------------------------- paths
    def path(self, template: str, **names: str) -> str:
        """``template`` under the run's folder, with ``names`` filled in."""
        return f"{self.results}/{template}".format(**names)

    @property
    def provenance_config(self) -> dict:
        """Return the configuration the summary records, keys sorted (a parameter)."""
        return sorted_keys(self.config)

    @property
    def summary(self) -> str:
        """The run's summary.json."""
        return f"{self.results}/summary.json"

    def status(self, dataset: str) -> str:
        """Return the data set's status file (the prepare_data checkpoint's output)."""
        return self.path("data/{dataset}.json", dataset=dataset)

    def data_inputs(self, dataset: str, setting: str) -> dict[str, str]:
        """Status of the data set, and of its extra unlabeled set if any."""
        inputs = {"data": self.status(dataset)}
        extra = self.settings[dataset][setting].fit_extra
        if extra:
            inputs["extra"] = self.status(extra)
        return inputs

    # ------------------------------------------------------------------ jobs
    def split_job(self, dataset: str, setting: str) -> SplitJob:
        """Return the splits job of a setting."""
        job = self.settings[dataset][setting].job
        return SplitJob(
            dataset=dataset,
            setting=setting,
            n_splits=self.config["n_splits"],
            val_fraction=self.config["val_fraction"],
            seed=self.config["seed"],
            load=self.config["datasets"][dataset]["load"],
            **{k: v for k, v in job.items() if k in _SPLIT_FIELDS},
        )

    def split_params(self, dataset: str, setting: str) -> dict[str, Any]:
        """Return the canonical parameters of a setting's splits job."""
        return self.split_job(dataset, setting).as_params()

    def fit_job(self, dataset: str, setting: str, method: str, split: str) -> FitJob:
        """Return the fit job of ``method`` on split label ``split`` of a setting.

        ``split`` is a value of the split wildcard (:meth:`fit_labels`): ``all``,
        a split's number, or either with a grid point (``all.p03``), whose job
        fits that point alone: its ``params`` are the point's values, one each.
        """
        s = self.settings[dataset][setting]
        split_job = self.split_job(dataset, setting)
        splits, point = parse_label(split)
        params = s.methods[method]
        if point is not None:
            points = self.grid_points(dataset, setting, method)
            if len(points) == 1 or point >= len(points):
                raise ValueError(
                    f"{dataset}/{setting}/{method}: no grid point {split!r}; the "
                    f"method has {len(points)} there"
                )
            params = _point_params(points[point], params)
        return FitJob(
            **{
                f.name: getattr(split_job, f.name) for f in dataclasses.fields(SplitJob)
            },
            method=method,
            split=splits,
            params=params,
            **{k: v for k, v in s.job.items() if k not in _SPLIT_FIELDS},
        )

    def fit_after(
        self, dataset: str, setting: str, method: str, split: str
    ) -> list[str]:
        """Return the fit file of the nearest earlier setting fitting the same subspace.

        Settings of one data set that differ only in their labeled draw (mfeat's
        and NUS-WIDE's 4, 6 and 8 labeled per class), fitting on rows that do not
        depend on it (every row, or the pool), fit the same subspace: the fit cache
        hands it from one job to the next, but only to a job that starts after the
        first stored it. Run side by side, both fit it (the kernel500 KTCCA jobs
        did: twice 600 s). Ordering them costs nothing else: a cache hit is a read.
        A grid point's job (``all.p03``) follows the earlier setting's job of the
        same point, whatever its label there. ``[]`` when no earlier setting
        shares it.
        """
        job = self.fit_job(dataset, setting, method, split)
        if job.fit_on == "exclude_validation":  # fit rows drawn with the split
            return []
        key = _subspace_key(job)
        splits, point = parse_label(split)
        names = list(self.settings[dataset])
        for other in reversed(names[: names.index(setting)]):
            if method not in self.settings[dataset][other].methods:
                continue
            labels = [split]
            if point is not None or self.config["fit_grain"] == "point":
                # the other setting's grid may number the point otherwise, or have
                # only this one
                labels = self._point_labels(dataset, other, method, splits)
            for label in labels:
                if _subspace_key(self.fit_job(dataset, other, method, label)) == key:
                    where = {"dataset": dataset, "setting": other, "method": method}
                    return [self.path(FIT, **where, split=label)]
        return []

    def fit_params(
        self, dataset: str, setting: str, method: str, split: str
    ) -> dict[str, Any]:
        """Canonical parameters of a fit job."""
        return self.fit_job(dataset, setting, method, split).as_params()

    def fit_jobs(self, dataset: str, setting: str) -> list[dict[str, str]]:
        """List a setting's fit jobs: method, split label, output and benchmark file.

        In the order the gather job reads them: method by method, each method's
        jobs in the order of :meth:`fit_labels`.
        """
        return [
            {
                "setting": setting,
                "method": method,
                "split": split,
                "fit": self.path(FIT, **where),
                "benchmark": self.path(FIT_BENCHMARK, **where),
            }
            for method in self.settings[dataset][setting].methods
            for split in self.fit_labels(dataset, setting, method)
            for where in [
                {"dataset": dataset, "setting": setting, "method": method}
                | {"split": split}
            ]
        ]

    def setting_fits(self, dataset: str, setting: str) -> list[str]:
        """List the fit files the setting's gather job reads."""
        return [job["fit"] for job in self.fit_jobs(dataset, setting)]

    # ---------------------------------------------------------------- tables
    def table_settings(self, table: str) -> tuple[str, list[str]]:
        """Return a table's data set and settings (its columns' and their same_as)."""
        tcfg = self.config["tables"][table]
        dataset, needed = tcfg["dataset"], []
        for col in tcfg["columns"]:
            same_as = self.settings[dataset][col["setting"]].same_as
            for s in [col["setting"], *same_as.values()]:
                if s not in needed:
                    needed.append(s)
        return dataset, needed

    def table_runs(self, table: str) -> list[str]:
        """List the gathered runs a table is built from."""
        dataset, settings = self.table_settings(table)
        return [self.path(f"runs/{dataset}/{s}.csv") for s in settings]

    def table_jobs(self, table: str) -> list[dict[str, str]]:
        """List the fit jobs behind a table: setting, method and benchmark file."""
        dataset, settings = self.table_settings(table)
        return [
            {k: job[k] for k in ("setting", "method", "benchmark")}
            for setting in settings
            for job in self.fit_jobs(dataset, setting)
        ]

    def table_benchmarks(self, table: str) -> list[str]:
        """List the benchmark files of a table's fit jobs (for its cost table)."""
        return [job["benchmark"] for job in self.table_jobs(table)]

    def table_params(self, table: str) -> dict[str, Any]:
        """Return a table's specification for :func:`~.report_jobs.build_table`."""
        tcfg = self.config["tables"][table]
        dataset = tcfg["dataset"]
        return sorted_keys(
            {
                "name": table,
                **tcfg,
                "run_note": self.run["note"],
                "same_as": {
                    col["setting"]: self.settings[dataset][col["setting"]].same_as
                    for col in tcfg["columns"]
                },
            }
        )

    def tables_of(self, datasets: Iterable[str]) -> list[str]:
        """Tables whose data (their data set and its extra data) are all at hand."""
        have = set(datasets)
        return [
            t
            for t in self.tables
            if {self.table_dataset(t), *self.extras(self.table_dataset(t))} <= have
        ]

    def table_dataset(self, table: str) -> str:
        """Return the data set of a table."""
        return self.config["tables"][table]["dataset"]

    def table_outputs(self, tables: Iterable[str]) -> list[str]:
        """Every output of ``tables``."""
        return [self.path(f, table=t) for t in tables for f in TABLE_FILES]

    def table_summaries(self, tables: Iterable[str]) -> list[str]:
        """List the JSON records of ``tables`` (the summary's inputs)."""
        return [self.path("tables/{table}.json", table=t) for t in tables]

    # ------------------------------------------------------ data at hand
    def data_routes(
        self, availability: Callable[..., tuple[bool, str]]
    ) -> dict[str, tuple[str, str]]:
        """How each data set of the default target is had, from file names only.

        ``ready`` (prepared or raw files at hand: its jobs are scheduled at once),
        ``fetch`` (to be downloaded: the prepare_data checkpoint decides) or ``skip``
        (cannot be had, with why). A strict run schedules everything.
        ``availability`` is :func:`tcca_core.datasets.availability`.
        """
        routes: dict[str, tuple[str, str]] = {}
        kw = {"root": self.config["data_root"], "mirror": self.config["mirror"]}

        def route(dataset: str) -> str:
            if dataset not in routes:
                if self.strict or availability(dataset, offline=True, **kw)[0]:
                    routes[dataset] = ("ready", "")
                else:
                    ok, why = availability(
                        dataset, offline=self.config["offline"], **kw
                    )
                    routes[dataset] = ("fetch", "") if ok else ("skip", why)
            return routes[dataset][0]

        for dataset in self.datasets:
            # the extra data of a data set skipped anyway need no line of their own
            if dataset not in self.pending and route(dataset) != "skip":
                for extra in self.extras(dataset):
                    route(extra)
        return routes

    @staticmethod
    def skipped(routes: Mapping[str, tuple[str, str]]) -> dict[str, str]:
        """Return {data set: why} of those skipped before any job (``routes``)."""
        return {d: why for d, (route, why) in routes.items() if route == "skip"}

    def status_files(self, routes: Mapping[str, tuple[str, str]]) -> list[str]:
        """List the status files of the data sets decided at run time.

        Every data set not skipped at the start (any can turn out unusable when
        prepared); none when strict (a data set that fails stops the run).
        """
        if self.strict:
            return []
        return [self.status(d) for d, (r, _) in routes.items() if r != "skip"]

    def missing_tables(self, skipped: Mapping[str, str]) -> dict[str, str]:
        """Tables that did not run, with the reason REPRODUCTION.md gives.

        ``skipped`` (data set -> why) are those skipped before any job; those
        skipped at run time are added from the summary.
        """
        missing = {
            key: f"Not in this run: marked pending in the configuration: {why}"
            for key, why in self.config["pending"].items()
            if "/" in key
        }
        for t in self.tables:
            dataset = self.table_dataset(t)
            if dataset in self.pending:
                missing[t] = (
                    f"Not in this run: the data set `{dataset}` is marked pending in "
                    f"the configuration: {self.pending[dataset]}"
                )
            elif t not in missing:
                gone = [d for d in (dataset, *self.extras(dataset)) if d in skipped]
                if gone:
                    missing[t] = (
                        f"Not run: the data set `{gone[0]}` could not be obtained on "
                        f"the machine that ran the pipeline ({skipped[gone[0]]}). Its "
                        "rules run in the test suite and in CI on a synthetic "
                        "look-alike (`.test/`, tests/test_workflow.py, "
                        "tests/test_slurm.py), whose numbers mean nothing and are not "
                        "shown."
                    )
        return missing

    def end_message(
        self,
        skipped: Mapping[str, str],
        statuses: Iterable[str | os.PathLike],
        overlays: Iterable[str | os.PathLike] = (),
    ) -> str:
        """Return what the end of a successful run prints.

        What was skipped (before any job, ``skipped``, or when prepared, the
        ``statuses``) and where the tables, figures, summary and report are.
        """
        skipped = dict(skipped)
        for path in statuses:
            if Path(path).is_file():
                status = json.loads(Path(path).read_text(encoding="utf-8"))
                if not status["available"]:
                    skipped[status["dataset"]] = status["reason"]
        # each was named with its reason on one line when it was skipped
        lines = (
            [
                f"Skipped data sets: {', '.join(skipped)} (why: above; `strict: "
                "true` makes this an error)"
            ]
            if skipped
            else []
        )
        flags = " ".join(f"--configfile {os.path.relpath(c)}" for c in overlays)
        run, out = self.run, self.results
        kind = "full configuration"
        if run["reduced"]:
            kind = f"reduced run ({run['label']})"
        lines += [
            f"Outputs of this run ({kind}) are in {out}/:",
            f"  tables:  {out}/tables/ (<table>.md, .csv, .tex; _best_r, _cost)",
            f"  figures: {out}/figures/ (<table>_accuracy.png, <table>_cost.png; .pdf)",
            f"  summary: {self.summary} (every number, with the run's provenance)",
            f"  report:  snakemake --report {out}/report.html {flags}".rstrip()
            + " (tables inline, figures)",
            f"  reproduction: snakemake --cores 1 reproduction {flags}".rstrip()
            + f" writes {run['reproduction']}",
        ]
        return "\n".join(lines)


#: A fit job's output and benchmark file, relative to the run's folder. ``{split}``
#: is the job's split label (:meth:`Plan.fit_labels`): ``all``, ``0``, or
#: ``all.p03`` (a grid point's job at ``fit_grain: point``).
FIT = "fits/{dataset}/{setting}/{method}/split{split}.csv"
FIT_BENCHMARK = "benchmarks/fit/{dataset}/{setting}/{method}/split{split}.tsv"
#: What a split label may be (the ``split`` wildcard's constraint): the splits
#: (``all`` or a split's number), then ``.p`` and a grid point's number, if any.
SPLIT_LABEL = r"(?:\d+|all)(?:\.p\d+)?"
_LABEL = re.compile(r"(\d+|all)(?:\.p(\d+))?")


def point_label(k: int, n: int) -> str:
    """Return grid point ``k`` of ``n`` as a label: ``p03``.

    Zero-padded (two digits at least) so that the fit files of one method sort in
    the grid's order.
    """
    return f"p{k:0{max(2, len(str(n - 1)))}d}"


def parse_label(label: str) -> tuple[str, int | None]:
    """Split a split label into its splits and its grid point (None: every point).

    ``"all.p03"`` -> ``("all", 3)``; ``"0"`` -> ``("0", None)``.
    """
    m = _LABEL.fullmatch(str(label))
    if m is None:
        raise ValueError(
            f"{label!r} is not a split label: 'all' or a split's number, then "
            "'.p' and a grid point's number if any (e.g. all.p03)"
        )
    return m.group(1), None if m.group(2) is None else int(m.group(2))


def _point_params(point: Mapping[str, Any], options: Mapping[str, Any] | None) -> dict:
    """Return a point job's method options: the point's values, a grid of one each.

    ``subset`` (DSE, SSMVD), no grid parameter, stays as the setting gives it.
    """
    params: dict[str, Any] = {k: [v] for k, v in point.items()}
    if options and "subset" in options:
        params["subset"] = options["subset"]
    return params


#: Fields of a splits job that come from its setting.
_SPLIT_FIELDS = ("views", "n_labeled", "per_class", "subset", "pool", "fit_on")
#: Fields of a fit job that only its labeled draw and learner read: two jobs equal but
#: for these fit the same subspace, unless their fit rows are drawn with the split
#: (:meth:`Plan.fit_after`).
_LABEL_FIELDS = ("setting", "n_labeled", "per_class", "pool", "val_fraction", "learner")


def _subspace_key(job: FitJob) -> dict[str, Any]:
    params = job.as_params()
    return {k: v for k, v in params.items() if k not in _LABEL_FIELDS}


#: Keys of a resolved setting that are its jobs' fields (the rest: methods, same_as).
_JOB_KEYS = (
    "learner",
    "n_labeled",
    "per_class",
    "subset",
    "pool",
    "fit_on",
    "r_grid",
    "kernel",
    "fit_extra",
    "extra_subset",
)


def strict_of(config: Mapping[str, Any]) -> bool:
    """Whether a data set that cannot be obtained fails the run.

    ``skip_unavailable: false`` is the key's older name for ``strict: true``.
    """
    return bool(config.get("strict") or config.get("skip_unavailable") is False)


def build_plan(
    config: dict,
    base: Mapping | None,
    overlays: Iterable[str | os.PathLike] = (),
    workdir: str | os.PathLike = ".",
) -> Plan:
    """Check the configuration (after its schema) and resolve it into a :class:`Plan`.

    Parameters
    ----------
    config : dict
        The merged configuration, schema defaults filled in.
    base : mapping or None
        The base configuration file alone, defaults filled in (which decides
        whether this is the full configuration: :func:`~.locations.run_location`).
    overlays : iterable of path-like
        The ``--configfile`` files, in order.
    workdir : path-like
        The working directory relative paths are resolved against.

    Raises
    ------
    ConfigError
        Every problem of :func:`~.config.check_config` and
        :func:`~.locations.run_location`, naming the key.
    """
    run = run_location(config, base, list(overlays), workdir=workdir)
    resolved = check_config(config)
    settings = {
        dataset: {
            name: Setting(
                dataset=dataset,
                name=name,
                methods=s["methods"],
                job={
                    **{k: s.get(k) for k in _JOB_KEYS},
                    "views": setting_views(config["datasets"][dataset], s),
                },
                same_as=s["same_as"],
            )
            for name, s in by_name.items()
        }
        for dataset, by_name in resolved.items()
    }
    pending = {k: v for k, v in config["pending"].items() if "/" not in k}
    return Plan(
        config=config,
        run=run,
        settings=settings,
        strict=strict_of(config),
        pending=pending,
    )
