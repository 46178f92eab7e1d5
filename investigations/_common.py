"""Shared by the investigation scripts: the pipeline's splits and a compact report.

Each script reruns the protocol (tcca_core.protocol.run_method, the same code as the
pipeline's fit jobs) under one change at a time and writes a Markdown table to
investigations/results/, which REPRODUCTION.md includes verbatim, and beside it the
data the prose of docs/investigations.md reads (hand_over: <stem>.json).

Both record where they come from (hand_over): the commit, whether the tree was dirty,
the digest of the library code they depend on
(tcca_core.reporting.provenance.source_digest) and the command that made them; the
Markdown in a last line that is an HTML comment (not shown), the data under
``provenance``. tests/test_staleness.py fails on an output whose digest is not the
library's now: the code it describes changed since it was made.

The scripts that read the pipeline's runs (results/ and results/<run>/) read their fit
files, or where there are none (a clone) the rows committed from them (read_fits),
and write the rows of the investigation runs they read (bundle_rows), to be committed
with their outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from tcca_core import datasets, protocol
from tcca_core._io import atomic_write_text
from tcca_core.pipeline.rows import (
    ROWS,
    RowsError,
    bundle_run,
    read_bundle,
    read_cell,
    read_rows,
)
from tcca_core.reporting import format_pm
from tcca_core.reporting.provenance import output_stamp, read_stamp, stamp_text

#: One BLAS/OpenMP thread in every script, as in the workflow's fit jobs (Snakemake
#: sets OMP_NUM_THREADS to a job's threads): the outputs say "1 thread", and BLAS
#: rounds differently with another thread count, which moves near-degenerate fits
#: (Ads' kNN graphs of graph_baselines.py: cells by up to a point between 1 and 2
#: threads). The variables reach the libraries loaded later (scipy's own OpenBLAS,
#: scikit-learn's OpenMP); threadpool_limits those already loaded.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
threadpool_limits(1)

RESULTS = Path(__file__).resolve().parent / "results"
REPO = RESULTS.parents[1]


def parse_args(doc: str):
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--data-root", default="data", help="tcca_core.datasets root")
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--out", default=None, help="Markdown output (default: results/)")
    return ap.parse_args()


def published_parser(doc: str, name: str) -> argparse.ArgumentParser:
    """Options of a script that reads the pipeline's results instead of rerunning.

    ``--published`` (default: the repository's results/) and ``--out`` (default:
    ``results/<name>.md`` here); the script adds its own options and parses.
    """
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--published", default=str(RESULTS.parents[1] / "results"))
    ap.add_argument("--out", default=str(RESULTS / f"{name}.md"))
    return ap


def load(name: str, root: str, views=None):
    """Views (optionally those named, in that order) and labels of a data set."""
    ds = datasets.load(name, root=root)
    out = list(ds.views)
    if views:
        names = list(ds.info["view_names"])
        out = [out[names.index(v)] for v in views]
    return out, np.asarray(ds.y)


def run(views, y, splits, method, *, r_grid, learner="rls", params=None, **kw):
    """run_method over every split, sharing split-independent fits; adds timing."""
    cache: dict = {}
    t0 = time.perf_counter()
    frames = [
        protocol.run_method(
            views, y, s, method, r_grid=r_grid, learner=learner, params=params,
            cache=cache, **kw,
        )
        for s in splits
    ]  # fmt: skip
    df = pd.concat(frames, ignore_index=True)
    print(f"  {method} {params}: {time.perf_counter() - t0:.0f} s", flush=True)
    return df


def summarize(df: pd.DataFrame, variant: str) -> dict:
    """(A) validation-selected mean +- std, and the mean test accuracy at each r."""
    sel = protocol.select(df, by=["method"]).iloc[0]
    curve = protocol.accuracy_by_r(df, by=["method"])
    row = {
        "variant": variant,
        "(A)": format_pm(100 * sel["acc_val_mean"], 100 * sel["acc_val_std"]),
        "(B)": format_pm(100 * sel["acc_best_r_mean"], 100 * sel["acc_best_r_std"])
        + f" (r = {sel['r_best']})",
    }
    for r, acc in zip(curve["r"], curve["test_acc_mean"], strict=True):
        if pd.notna(r):
            row[f"r = {int(r)}"] = f"{100 * acc:.2f}"
    return row


def write(rows: list[dict], title: str, notes: str, out: str | None, name: str):
    table = pd.DataFrame(rows).fillna("")
    header = "| " + " | ".join(table.columns) + " |"
    lines = [header, "|" + "|".join("---" for _ in table.columns) + "|"]
    lines += [
        "| " + " | ".join(map(str, r)) + " |" for r in table.itertuples(index=False)
    ]
    text = f"#### {title}\n\n{notes.strip()}\n\n" + "\n".join(lines) + "\n"
    save(text, Path(out) if out else RESULTS / f"{name}.md")


def save(text: str, path, *, data: dict | None = None) -> None:
    """Write an investigation's Markdown output and its data (and show it);
    ``data``: what else the script stores in its data (hand_over)."""
    hand_over(text, path, data=data)
    print(text)


def command() -> str:
    """The command that runs this script as it was run, from the repository's top
    (what an output records to be made again)."""
    script = Path(sys.argv[0]).resolve()
    if script.is_relative_to(REPO):
        script = script.relative_to(REPO)
    return shlex.join(["python", script.as_posix(), *sys.argv[1:]])


#: The numbers each investigation's text states, by name, for the prose of
#: docs/investigations.md: the words around each as the script writes them ({} the
#: number, {*} any text on the line).
FACTS = {
    "grid_rerun": {"cells": "Cells: {} (", "identical": "identical: {}"},
    "optimizer_robustness": {
        "beyond_noise": "beyond noise: {};",
        "started_variants": "Started variants run: {};",
        "largest_change": "largest change: {} points",
        "started_identical": "identical to the published fits at every rank: {} of",
        "other_grid_differ": "Other r grid, ranks fitted alone: {} of",
        "other_grid_shared": "Other r grid, ranks fitted alone: {*} of {} shared",
        "other_grid_path_differ": "Other r grid, warm-started rank paths: {} of",
        "other_grid_path_shared": (
            "Other r grid, warm-started rank paths: {*} of {} shared"
        ),
        "other_grid_path_largest": "shared rank's mean test accuracy: {} points",
        "other_grid_path_largest_r": (
            "shared rank's mean test accuracy: {*} points ({*}, r = {})"
        ),
        "cells_complete": "Cells with every variant run: {} of",
        "cells": "Cells with every variant run: {*} of {}.",
        "off_grid_out_of_line": "Off-grid ranks ({*}): {} of",
        "off_grid_points": "Off-grid ranks ({*}): {*} of {} cell ranks",
        "off_grid_picked": "picked on validation in {} of",
        "off_grid_splits": "picked on validation in {*} of {} splits",
        "off_grid_beyond": "cells moved beyond noise: {} of",
        "off_grid_cells": "cells moved beyond noise: {*} of {} (",
    },
    "grid_edges": {
        "edge_cells": "Cells at the lowest r of their grid: {};",
        "judged": "judged on the extended grid: {}.",
        "splits_below": "Splits that pick an r below the paper's grid: {} of",
        "splits": "Splits that pick an r below the paper's grid: {*} of {},",
        "cells_below": "in {} of {*} cells; largest change",
        "largest_change": "largest change: {} points",
        "crossed": "Cells that cross the paper's mean ± 2 std: {}",
        "verdicts_moved": "Verdicts of the paper's claims that move: {} of",
        "claims": "Verdicts of the paper's claims that move: {*} of {}.",
    },
    "secstr_bsf": {
        "majority_class": "Majority class: {} %",
        "paper_mean_standard_errors": (
            "the paper's mean lies {} standard errors from ours"
        ),
        "paper_cat_minus_bsf": "paper: {})",
        "cat_minus_bsf": "CAT - BSF per draw: {} ±",
    },
    "graph_baselines": {
        "majority_class": "majority class {} %",
        "components_10_neighbours": "n_neighbors = 10: {};",
    },
    "nuswide_cost": {
        "hours_2_cores": "Estimated time on 2 cores: **{} h**",
        "prepare_min": "(data preparation {} min",
        "fit_jobs": "then {} fit jobs",
        "packed_hours": "fit jobs packed on 2 cores {} h",
        "real_n": "ran at N = {}, the real size",
        "scaling_miss_pct": "against {*} measured ({} %)",
        "scaling_miss_pct_no_tcca": "without TCCA, {*} ({} %)",
    },
}
_NUMBER = r"[-+]?\d[\d,./]*\d|[-+]?\d"


def tables_of(text: str) -> list[dict]:
    """Each Markdown table of an output: the '#### ' heading above it, its columns
    and its rows (the cells as shown)."""
    out, heading, lines = [], None, text.splitlines()

    def cells(line):
        return [c.strip() for c in line.strip().strip("|").split("|")]

    i = 0
    while i < len(lines):
        if lines[i].startswith("#### "):
            heading = lines[i][5:]
        if (
            lines[i].startswith("|")
            and i + 1 < len(lines)
            and re.match(r"\|\s*:?-", lines[i + 1])  # "|---" or "|:---" (aligned)
        ):
            columns, rows = cells(lines[i]), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            out.append({"heading": heading, "columns": columns, "rows": rows})
        else:
            i += 1
    return out


def facts_of(stem: str, text: str) -> dict[str, str]:
    """The numbers of FACTS[stem] in the text (a script that writes its output in
    parts has some of them only at the end); each must occur at most once."""
    out = {}
    for name, pattern in FACTS.get(stem, {}).items():
        regex = "".join(
            f"({_NUMBER})" if piece == "{}" else "[^\n]*?" if piece == "{*}"
            else re.escape(piece)
            for piece in re.split(r"(\{\}|\{\*\})", pattern)
        )  # fmt: skip
        hits = re.findall(regex, text)
        if len(hits) > 1:
            raise ValueError(f"{stem}: {pattern!r} found {len(hits)} times")
        if hits:
            out[name] = hits[0]
    return out


def hand_over(text: str, path, *, stamp: bool = True, data: dict | None = None) -> None:
    """Write the data of an output (its tables and facts) beside it, <stem>.json,
    keeping what else a script stores there (nuswide_cost's measured jobs).

    ``data``: keys the script stores there now (they replace those of the same
    name), written in the same step as the tables and facts, so that no later write
    of the script's own drops them.

    ``stamp``: also (re)write the output itself, ``text`` ending with the provenance
    of this tree and this command (tcca_core.reporting.provenance.stamp_text), as
    every script does when it writes an output; False (hand_over.py, rewriting the
    data of outputs already there) keeps the provenance the text records, or none.
    The data record the same provenance, under ``provenance``.
    """
    path = Path(path)
    if stamp:
        text = stamp_text(text, output_stamp(REPO, command()))
        atomic_write_text(path, text)
    data_path = path.with_suffix(".json")
    doc = json.loads(data_path.read_text()) if data_path.is_file() else {}
    doc.update(data or {})
    doc.update(tables=tables_of(text), facts=facts_of(path.stem, text))
    recorded = read_stamp(text)
    if recorded is None:
        doc.pop("provenance", None)
    else:
        doc["provenance"] = recorded
    atomic_write_text(data_path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


def read_fits(folder: Path, cell: str) -> pd.DataFrame | None:
    """The rows of one cell's fit job(s), ``folder/fits/<dataset>/<setting>/<method>/``
    (one file per split or one for all), or None when there are none.

    Without fit files (a clone: only ``folder/rows/`` is committed, results/README.md)
    the cell's committed rows, read as the fit files would be (rows.read_cell).
    """
    files = sorted((Path(folder) / "fits" / cell).glob("*.csv"))
    if files:
        return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    try:
        return read_cell(folder, cell)
    except RowsError as exc:
        raise SystemExit(str(exc)) from None


def path_fitted(rows: pd.DataFrame) -> bool:
    """Whether fit rows were fitted as a warm-started rank path (their ``params``):
    a rank's fit then also depends on the ranks fitted before it."""
    params = rows["params"].dropna().unique() if "params" in rows.columns else []
    return any(json.loads(p).get("warm_start") is True for p in params)


def read_setting(folder: Path, dataset: str, setting: str) -> pd.DataFrame | None:
    """Every row of one setting's fit jobs, all methods (the fit files, else the
    committed rows, as read_fits), or None when there are none."""
    files = sorted((Path(folder) / "fits" / dataset / setting).glob("*/*.csv"))
    if files:
        return pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    path = Path(folder) / ROWS.format(dataset=dataset, setting=setting)
    if not path.is_file():
        return None
    try:
        return read_rows(path)
    except RowsError as exc:
        raise SystemExit(str(exc)) from None


def bundle_rows(published: Path, *runs: Path) -> None:
    """Write the rows of the investigation runs read (``<run>/rows/``, committed with
    the outputs, results/README.md) from their fit files (rows.bundle_run).

    Never the published folder itself (its rows are the pipeline's rows rule's). A
    run whose committed rows name a fit file that is not on disk (some of its jobs
    rerun in a clone) is left as it is, said in one line: bundling it would drop
    committed rows.
    """
    for run in dict.fromkeys(Path(r) for r in runs):
        if not run.is_dir() or run.resolve() == Path(published).resolve():
            continue
        lost = _rows_not_on_disk(run)
        if lost:
            print(
                f"rows of {run} left as committed: {lost[0]} is in them but not "
                "among the fit files (rerun every fit job of the run to rewrite them)"
            )
            continue
        bundle_run(run)


def _rows_not_on_disk(run: Path) -> list[str]:
    """Fit files that the committed rows of a run's settings with fit files name,
    and that are not on disk."""
    out = []
    for setting in sorted((run / "fits").glob("*/*")):
        dataset = setting.parent.name
        bundle = run / ROWS.format(dataset=dataset, setting=setting.name)
        if not setting.is_dir() or not bundle.is_file():
            continue
        try:
            _, rows = read_bundle(bundle)
        except RowsError:
            continue  # not a bundle: rewriting it loses nothing
        names = dict.fromkeys(row[0] for row in rows)
        out += [
            f"fits/{dataset}/{setting.name}/{n}"
            for n in names
            if not (setting / n).is_file()
        ]
    return out
