"""The pipeline's jobs, one function each, testable without Snakemake.

Each script in ``workflow/scripts/`` sets up logging (:func:`start_logging`) and calls
one function of this module with plain values taken from the ``snakemake`` object:

- :func:`prepare_data`: a data set fetched, verified and prepared, or skipped with
  one line when it cannot be obtained; its status in this run, as JSON (checkpoint
  ``prepare_data``);
- :func:`draw_splits`: the random subset (if any) and the labeled/validation/test
  splits of a setting, as JSON (rule ``splits``);
- :func:`run_fit_job`: one method on one split (or every split) of a setting over
  its whole r grid, as a CSV of tidy results (rule ``fit``);
- :func:`gather_fits`: the fit CSVs of a setting in one table (rule ``gather``);
- :func:`build_table`: one table (accuracy in both readings, cost, figures, JSON
  record) from the runs, keyed by (setting, method) (rule ``table``);
- :func:`write_summary` and :func:`write_reproduction`: ``results/summary.json``
  and REPRODUCTION.md.

Every output is written atomically (:func:`tcca_core._io.atomic_write`): a job killed
mid-write never leaves a partial file under its final name.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._io import atomic_write_text, write_csv
from .config import r_grid_of
from .plan import FitJob, SplitJob

__all__ = [
    "MIN_EVAL_ROWS",
    "build_table",
    "check_eval_rows",
    "derived_rng",
    "draw_splits",
    "gather_fits",
    "load_splits",
    "load_views",
    "prepare_data",
    "random_subset",
    "read_status",
    "run_fit_job",
    "save_splits",
    "start_logging",
    "write_reproduction",
    "write_summary",
]

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike

#: Fewest validation and test rows a split may have (val_fraction near 0 or 1, or a
#: tiny evaluation pool, would leave accuracies over a handful of rows).
MIN_EVAL_ROWS = 10


# ------------------------------------------------------------------------ helpers


def start_logging(
    log: PathLike, rule: str = "job", *, keep_stderr: bool = False
) -> logging.Logger:
    """Send stderr, warnings and the ``logging`` records of the job to ``log``.

    Records at INFO and above of every logger are kept, the library's included: a
    fit job's log shows the solver's progress per rank (``tcca_core._tensors``:
    "rank r (i/n): ... sweeps"). With ``keep_stderr`` the job's stderr stays where
    it was (the terminal of a local run), for what the job shows there itself.
    """
    log = Path(log)
    log.parent.mkdir(parents=True, exist_ok=True)
    stream = open(log, "w", buffering=1, encoding="utf-8")  # noqa: SIM115
    if not keep_stderr:
        sys.stderr = stream
    logging.basicConfig(
        stream=stream,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.getLogger("tcca_core").setLevel(logging.INFO)
    logging.captureWarnings(True)
    return logging.getLogger(f"workflow.{rule}")


def load_views(
    name: str,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    views: Sequence[int | str] | None = None,
    offline: bool = False,
    **options: Any,
):
    """``tcca_core.datasets.load``, keeping only the ``views`` named, in that order.

    Views are named by ``info["view_names"]`` or by position. Where the data live
    (``data_root``, ``mirror``) is not a rule parameter, so moving the mirror does not
    make Snakemake rerun every job.
    """
    from .. import datasets

    data = datasets.load(
        name, root=data_root, mirror=mirror, offline=offline, **options
    )
    if views:
        names = list(data.info.get("view_names") or [])
        m = len(data.views)
        try:
            idx = [v if isinstance(v, int) else names.index(v) for v in views]
            if any(not 0 <= i < m for i in idx):
                raise ValueError
        except ValueError:
            raise ValueError(
                f"data set {name!r} has {m} views {names} (positions 0 to {m - 1}); "
                f"config asks for {list(views)}"
            ) from None
        data.views = [data.views[i] for i in idx]
        data.info = {
            **data.info,
            "view_names": [names[i] for i in idx] if names else idx,
        }
    return data


def derived_rng(seed: int, *names: object) -> np.random.Generator:
    """Return a generator for one purpose, from the config seed and stable names."""
    return np.random.default_rng(
        [int(seed), *(zlib.crc32(str(n).encode()) for n in names)]
    )


def random_subset(n: int, size: int | None, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``size`` rows drawn without replacement (all rows if None).

    A ``size`` above ``n`` is an error (a configuration mistake, not "all rows").
    """
    if size is not None and size > n:
        raise ValueError(f"subset = {size} is above the {n} rows of the data set")
    if size is None or size == n:
        return np.arange(n)
    return np.sort(rng.choice(n, size=int(size), replace=False))


def save_splits(path: PathLike, subset, splits) -> None:
    """Write the subset (rows of the data set) and the splits (rows of the subset)."""
    doc = {
        "subset": np.asarray(subset).tolist(),
        "splits": [s.to_dict() for s in splits],
    }
    atomic_write_text(path, json.dumps(doc, separators=(",", ":")) + "\n")


def load_splits(path: PathLike, which: str = "all"):
    """(subset, [Split, ...]) for split ``which`` (a number) or every split ("all")."""
    from ..protocol.splits import Split

    doc = json.loads(Path(path).read_text())
    splits = [Split.from_dict(d) for d in doc["splits"]]
    if which != "all":
        splits = [splits[int(which)]]
    return np.asarray(doc["subset"], dtype=np.intp), splits


def check_eval_rows(splits, where: str) -> None:
    """Every split needs MIN_EVAL_ROWS validation and test rows (else ValueError)."""
    for k, s in enumerate(splits):
        n_val, n_test = len(s.validation), len(s.test)
        if min(n_val, n_test) < MIN_EVAL_ROWS:
            raise ValueError(
                f"{where}: split {k} has {n_val} validation and {n_test} test rows, "
                f"fewer than {MIN_EVAL_ROWS}; accuracies over so few rows mean "
                "nothing: change val_fraction (or the labeled count, subset or pool)"
            )


# ---------------------------------------------------------------------------- jobs


def _one_line(exc: BaseException, spec, data_root: PathLike) -> str:
    """Say on one line why a data set cannot be had, and what to do."""
    from ..datasets import DataUnavailableError

    if isinstance(exc, DataUnavailableError) and exc.hint:
        return exc.line
    first = " ".join(str(exc).split())
    hint = (spec.hint or "").replace("<root>", str(data_root))
    return f"{first}; {hint}" if hint else first


def prepare_data(
    dataset: str,
    status: PathLike,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    offline: bool = False,
    strict: bool = False,
    terminal=None,
) -> int:
    """Fetch, verify and prepare ``dataset``; write its status in this run.

    The mirror is tried first, then the network (unless ``offline``). When the
    data set cannot be obtained (nothing to copy or download, a host that is down,
    a download that is not the pinned file), one line saying what was tried, what
    to download and where to put it goes to ``terminal`` (default: the process's
    original stderr) and the whole message to the log; then either the status
    says ``"available": false`` with that line and 0 is returned (the run goes on
    without it), or with ``strict`` nothing is written and 1 is returned (the run
    fails). A full disk or an unwritable folder is always an error.

    The status (JSON) is ``{"dataset", "available", "reason" or "manifest"}``;
    download progress bars go to ``terminal`` when it is one.
    """
    from .. import datasets
    from ..datasets import _download

    term = terminal if terminal is not None else sys.__stderr__
    _download.PROGRESS_STREAM = term
    errors = (
        datasets.DataUnavailableError,
        datasets.ChecksumError,
        datasets.DownloadError,
        datasets.UnsafeArchiveError,
    )
    try:
        manifest = datasets.prepare(dataset, data_root, mirror, offline=offline)
    except datasets.WriteError as exc:
        # a full disk or an unwritable folder: no run can go on past it
        logger.error("%s", exc)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"Data set {dataset} cannot be prepared: {first}", file=term, flush=True)
        return 1
    except errors as exc:
        logger.error("%s", exc)
        line = _one_line(exc, datasets.DATASETS[dataset], data_root)
        if strict:
            print(
                f"Data set {dataset} cannot be obtained (strict: the run stops): "
                f"{line}",
                file=term,
                flush=True,
            )
            return 1
        print(f"Skipping data set {dataset}: {line}", file=term, flush=True)
        doc = {"dataset": dataset, "available": False, "reason": line}
    else:
        doc = {"dataset": dataset, "available": True, "manifest": str(manifest)}
    atomic_write_text(status, json.dumps(doc, indent=1) + "\n")
    return 0


def read_status(status: PathLike | None) -> dict:
    """Read a data set's status written by :func:`prepare_data` (ValueError if skipped).

    ``None``: nothing to check.
    """
    if status is None:
        return {"available": True}
    doc = json.loads(Path(status).read_text())
    if not doc["available"]:
        raise ValueError(
            f"data set {doc['dataset']!r} was skipped in this run: {doc['reason']}"
        )
    return doc


def draw_splits(
    cfg: Mapping[str, Any],
    out: PathLike,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    offline: bool = False,
    status: PathLike | None = None,
) -> None:
    """Draw the random subset (if any) and the splits of one setting into ``out``.

    ``cfg`` is the splits job's parameters (:meth:`.plan.Plan.split_params`, read
    back as a :class:`~.plan.SplitJob`). ``status`` is the data set's status in
    this run (:func:`prepare_data`): a skipped data set is an error naming why.
    """
    from ..protocol.splits import make_splits

    job = SplitJob.from_params(cfg)
    read_status(status)
    data = load_views(
        job.dataset,
        data_root=data_root,
        mirror=mirror,
        views=job.views,
        offline=offline,
        **job.load,
    )
    logger.info("loaded %r", data)
    where = f"datasets.{job.dataset}.settings.{job.setting}"
    rng = derived_rng(job.seed, job.dataset, job.setting, "subset")
    try:
        subset = random_subset(len(data.y), job.subset, rng)
    except ValueError as exc:
        raise ValueError(f"{where}.subset: {exc}") from None
    pool = None
    if job.pool:  # e.g. NUS-WIDE's training set, as rows of the subset
        if job.pool not in data.splits:
            parts = ", ".join(map(repr, data.splits)) or "none"
            raise ValueError(
                f"{where}.pool: data set {job.dataset!r} has no part "
                f"{job.pool!r} (it has {parts})"
            )
        pool = np.flatnonzero(np.isin(subset, data.splits[job.pool]))
    splits = make_splits(
        data.y[subset],
        n_labeled=job.n_labeled,
        per_class=job.per_class,
        n_splits=job.n_splits,
        seed=job.seed,
        val_fraction=job.val_fraction,
        pool=pool,
        fit_on=job.fit_on,
    )
    check_eval_rows(splits, where)
    save_splits(out, subset, splits)
    logger.info("%d rows, %d splits written", len(subset), len(splits))


def run_fit_job(
    cfg: Mapping[str, Any],
    splits: PathLike,
    out: PathLike,
    *,
    data_root: PathLike,
    mirror: PathLike | None = None,
    fit_cache: PathLike | None = None,
    threads: int = 1,
    offline: bool = False,
) -> pd.DataFrame:
    """One method on one split (or every split) of a setting, over the r grid.

    ``cfg`` is the fit job's parameters (:meth:`.plan.Plan.fit_params`, read back
    as a :class:`~.plan.FitJob`); ``splits`` is the setting's splits file. Writes the
    tidy results of :func:`tcca_core.protocol.run_method` for every split, with the
    data set, setting and thread count, to ``out`` and returns them. Fit time and
    peak memory are measured per r; the job's own time and max RSS are in its
    benchmark file. Split-independent fits are done once for all the splits of the
    job, and with ``fit_cache`` (a folder) once for all jobs; entries live on disk,
    not in RAM.
    """
    from ..fit_cache import FitCache
    from ..protocol.run import run_method

    job = FitJob.from_params(cfg)
    data = load_views(
        job.dataset,
        data_root=data_root,
        mirror=mirror,
        views=job.views,
        offline=offline,
        **job.load,
    )
    subset, split_list = load_splits(splits, job.split)
    views, y = [v[subset] for v in data.views], data.y[subset]

    fit_views = None
    if job.fit_extra:  # extra unlabeled rows for the subspace (SecStr 1.3M)
        extra = load_views(
            job.fit_extra,
            data_root=data_root,
            mirror=mirror,
            views=job.views,
            offline=offline,
        )
        rows = random_subset(
            extra.n_samples,
            job.extra_subset,
            derived_rng(job.seed, job.dataset, job.setting, "extra"),
        )
        fit_views = [e[rows] for e in extra.views]
        logger.info("%d extra unlabeled rows for the subspace", len(rows))

    r_grid = r_grid_of({"r_grid": job.r_grid})
    frames = []
    with tempfile.TemporaryDirectory(prefix="tcca-fit-") as scratch:
        cache = FitCache(fit_cache or scratch)
        for split in split_list:
            logger.info(
                "%s, split %d: %d rows, r grid %s",
                job.method,
                split.index,
                len(y),
                r_grid,
            )
            frames.append(
                run_method(
                    views,
                    y,
                    split,
                    job.method,
                    r_grid=r_grid,
                    learner=job.learner,
                    params=job.params,
                    fit_views=fit_views,
                    seed=job.seed,
                    kernel=job.kernel,
                    cache=cache,
                )
            )
        logger.info(
            "fit cache %s: %d reused, %d stored", cache.folder, cache.hits, cache.misses
        )
    results = pd.concat(frames, ignore_index=True)
    results.insert(0, "setting", job.setting)
    results.insert(0, "dataset", job.dataset)
    results["threads"] = threads
    write_csv(results, out)
    logger.info("%d rows written", len(results))
    return results


def gather_fits(fits: Sequence[PathLike], runs: PathLike, log: PathLike) -> None:
    """Concatenate the fit CSVs of one setting into ``runs``."""
    table = pd.concat([pd.read_csv(f) for f in fits], ignore_index=True)
    write_csv(table, runs)
    atomic_write_text(log, f"{len(table)} rows from {len(fits)} fit files\n")


def build_table(
    runs: Sequence[PathLike] | pd.DataFrame,
    jobs: Iterable[Mapping[str, Any]],
    spec: Mapping[str, Any],
    out: Mapping[str, PathLike],
) -> dict:
    """One table: accuracy (both readings), cost, figures and its JSON record.

    Parameters
    ----------
    runs : list of paths, or DataFrame
        The gathered results of the table's settings (``results/runs/...csv``);
        each row names its setting and method.
    jobs : iterable of mappings
        The fit jobs behind them, each with its ``setting``, ``method`` and
        ``benchmark`` (the Snakemake benchmark file: whole-job time and max RSS).
    spec : mapping
        The table's configuration (:meth:`.plan.Plan.table_params`): name, title,
        columns, paper, same_as.
    out : mapping
        Output paths, keyed as the ``table`` rule's outputs (csv, md, tex,
        csv_best_r, md_best_r, tex_best_r, json, cost, cost_md, cost_tex, cost_by_r,
        accuracy_png, accuracy_pdf, cost_png, cost_pdf, and optionally html: every
        table of this one on one page, reading (A) first, for the report).

    A ``run_note`` in ``spec`` (a reduced run's "reduced run: quick") ends every
    title, of the tables and of the figures, and adds a footnote.

    Returns
    -------
    dict
        The table's JSON record (also written to ``out["json"]``).
    """
    from .. import reporting

    name, title, columns = spec["name"], spec["title"], spec["columns"]
    paper, same_as = spec.get("paper"), spec["same_as"]
    run_note = spec.get("run_note") or ""
    mark = f" [{run_note}]" if run_note else ""
    reduced = (
        [
            f"{run_note[0].upper()}{run_note[1:]}: not the full configuration; "
            "these numbers show that everything runs and are not for comparison "
            "with the paper."
        ]
        if run_note
        else []
    )
    html: list[tuple[str, pd.DataFrame, list[str]]] = []
    if not isinstance(runs, pd.DataFrame):
        runs = pd.concat([pd.read_csv(f) for f in runs], ignore_index=True)
    counts = sorted(int(t) for t in runs["threads"].dropna().unique())
    threads: int | list[int] = counts[0] if len(counts) == 1 else counts
    machine = reporting.machine_text()

    # Accuracy, both readings. No timing in these files: reruns reproduce them exactly.
    records = {}
    for reading, suffix in [("val", ""), ("best_r", "_best_r")]:
        cells = reporting.accuracy_cells(runs, reading)
        table, records[reading] = reporting.accuracy_table(
            cells, columns, paper=paper, same_as=same_as
        )
        notes = reporting.accuracy_notes(reading, paper) + reduced
        reporting.write_table(
            table,
            csv=out[f"csv{suffix}"],
            md=out[f"md{suffix}"],
            tex=out[f"tex{suffix}"],
            title=f"{title} [{reporting.READINGS[reading]}]{mark}",
            label=f"tab:{name}{suffix}",
            notes=notes,
        )
        html.append((f"Reading {reporting.READINGS[reading]}", table, notes))

    # Cost: in-fit time/memory at the selected r and across r; whole-job time and RSS
    # from the fit jobs' benchmark files, keyed by the jobs' (setting, method).
    bench: dict[tuple[str, str], list] = {}
    for job in jobs:
        bench.setdefault((job["setting"], job["method"]), []).append(job["benchmark"])
    cost_selected = reporting.cost_at_selected(runs)
    cost = reporting.cost_table(
        cost_selected,
        reporting.job_costs(bench),
        columns,
        threads=threads,
        machine=machine,
    )
    cost_notes = [f"Measured on {machine}, {threads} thread(s) per job.", *reduced]
    reporting.write_table(
        cost,
        csv=out["cost"],
        md=out["cost_md"],
        tex=out["cost_tex"],
        title=f"Fit time and peak memory at the selected r: {title}{mark}",
        label=f"tab:{name}_cost",
        notes=cost_notes,
    )
    html.append(("Fit time and peak memory at the selected r", cost, cost_notes))
    if out.get("html"):
        atomic_write_text(out["html"], reporting.to_html(html, f"{title}{mark}"))
    by_r = reporting.cost_by_r(runs).assign(threads=str(threads), machine=machine)
    write_csv(by_r, out["cost_by_r"])

    # Figures.
    curves = reporting.accuracy_curves(runs)
    accuracy_title, cost_title = reporting.figure_titles(f"{title}{mark}")
    reporting.plot_accuracy(
        curves,
        columns,
        [out["accuracy_png"], out["accuracy_pdf"]],
        title=accuracy_title,
        same_as=same_as,
    )
    reporting.plot_cost(
        reporting.cost_by_r(runs),
        columns,
        [out["cost_png"], out["cost_pdf"]],
        title=cost_title,
        subtitle=f"{machine}; threads per job: {threads}",
        same_as=same_as,
    )

    record = reporting.table_record(
        name,
        {**spec, "title": f"{title}{mark}"},
        records,
        cost=cost,
        curves=curves,
        cost_r=reporting.cost_by_r(runs),
        cost_selected=cost_selected,
        threads=threads,
    )
    atomic_write_text(out["json"], json.dumps(record, indent=2, sort_keys=True) + "\n")
    logger.info("table %s written", name)
    return record


def write_summary(
    tables: Sequence[PathLike],
    out: PathLike,
    *,
    config: Mapping[str, Any],
    workflow_dir: PathLike,
    run: Mapping[str, Any] | None = None,
    skipped: Mapping[str, str] | None = None,
    statuses: Sequence[PathLike] = (),
) -> dict:
    """``results/summary.json``: every table number, with the run's provenance.

    ``run`` (:func:`tcca_core.pipeline.config.run_location`) says where the run
    wrote and whether it is the full configuration; ``skipped`` (data set -> why)
    and the data sets' ``statuses`` (:func:`prepare_data`) give the data sets the
    run went on without (key ``skipped``).
    """
    from .. import reporting

    records = [json.loads(Path(f).read_text()) for f in tables]
    skipped = dict(skipped or {})
    for f in statuses:
        doc = json.loads(Path(f).read_text())
        if not doc["available"]:
            skipped[doc["dataset"]] = doc["reason"]
    threads = sorted(
        {str(t["threads"]) for t in records if t.get("threads") is not None}
    )
    prov = reporting.provenance(
        config,
        repo=workflow_dir,
        threads=threads[0] if len(threads) == 1 else threads,
    )
    if run is not None:
        prov["run"] = dict(run)
    summary = reporting.build_summary(records, prov)
    if skipped:
        summary["skipped"] = skipped
    atomic_write_text(out, json.dumps(summary, indent=2, sort_keys=True) + "\n")
    logger.info("summary of %d tables written", len(records))
    return summary


def write_reproduction(
    summary: PathLike,
    investigations: PathLike,
    out: PathLike,
    *,
    root: PathLike,
    missing: Mapping[str, str],
    tables: Mapping[str, str] | None = None,
    figures: str = "results/figures",
) -> None:
    """REPRODUCTION.md (or a reduced run's own file) from the summary and the notes.

    ``missing`` gives the reason of each table known not to run; ``tables`` (table
    -> data set) adds those of data sets that the run skipped (the summary's
    ``skipped``); ``figures`` is the figures' folder relative to ``out``.
    """
    from .. import reproduction

    doc = json.loads(Path(summary).read_text())
    missing = dict(missing)
    for table, dataset in (tables or {}).items():
        why = (doc.get("skipped") or {}).get(dataset)
        if why and table not in doc.get("tables", {}) and table not in missing:
            missing[table] = (
                f"Not run: the data set `{dataset}` could not be obtained on the "
                f"machine that ran the pipeline ({why})."
            )
    notes = reproduction.include_files(Path(investigations).read_text(), Path(root))
    text = reproduction.build(
        doc, investigations=notes, missing=missing, figures=figures
    )
    atomic_write_text(out, text)
    logger.info(
        "REPRODUCTION.md written (%d deviations)", len(reproduction.deviations(doc))
    )
