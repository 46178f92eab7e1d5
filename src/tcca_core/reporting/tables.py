"""Accuracy tables: cells in both readings, the paper's numbers beside ours.

The cells' numbers (:func:`accuracy_cells`), their layout (:func:`accuracy_table`) and
the tables' CSV, Markdown, LaTeX and HTML (:func:`write_table`, :func:`to_html`).

Accuracy tables contain no timing, so rerunning the pipeline reproduces them byte for
byte; timing lives in the cost tables (:mod:`.costs`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .._io import atomic_write_text, write_csv
from ..paper import NOT_ATTEMPTED, PAPER_TABLES
from ..protocol.selection import accuracy_by_r, select
from ..registry import METHODS
from . import escape

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
    return escape.markdown(text)


def to_markdown(table: pd.DataFrame, title: str = "", notes: Sequence[str] = ()) -> str:
    """Render a GitHub-flavoured Markdown table, title above and notes below.

    The table is :meth:`pandas.DataFrame.to_markdown` (tabulate's ``pipe`` format:
    padded columns, the first left-aligned, the others right-aligned); cells are
    kept as written (no number parsing); cells, headings, the title and the notes are
    escaped (:func:`.escape.markdown`: no raw HTML, links or code from them).
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
        lines += ["", *(_escape_md(n) for n in notes)]
    return "\n".join(lines) + "\n"


def _escape_tex(text) -> str:
    """Escape LaTeX's special characters (for the caption and the notes)."""
    return escape.latex(text)


def to_latex(
    table: pd.DataFrame, title: str = "", label: str = "", notes: Sequence[str] = ()
) -> str:
    r"""Render a standalone ``table`` environment (booktabs, ``$\pm$`` in the cells).

    The table is :meth:`pandas.io.formats.style.Styler.to_latex` (cells and headings
    escaped by pandas); the caption and the notes are escaped here.
    """
    table = table.astype(str).map(escape.one_line)
    table.columns = [escape.one_line(c) for c in table.columns]
    styler = (
        table.style.hide(axis="index")
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
    what the Snakemake report shows inline. Every text of the page (title, headings,
    column headings, cells, notes) is escaped.
    """
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
        f"<title>{escape.html(title)}</title><style>{css}</style></head><body>",
    ]
    if title:
        parts.append(f"<h2>{escape.html(title)}</h2>")
    for heading, table, notes in sections:
        parts.append(f"<h3>{escape.html(heading)}</h3>")
        styler = (
            table.astype(str)
            .style.hide(axis="index")
            .format(escape="html")
            .format_index(escape="html", axis=1)
        )
        parts.append(styler.to_html(table_uuid=_slug(heading)))
        parts += [f'<p class="note">{escape.html(n)}</p>' for n in notes]
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
