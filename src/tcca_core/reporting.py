"""Tables, figures and the summary of the reproduction pipeline.

Everything the Snakemake pipeline shows a reader is computed here, so that it can be
tested without Snakemake; the workflow scripts only read files and call these functions.

Inputs are the tidy result rows of :func:`tcca_core.protocol.run_method` (one row per
method, split, r and parameter value, with ``val_acc``, ``test_acc``, ``fit_s`` and
``peak_mb``), gathered per *setting* (one column of a table: a data set with a labeling
scheme, e.g. SecStr with 84K unlabeled instances, or NUS-WIDE with 4 labeled per
concept). From them:

- :func:`accuracy_cells` gives the number of every table cell, in both readings of the
  paper's "accuracy at the best dimension" (see :data:`READINGS`);
- :func:`accuracy_table` lays the cells out as the paper does, with the paper's number
  (:data:`PAPER_TABLES`) and the difference next to ours; :func:`write_table` writes
  it as CSV, Markdown and LaTeX;
- :func:`cost_by_r` and :func:`cost_at_selected` give fit time and peak memory across r
  and at the selected r (the paper's cost figures, as numbers);
- :func:`plot_accuracy` and :func:`plot_cost` draw accuracy, time and memory against r;
- :func:`provenance` and :func:`build_summary` make ``summary.json``.

Accuracy tables contain no timing, so rerunning the pipeline reproduces them byte for
byte; timing lives in the separate cost tables.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from ._io import atomic_write, atomic_write_text, write_csv
from .paper import NOT_ATTEMPTED, PAPER_MACHINE, PAPER_TABLES
from .protocol.selection import accuracy_by_r, select, select_per_split
from .registry import METHODS

__all__ = [
    "METHOD_LABELS",
    "PAPER_MACHINE",
    "PAPER_TABLES",
    "READINGS",
    "accuracy_cells",
    "accuracy_curves",
    "accuracy_notes",
    "accuracy_table",
    "build_summary",
    "cost_at_selected",
    "cost_by_r",
    "cost_table",
    "format_pm",
    "git_commit",
    "job_costs",
    "machine_info",
    "machine_text",
    "method_label",
    "package_versions",
    "plot_accuracy",
    "plot_cost",
    "provenance",
    "table_record",
    "figure_titles",
    "to_html",
    "to_latex",
    "to_markdown",
    "write_table",
]

# ------------------------------------------------------------------------ methods


class _Labels(Mapping):
    """Method key -> the paper's name, in the paper's row order (read-only).

    A live view of :data:`tcca_core.registry.METHODS`: a method registered later is
    in it too.
    """

    def __getitem__(self, method: str) -> str:
        return METHODS[method].label

    def __iter__(self):
        return iter(METHODS)

    def __len__(self) -> int:
        return len(METHODS)

    def __repr__(self) -> str:
        return repr(dict(self))


#: Display names, in the paper's row order (linear methods, then kernel methods).
METHOD_LABELS: Mapping[str, str] = _Labels()


def _rank(method: str) -> int:
    """Position of a method in the row order (unknown methods last)."""
    for i, name in enumerate(METHODS):
        if name == method:
            return i
    return len(METHODS)


def method_label(method: str) -> str:
    """Return the paper's name of a method (``"cca_bst"`` -> ``"CCA (BST)"``)."""
    spec = METHODS.get(method)
    return method if spec is None else spec.label


def _ordered(methods) -> list[str]:
    return sorted(set(methods), key=lambda m: (_rank(m), m))


# ------------------------------------------------------------------ paper numbers

_NOT_ATTEMPTED = NOT_ATTEMPTED


def _paper_cell(paper: str | None, column: str | None, method: str):
    """(mean, std), "not attempted", or None where the paper has no number."""
    if not paper or not column:
        return None
    try:
        table = PAPER_TABLES[paper]
    except KeyError:
        raise KeyError(
            f"no paper table {paper!r}; known: {sorted(PAPER_TABLES)}"
        ) from None
    if column not in table:
        raise KeyError(
            f"paper table {paper!r} has no column {column!r}: {sorted(table)}"
        )
    return table[column].get(method)


# --------------------------------------------------------------------- selection

#: The two readings of "accuracy at the best dimension" (shared/docs/baselines.md §1):
#: ``val``: per split, the test accuracy at the validation-selected parameters (r
#: included), then mean and std over splits (primary); ``best_r``: per r, the mean test
#: accuracy over splits (other parameters chosen on validation), maximised over r.
READINGS = {
    "val": "validation-selected (A)",
    "best_r": "best mean over r (B)",
}

_BY = ["setting", "method"]


def _with_setting(runs: pd.DataFrame) -> pd.DataFrame:
    if "setting" not in runs.columns:
        runs = runs.assign(setting="")
    return runs


def _std(values) -> float:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    return float(np.std(values, ddof=1)) if values.size > 1 else float("nan")


def _r_text(rs) -> str:
    """Join the selected r values with "/" ("" for methods without r)."""
    return "/".join(str(int(r)) for r in rs if pd.notna(r))


def accuracy_curves(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and std (ddof=1, over splits) of the test accuracy (%) at each r.

    The other parameters are chosen on validation at each r and split
    (:func:`tcca_core.protocol.accuracy_by_r`). Methods without a dimension (BSF, CAT,
    BSK, AVG) get one row with ``r = 0``. Columns: setting, method, r, mean, std,
    n_splits.
    """
    curve = accuracy_by_r(_with_setting(runs), by=_BY)
    return pd.DataFrame(
        {
            "setting": curve["setting"],
            "method": curve["method"],
            "r": curve["r"].astype("Float64").fillna(0).astype(int),
            "mean": 100.0 * curve["test_acc_mean"].astype(float),
            "std": 100.0 * curve["test_acc_std"].astype(float),
            "n_splits": curve["n_splits"].astype(int),
        }
    )


def accuracy_cells(runs: pd.DataFrame, reading: str = "val") -> pd.DataFrame:
    """Return the number of every table cell: one row per (setting, method).

    ``reading`` is ``"val"`` or ``"best_r"`` (see :data:`READINGS`; computed by
    :func:`tcca_core.protocol.select`). Columns: setting, method, mean, std (ddof=1
    over splits, in %), n_splits, and r: the selected r of each split joined with "/"
    ("val") or the best r ("best_r"); empty for methods without r.
    """
    if reading not in READINGS:
        raise ValueError(f"reading must be one of {sorted(READINGS)}, got {reading!r}")
    sel = select(_with_setting(runs), by=_BY)
    if reading == "val":
        mean, std = sel["acc_val_mean"], sel["acc_val_std"]
        r = sel["r_val"].map(lambda t: _r_text(x for x in t.split(",") if x != "NA"))
    else:
        mean, std = sel["acc_best_r_mean"], sel["acc_best_r_std"]
        r = sel["r_best"].map(lambda x: _r_text([x]))
    return pd.DataFrame(
        {
            "setting": sel["setting"],
            "method": sel["method"],
            "mean": 100.0 * mean.astype(float),
            "std": 100.0 * std.astype(float),
            "n_splits": sel["n_splits"].astype(int),
            "r": r,
        }
    )


# ------------------------------------------------------------------------ tables


def format_pm(mean, std, digits: int = 2, pm: str = "±") -> str:
    """``"62.36 ± 1.27"``; a single split (no std) gives ``"62.36"``."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "n/a"
    text = f"{mean:.{digits}f}"
    if std is not None and not (isinstance(std, float) and math.isnan(std)):
        text += f" {pm} {std:.{digits}f}"
    return text


def _format_diff(ours, paper, digits: int = 2) -> str:
    if ours is None or paper is None or math.isnan(ours):
        return ""
    return f"{ours - paper:+.{digits}f}"


def accuracy_table(
    cells: pd.DataFrame,
    columns: Sequence[Mapping],
    *,
    paper: str | None = None,
    same_as: Mapping[str, Mapping[str, str]] | None = None,
    digits: int = 2,
) -> tuple[pd.DataFrame, list[dict]]:
    """Lay out the cells as the paper's table.

    Parameters
    ----------
    cells : DataFrame
        Output of :func:`accuracy_cells` (for every setting the columns need).
    columns : sequence of mappings
        One per table column, with keys ``setting``, ``label`` and optionally
        ``paper`` (the paper table's column, e.g. ``"84K"``).
    paper : str, optional
        Key of :data:`PAPER_TABLES`; without it there are no paper columns.
    same_as : mapping, optional
        setting -> {method: other setting}: methods that the setting does not run and
        whose result is that of the other setting (SecStr 1.3M: BSF and CAT).

    Returns
    -------
    table : DataFrame of str
        One row per method (the paper's order), a ``Method`` column, then per table
        column: ours (mean ± std), ``r`` (selected r), and with a paper table
        ``... (paper)`` and ``... diff`` (ours minus paper, percentage points).
        Methods a setting does not run read "n/a" (the paper's "not attempted" where it
        says so).
    records : list of dict
        The same numbers, machine-readable, one per (method, column).
    """
    same_as = same_as or {}
    lookup = {(r.setting, r.method): r for r in cells.itertuples(index=False)}
    methods = set(cells["method"])
    for mapping in same_as.values():
        methods |= set(mapping)
    if paper:
        for col in columns:
            if col.get("paper"):
                methods |= set(PAPER_TABLES[paper][col["paper"]])
    rows, records = [], []
    for method in _ordered(methods):
        row = {"Method": method_label(method)}
        for col in columns:
            label = col["label"]
            setting = col["setting"]
            source = same_as.get(setting, {}).get(method, setting)
            cell = lookup.get((source, method))
            ref = _paper_cell(paper, col.get("paper"), method)
            if cell is not None:
                ours = format_pm(cell.mean, cell.std, digits)
            elif ref == _NOT_ATTEMPTED:
                ours = _NOT_ATTEMPTED
            else:
                ours = "not run"
            row[label] = ours
            row[f"{label} r"] = cell.r if cell is not None else ""
            ref_mean = ref[0] if isinstance(ref, tuple) else None
            if paper:
                row[f"{label} (paper)"] = (
                    format_pm(ref[0], ref[1], digits)
                    if isinstance(ref, tuple)
                    else (ref or "")
                )
                row[f"{label} diff"] = _format_diff(
                    cell.mean if cell is not None else None, ref_mean, digits
                )
            records.append(
                {
                    "method": method,
                    "column": label,
                    "setting": setting,
                    "result_of_setting": source,
                    "mean": _num(cell.mean) if cell is not None else None,
                    "std": _num(cell.std) if cell is not None else None,
                    "n_splits": int(cell.n_splits) if cell is not None else 0,
                    "r": cell.r if cell is not None else "",
                    "paper_mean": ref_mean,
                    "paper_std": ref[1] if isinstance(ref, tuple) else None,
                    "paper_note": ref if isinstance(ref, str) else None,
                    "diff": (
                        _num(cell.mean - ref_mean)
                        if cell is not None and ref_mean is not None
                        else None
                    ),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows), records


def _num(x):
    """Return a JSON-safe float (NaN -> None), rounded to drop binary noise."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else round(x, 10)


def _escape_md(text: str) -> str:
    return str(text).replace("|", "\\|")


def to_markdown(table: pd.DataFrame, title: str = "", notes: Sequence[str] = ()) -> str:
    """Render a GitHub-flavoured Markdown table, title above and notes below.

    The table is :meth:`pandas.DataFrame.to_markdown` (tabulate's ``pipe`` format:
    padded columns, the first left-aligned, the others right-aligned); cells are
    kept as written (no number parsing) and ``|`` in them is escaped.
    """
    cells = table.astype(str).map(_escape_md)
    cells.columns = [_escape_md(c) for c in table.columns]
    align = ("left",) + ("right",) * (len(cells.columns) - 1)
    body = cells.to_markdown(
        index=False, tablefmt="pipe", colalign=align, disable_numparse=True
    )
    lines = [f"**{_escape_md(title)}**", ""] if title else []
    lines.append(body)
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _escape_tex(text) -> str:
    """Escape LaTeX's special characters (for the caption and the notes)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def to_latex(
    table: pd.DataFrame, title: str = "", label: str = "", notes: Sequence[str] = ()
) -> str:
    r"""Render a standalone ``table`` environment (booktabs, ``$\pm$`` in the cells).

    The table is :meth:`pandas.io.formats.style.Styler.to_latex` (cells and headings
    escaped by pandas); the caption and the notes are escaped here.
    """
    styler = (
        table.astype(str)
        .style.hide(axis="index")
        .format(escape="latex")
        .format_index(escape="latex", axis=1)
    )
    text = styler.to_latex(
        hrules=True,
        column_format="l" + "r" * (len(table.columns) - 1),
        position="!t",
        position_float="centering",
        caption=_escape_tex(title) if title else None,
        label=label or None,
        environment="table",
    )
    if notes:
        extra = "".join(
            r"\par\smallskip{\footnotesize " + _escape_tex(n) + "}\n" for n in notes
        )
        text = text.replace("\\end{table}", extra + "\\end{table}")
    return text.replace("±", r"$\pm$")


def to_html(
    sections: Sequence[tuple[str, pd.DataFrame, Sequence[str]]], title: str = ""
) -> str:
    """Render tables as one HTML page (each a heading, the table, its notes).

    The tables are :meth:`pandas.io.formats.style.Styler.to_html`; the page is
    what the Snakemake report shows inline.
    """
    import html

    css = (
        "body{font-family:sans-serif;font-size:14px;margin:1em}"
        "table{border-collapse:collapse;margin:.5em 0 1em}"
        "th,td{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}"
        "th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}"
        "p.note{color:#555;font-size:12px;margin:.2em 0}"
    )
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{css}</style></head><body>",
    ]
    if title:
        parts.append(f"<h2>{html.escape(title)}</h2>")
    for heading, table, notes in sections:
        parts.append(f"<h3>{html.escape(heading)}</h3>")
        styler = table.astype(str).style.hide(axis="index").format(escape="html")
        parts.append(styler.to_html(table_uuid=_slug(heading)))
        parts += [f'<p class="note">{html.escape(n)}</p>' for n in notes]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _slug(text: str) -> str:
    """Make a stable identifier (the HTML of a table does not change between runs)."""
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower())[:40]


def write_table(
    table: pd.DataFrame,
    *,
    csv: str | os.PathLike,
    md: str | os.PathLike | None = None,
    tex: str | os.PathLike | None = None,
    title: str = "",
    label: str = "",
    notes: Sequence[str] = (),
) -> None:
    """Write one table as CSV (UTF-8, no index) and optionally Markdown and LaTeX.

    Each file is written atomically (:func:`tcca_core._io.atomic_write`).
    """
    write_csv(table, csv)
    if md is not None:
        atomic_write_text(md, to_markdown(table, title, notes))
    if tex is not None:
        atomic_write_text(tex, to_latex(table, title, label, notes))


def accuracy_notes(reading: str, paper: str | None) -> list[str]:
    """Footnotes that say how to read an accuracy table."""
    notes = [
        "Accuracy in %, mean ± std (ddof=1) over the splits; "
        f"reading: {READINGS[reading]}.",
        (
            "r: the validation-selected r of each split."
            if reading == "val"
            else "r: the r with the best mean test accuracy."
        ),
    ]
    if paper:
        notes.append(
            "paper: Luo et al. (TKDE 2015); diff = ours - paper, in percentage points."
        )
    return notes


# ------------------------------------------------------------------------ costs


def _agg_mean_std(df: pd.DataFrame, keys, value: str):
    """Mean over the rows, std over the per-split means (ddof=1)."""
    per_split = df.groupby([*keys, "split"], sort=True)[value].mean().reset_index()
    g = per_split.groupby(keys, sort=True)[value]
    return g.mean(), g.agg(_std)


def cost_by_r(runs: pd.DataFrame) -> pd.DataFrame:
    """Fit time (s) and peak memory (MB) per setting, method and r.

    Each value is the mean over the parameter values and splits of one fit at that r;
    the std is over the splits (ddof=1). Columns: setting, method, r, fit_s, fit_s_std,
    peak_mb, peak_mb_std, n_splits, shared_fit (the row's cost is that of a fit
    shared by several r: one fit for every r of a nested method, whose cost is then
    repeated at each r, or a rank path, whose peak memory is the path's).
    """
    runs = _with_setting(runs).assign(r=lambda d: d["r"].fillna(0).astype(int))
    if "fit_shared" not in runs:
        runs = runs.assign(fit_shared=False)
    runs = runs.assign(fit_shared=runs["fit_shared"].astype("boolean").fillna(False))
    keys = ["setting", "method", "r"]
    fit_mean, fit_std = _agg_mean_std(runs, keys, "fit_s")
    mem_mean, mem_std = _agg_mean_std(runs, keys, "peak_mb")
    n = runs.groupby(keys, sort=True)["split"].nunique()
    shared = runs.groupby(keys, sort=True)["fit_shared"].any().astype(bool)
    out = pd.DataFrame(
        {
            "fit_s": fit_mean,
            "fit_s_std": fit_std,
            "peak_mb": mem_mean,
            "peak_mb_std": mem_std,
            "n_splits": n,
            "shared_fit": shared,
        }
    ).reset_index()
    out["order"] = out["method"].map(_rank)
    return (
        out.sort_values(["setting", "order", "r"])
        .drop(columns="order")
        .reset_index(drop=True)
    )


def cost_at_selected(runs: pd.DataFrame) -> pd.DataFrame:
    """Fit time and peak memory at each split's validation-selected parameters.

    Columns: setting, method, r (the selected r of each split), fit_s, fit_s_std,
    peak_mb, peak_mb_std (mean and std over splits).
    """
    sel = select_per_split(_with_setting(runs), by=_BY)
    out = []
    for (setting, method), g in sel.groupby(["setting", "method"], sort=True):
        g = g.sort_values("split")
        out.append(
            {
                "setting": setting,
                "method": method,
                "r": _r_text(g["r"]),
                "fit_s": float(g["fit_s"].mean()),
                "fit_s_std": _std(g["fit_s"]),
                "peak_mb": float(g["peak_mb"].mean()),
                "peak_mb_std": _std(g["peak_mb"]),
            }
        )
    return pd.DataFrame(out)


def job_costs(benchmarks: Mapping[tuple[str, str], Sequence[str | os.PathLike]]):
    """Whole-job wall time (s) and max RSS (MB) from Snakemake ``benchmark:`` files.

    ``benchmarks`` maps (setting, method) to the TSV files of its fit jobs (one per
    split). Returns one row per (setting, method) with the mean and std over the jobs.
    """
    out = []
    for (setting, method), files in benchmarks.items():
        frames = [pd.read_csv(f, sep="\t") for f in files]
        if not frames:
            continue
        b = pd.concat(frames, ignore_index=True)
        rss = pd.to_numeric(b["max_rss"], errors="coerce")
        out.append(
            {
                "setting": setting,
                "method": method,
                "job_s": float(b["s"].mean()),
                "job_s_std": _std(b["s"]),
                "job_max_rss_mb": float(rss.mean()),
                "job_max_rss_mb_std": _std(rss.dropna()),
            }
        )
    return pd.DataFrame(out)


def cost_table(
    selected: pd.DataFrame,
    jobs: pd.DataFrame | None,
    columns: Sequence[Mapping],
    *,
    threads: int | Sequence[int] | None = None,
    machine: str = "",
) -> pd.DataFrame:
    """Return the cost table shown to readers: one row per (setting, method).

    Fit time and peak memory at the selected r (measured inside the fit, per r), then
    whole-job time and max RSS from the benchmark files (imports and data loading
    included), with the thread count and the machine.
    """
    labels = {c["setting"]: c["label"] for c in columns}
    df = selected.copy()
    if jobs is not None and len(jobs):
        df = df.merge(jobs, on=["setting", "method"], how="left")
    df = df[df["setting"].isin(labels)]
    df["order_s"] = df["setting"].map(list(labels).index)
    df["order_m"] = df["method"].map(_rank)
    df = df.sort_values(["order_s", "order_m"])
    table = pd.DataFrame(
        {
            "Setting": df["setting"].map(labels),
            "Method": df["method"].map(method_label),
            "r": df["r"],
            "fit time (s)": [
                format_pm(m, s, 3) for m, s in zip(df.fit_s, df.fit_s_std, strict=True)
            ],
            "peak memory (MB)": [
                format_pm(m, s, 1)
                for m, s in zip(df.peak_mb, df.peak_mb_std, strict=True)
            ],
        }
    )
    if "job_s" in df:
        table["job time (s)"] = [
            format_pm(m, s, 1) for m, s in zip(df.job_s, df.job_s_std, strict=True)
        ]
        table["job max RSS (MB)"] = [
            format_pm(m, s, 0)
            for m, s in zip(df.job_max_rss_mb, df.job_max_rss_mb_std, strict=True)
        ]
    table["threads"] = (
        threads if isinstance(threads, int) else "/".join(map(str, threads or []))
    )
    table["machine"] = machine
    return table.reset_index(drop=True)


# ------------------------------------------------------------------------ figures

_MAX_COLS = 3
#: Characters of a figure title per inch of figure width (10 pt), for wrapping.
_TITLE_CHARS_PER_INCH = 13


def figure_titles(title: str) -> tuple[str, str]:
    """(accuracy figure title, cost figure title) from a table's title.

    A table's title says what its cells are ("Prediction accuracy (%) at the best
    dimension, SecStr, ..."); its figures show something else: accuracy and cost
    *against* r. ``"<measure> at the best dimension, <subject>"`` gives
    ``"<measure> against r: <subject>"`` and ``"Fit time and peak memory against r:
    <subject>"``; another title is kept as the subject. A bracketed note at the end
    ("[reduced run: quick]") stays at the end of both.
    """
    note = ""
    m = re.match(r"^(.*?)\s*(\[[^\]]*\])$", title)
    if m:
        title, note = m.group(1), " " + m.group(2)
    m = re.match(r"^(.*?) at the best dimension,\s*(.*)$", title)
    if m:
        measure, subject = m.group(1), m.group(2)
    else:
        measure, subject = "Test accuracy (%)", title
    return (
        f"{measure} against r: {subject}{note}",
        f"Fit time and peak memory against r: {subject}{note}",
    )


def _style(method: str) -> tuple[str, str, str]:
    spec = METHODS.get(method)
    if spec is None:
        return ("C9", "x", "-")
    color, marker, *line = spec.style
    return color, marker, (line or ["-"])[0]


def _nested(method: str) -> bool:
    spec = METHODS.get(method)
    return bool(spec is not None and spec.nested)


def _draw(ax, method: str, g: pd.DataFrame, value: str, band: str | None = None,
          level: bool = False):  # fmt: skip
    """One method's line against r, or a level for a method without r.

    The registry's style (colour, marker, line style) keeps coinciding lines
    apart: a method drawn dashed (e.g. KCCA (AVG)) gets hollow, larger markers, so
    that a solid one under it (KCCA (BST)) still shows. ``level``: the values are
    the cost of one fit that serves every r; it is drawn once, as a dotted level
    over the r it covers, not as a cost paid at each r.
    """
    color, marker, line = _style(method)
    label = method_label(method)
    if (g["r"] > 0).any():
        g = g[g["r"] > 0].sort_values("r")
        if level:
            # dots offset per method: coinciding levels show both colours
            offset = 0.8 * (_rank(method) % 3)
            ax.hlines(float(g[value].mean()), g["r"].min(), g["r"].max(),
                      color=color, linestyles=[(offset, (1, 1.5))], linewidth=2.2,
                      label=label)  # fmt: skip
            return
        hollow = line != "-"
        ax.plot(g["r"], g[value], color=color, marker=marker, linestyle=line,
                markersize=6 if hollow else 4,
                markerfacecolor="none" if hollow else color,
                linewidth=1.4, label=label)  # fmt: skip
        if band is not None and g[band].notna().any():
            ax.fill_between(g["r"], g[value] - g[band], g[value] + g[band],
                            color=color, alpha=0.12, linewidth=0)  # fmt: skip
    elif len(g):
        ax.axhline(float(g[value].iloc[0]), color=color,
                   linestyle=line if line != "-" else "--", linewidth=1.3,
                   label=label)  # fmt: skip


def _figure(n_panels: int, rows_per_panel: int, height: float):
    """Make a bare Figure with the panels in blocks of at most three columns.

    No pyplot: no global state, no GUI backend. Every panel shares its x axis with
    the others, and row k of every panel its y axis with row k of the others, so
    that panels compare at a glance. Returns (fig, [axes of panel i, top to
    bottom]).
    """
    from matplotlib.figure import Figure

    ncols = min(n_panels, _MAX_COLS)
    blocks = -(-n_panels // ncols)
    fig = Figure(
        figsize=(max(4.4 * ncols, 6.4), height * rows_per_panel * blocks + 1.4),
        layout="constrained",
    )
    grid = fig.subplots(rows_per_panel * blocks, ncols, squeeze=False)
    panels = []
    for i in range(blocks * ncols):
        b, c = divmod(i, ncols)
        axes = [grid[rows_per_panel * b + k][c] for k in range(rows_per_panel)]
        if i < n_panels:
            panels.append(axes)
        else:
            for ax in axes:
                ax.set_visible(False)
    first = panels[0]
    for axes in panels:
        for k, ax in enumerate(axes):
            if ax is not first[0]:
                ax.sharex(first[0])
            if ax is not first[k]:
                ax.sharey(first[k])
    return fig, panels


def _finish(fig, title: str, paths: Sequence[str | os.PathLike], note: str = "",
            extra: Mapping | None = None):  # fmt: skip
    """Add the legend, the title, and write the files.

    The legend lists the methods in the paper's order, then ``extra`` (label ->
    handle: what the figure's shading and marks are).
    """
    handles: dict = {}
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, h)
    rank = {label: i for i, label in enumerate(METHOD_LABELS.values())}
    ordered = sorted(handles, key=lambda label: rank.get(label, len(rank)))
    for label, handle in (extra or {}).items():
        handles[label] = handle
        ordered.append(label)
    # Columns as wide as the longest entry (handle and padding about 0.7 inch, a
    # 9 pt character about 0.07 inch), so that the legend never overflows the
    # figure and cuts off its first and last entries.
    entry = 0.7 + 0.07 * max((len(label) for label in ordered), default=0)
    ncols = min(len(ordered), max(2, int(fig.get_figwidth() // max(entry, 1.3))))
    width = max(30, int(fig.get_figwidth() * _TITLE_CHARS_PER_INCH))
    # the note (how to read the figure) heads the legend, where the layout keeps it
    legend = fig.legend([handles[k] for k in ordered], ordered,
                        loc="outside lower center", ncols=ncols, fontsize=9,
                        frameon=False,
                        title=textwrap.fill(note, int(width * 1.2)) if note else None,
                        title_fontsize=8)  # fmt: skip
    if note:
        legend.get_title().set_color("0.3")
    if title:
        wrapped = "\n".join(
            textwrap.fill(line, width) for line in title.split("\n") if line
        )
        fig.suptitle(wrapped, fontsize=10)
    for path in paths:
        # No creation date or software version: rerunning gives identical files.
        meta = (
            {"Software": None} if str(path).endswith(".png") else {"CreationDate": None}
        )
        with atomic_write(path) as part:
            fig.savefig(part, format=Path(path).suffix[1:], dpi=150, metadata=meta)


def _with_same_as(df: pd.DataFrame, setting: str, same_as) -> pd.DataFrame:
    """Rows of ``setting``, plus those other settings supply for it (``same_as``)."""
    parts = [df[df["setting"] == setting]]
    for method, other in (same_as or {}).get(setting, {}).items():
        parts.append(df[(df["setting"] == other) & (df["method"] == method)])
    return pd.concat(parts, ignore_index=True)


#: What the accuracy figures' shading and the paper's marks are (legend entries).
BAND_LABEL = "shaded: ±1 std over splits"
PAPER_LABEL = "paper: mean ± 2 std"
#: The note heading the legend of an accuracy figure with the paper's numbers.
PAPER_NOTE = (
    "Diamonds right of the dotted line: the paper's accuracy at the best dimension "
    '(Luo et al. 2015, the tables\' "paper" column), mean ± 2 std over its splits; '
    "the paper does not say at which r. Dashed levels: methods without r."
)


def _x_axis(panels, r_max: float, strip: float = 0.0) -> None:
    """Set the shared x axis once every panel is drawn: 0 to the largest r.

    Setting it per panel while drawing (``set_xlim(left=0)``) froze the range at
    the first panel's data and clipped the wider grids of the panels after it.
    ``strip``: room right of the last r for the paper's marks; the r ticks stop
    at the last r, since those marks have no r.
    """
    from matplotlib.ticker import MaxNLocator

    first = panels[0][0]
    r_max = r_max if r_max > 0 else 1.0
    first.set_xlim(0, r_max * 1.03 + strip)
    if strip:
        ticks = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], integer=True)
        first.set_xticks([t for t in ticks.tick_values(0, r_max) if 0 <= t <= r_max])


def _paper_numbers(paper, columns) -> list[dict[str, tuple[float, float]]]:
    """Per column, method -> the paper's (mean, std); "not attempted" left out."""
    out = []
    for col in columns:
        cells = {}
        if paper and col.get("paper"):
            for method in PAPER_TABLES[paper][col["paper"]]:
                ref = _paper_cell(paper, col["paper"], method)
                if isinstance(ref, tuple):
                    cells[method] = ref
        out.append(cells)
    return out


def _draw_paper(ax, numbers: Mapping[str, tuple[float, float]], slots, x0, step):
    """Draw the paper's values right of the curves: mean ± 2 std, method's colour.

    The paper reports the accuracy at the best dimension without its r, so the
    marks stand in a strip of their own, one slot per method (the same slot in
    every panel), after a dotted line that ends the r axis.
    """
    from matplotlib.transforms import blended_transform_factory

    if not numbers:
        return
    ax.axvline(x0 - step, color="0.6", linestyle=":", linewidth=0.9)
    for method, (mean, std) in numbers.items():
        color, _, _ = _style(method)
        # labelled by method too: a method the paper has and this run lacks
        # still gets its colour in the legend
        ax.errorbar([x0 + slots[method] * step], [mean], yerr=[2 * std], fmt="D",
                    color=color, markersize=4, markerfacecolor="white",
                    markeredgewidth=1.2, elinewidth=1.1, capsize=2,
                    label=method_label(method))  # fmt: skip
    centre = x0 + (len(slots) - 1) * step / 2
    ax.text(centre, 0.99, "paper", transform=blended_transform_factory(
        ax.transData, ax.transAxes), ha="center", va="top", fontsize=7,
        color="0.3")  # fmt: skip


def plot_accuracy(
    curves: pd.DataFrame,
    columns: Sequence[Mapping],
    paths: Sequence[str | os.PathLike],
    *,
    title: str = "",
    same_as: Mapping[str, Mapping[str, str]] | None = None,
    paper: str | None = None,
):
    """Accuracy (%) against r: one panel per table column, one line per method.

    Methods without r (BSF, CAT, BSK, AVG) are dashed levels; the shaded band is
    ± one std over the splits. With ``paper`` (a key of :data:`PAPER_TABLES`) and
    a column's ``paper`` (its column there), the paper's number of every method
    is drawn right of the last r as a diamond with ± 2 std bars (the paper gives
    the accuracy at its best dimension, not at which r). The panels share their
    axes, which span every panel's data. Written to every path in ``paths``
    (PNG, PDF, ...).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, panels = _figure(len(columns), 1, 3.4)
    subs = [_with_same_as(curves, col["setting"], same_as) for col in columns]
    r_max = max((float(sub["r"].max()) for sub in subs if len(sub)), default=0.0)
    numbers = _paper_numbers(paper, columns)
    slots = {m: i for i, m in enumerate(_ordered(m for n in numbers for m in n))}
    step = 0.035 * max(r_max, 1.0)
    x0 = max(r_max, 1.0) * 1.03 + 2 * step
    for (ax,), col, sub, ref in zip(panels, columns, subs, numbers, strict=True):
        for method in _ordered(sub["method"]):
            _draw(ax, method, sub[sub["method"] == method], "mean", band="std")
        _draw_paper(ax, ref, slots, x0, step)
        ax.set_xlabel("dimension of the common subspace r")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(col["label"], fontsize=10)
        ax.grid(True, alpha=0.3)
    _x_axis(panels, r_max, strip=(len(slots) + 2) * step if slots else 0.0)
    # What the shading and the marks are, as legend entries (after the methods).
    legend_extra: dict[str, Artist] = {
        BAND_LABEL: Patch(color="0.5", alpha=0.25, linewidth=0)
    }
    if slots:
        legend_extra[PAPER_LABEL] = Line2D(
            [], [], color="0.3", marker="D", markerfacecolor="white", linestyle="none"
        )
    _finish(fig, title, paths, note=PAPER_NOTE if slots else "", extra=legend_extra)
    return fig


#: The note under a cost figure (nested methods are drawn as levels; what memory is).
COST_NOTE = (
    "Dotted levels: methods whose one fit gives every r (CCA, CCA-LS, KCCA: the "
    "first r columns of one solution); their cost is that fit's, drawn once over "
    "the r it covers, not paid again at each r. TCCA/KTCCA: each rank's own "
    "fit along the rank path (memory: the path's peak). Memory: the fit's peak "
    "traced by tracemalloc (NumPy's buffers; LAPACK's workspace is not traced), "
    "not the process RSS (the whole job's max RSS is in the cost table)."
)


def plot_cost(
    costs: pd.DataFrame,
    columns: Sequence[Mapping],
    paths: Sequence[str | os.PathLike],
    *,
    title: str = "",
    subtitle: str = "",
    same_as: Mapping[str, Mapping[str, str]] | None = None,
):
    """Plot fit time (s, log scale) and peak traced memory (MB) against r.

    One pair of panels per table column; the time panels share their axes, and so
    do the memory panels, which span every panel's data. A method whose one fit
    serves every r (the registry's ``nested``) is drawn as a dotted level (its
    cost is not paid at each r); a rank path's peak memory (``shared_fit``)
    likewise. Memory is tracemalloc's peak during the fit (see
    :func:`tcca_core.protocol.run_method`), not the process RSS.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, panels = _figure(len(columns), 2, 2.6)
    subs = [_with_same_as(costs, col["setting"], same_as) for col in columns]
    for (ax_t, ax_m), col, sub in zip(panels, columns, subs, strict=True):
        for method in _ordered(sub["method"]):
            g = sub[sub["method"] == method]
            shared = bool(g["shared_fit"].any()) if "shared_fit" in g else False
            _draw(ax_t, method, g, "fit_s", level=_nested(method))
            _draw(ax_m, method, g, "peak_mb", level=_nested(method) or shared)
        ax_t.set_yscale("log", nonpositive="mask")
        ax_t.set_title(col["label"], fontsize=10)
        ax_t.set_ylabel("fit time (s, log)")
        ax_m.set_ylabel("peak traced memory (tracemalloc, MB)")
        ax_m.set_xlabel("dimension of the common subspace r")
        for ax in (ax_t, ax_m):
            ax.grid(True, alpha=0.3)
    r_max = max((float(sub["r"].max()) for sub in subs if len(sub)), default=0.0)
    _x_axis(panels, r_max)
    _finish(fig, "\n".join(t for t in (title, subtitle) if t), paths, note=COST_NOTE)
    return fig


# ------------------------------------------------------------------ provenance


def machine_info() -> dict:
    """Host, CPU model, logical cores, OS and Python: where the costs were measured."""
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "logical_cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": sys.version.split()[0],
    }


def machine_text(info: Mapping | None = None) -> str:
    """One line naming the machine, for table captions."""
    info = info or machine_info()
    cpu = info.get("cpu") or info.get("machine")
    return f"{cpu}, {info.get('logical_cores')} logical cores"


_PACKAGES = (
    "tcca",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "matplotlib",
    "tensorly",
    "snakemake",
)


def package_versions(packages: Sequence[str] = _PACKAGES) -> dict:
    """Installed versions of the packages the results depend on (None if absent)."""
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


#: The pipeline's own published outputs: rewriting them does not make a run "dirty".
OUTPUT_PATHS = ("results", "REPRODUCTION.md")


def git_commit(path: str | os.PathLike) -> dict:
    """Return the commit of the repository holding ``path``, and whether it is dirty.

    Dirty: tracked changes outside :data:`OUTPUT_PATHS` (which a rerun rewrites).
    """

    def git(*args):
        return subprocess.run(
            ["git", *args],
            cwd=path,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = bool(
            git(
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ":(top)",
                *(f":(top,exclude){p}" for p in OUTPUT_PATHS),
            )
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def provenance(config: Mapping, *, repo: str | os.PathLike, threads=None) -> dict:
    """Config, seed, package versions, git commit, machine and threads of a run."""
    return {
        "seed": config.get("seed"),
        "config": json.loads(json.dumps(config, default=str)),
        "versions": package_versions(),
        "git": git_commit(repo),
        "machine": machine_info(),
        "threads": threads,
    }


def table_record(
    name: str,
    spec: Mapping,
    records: Mapping[str, list[dict]],
    *,
    cost: pd.DataFrame | None = None,
    curves: pd.DataFrame | None = None,
    cost_r: pd.DataFrame | None = None,
    cost_selected: pd.DataFrame | None = None,
    threads=None,
) -> dict:
    """Build the machine-readable record of one table (``results/tables/<name>.json``).

    ``curves`` (:func:`accuracy_curves`), ``cost_r`` (:func:`cost_by_r`) and
    ``cost_selected`` (:func:`cost_at_selected`) add the numbers behind the figures
    and the cost table, so that REPRODUCTION.md can check the paper's
    claims about the shape of the curves from the summary alone.
    """

    def records_of(df):
        return json.loads(df.to_json(orient="records")) if df is not None else []

    return {
        "table": name,
        "title": spec.get("title", ""),
        "dataset": spec.get("dataset"),
        "paper_table": spec.get("paper"),
        "columns": [dict(c) for c in spec.get("columns", [])],
        "readings": READINGS,
        "accuracy": records,
        "cost_at_selected_r": records_of(cost),
        "curves": records_of(curves),
        "cost_by_r": records_of(cost_r),
        "cost_selected": records_of(cost_selected),
        "threads": threads,
    }


def build_summary(tables: Sequence[Mapping], prov: Mapping) -> dict:
    """``summary.json``: every table's numbers plus the provenance of the run."""
    return {
        "paper": "Luo et al., Tensor Canonical Correlation Analysis for Multi-view "
        "Dimension Reduction, IEEE TKDE 2015",
        "provenance": dict(prov),
        "paper_machine": PAPER_MACHINE,
        "tables": {t["table"]: dict(t) for t in tables},
    }
