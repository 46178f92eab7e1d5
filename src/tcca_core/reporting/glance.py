"""Every cell at a glance: our accuracy with its interval against the paper's.

The per-table figures (:mod:`.figures`) draw accuracy against r, one data set at a
time. This one draws every cell of the paper's tables that has a paper number (table
x column x method, the paper's methods only) in one figure: our reading (A), the
mean over the splits with its 95 % Student t interval, beside the paper's mean +- 2
std, under the paper's protocol (``results/summary.json``) and under equal tuning
(eps chosen on validation for every linear method: the data of
``investigations/results/equal_tuning.json``).

The intervals come from the mean, the sample std (ddof = 1, as the tables') and the
number of splits: mean +- t(0.975, n - 1) std / sqrt(n). Equal tuning's numbers are
read as that investigation shows them (two decimals), so its intervals are good to
about 0.01 points.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence

from ..paper import PAPER_TABLES
from ..registry import METHODS
from .figures import _finish, _plain
from .tables import _rank

__all__ = [
    "EQUAL_LABEL",
    "LEVEL",
    "NO_CELLS",
    "PAPER_BAND_LABEL",
    "PROTOCOL_LABEL",
    "glance_cells",
    "plot_at_a_glance",
    "t_interval",
]

#: Coverage of our intervals.
LEVEL = 0.95
#: The legend's words for each mark (tests find the marks by them).
PROTOCOL_LABEL = "ours (A), the paper's protocol: mean, 95 % t-interval over splits"
EQUAL_LABEL = "ours (A), equal tuning (eps on validation): mean, 95 % t-interval"
PAPER_BAND_LABEL = "paper: mean ± 2 std (band), mean (bar)"
#: The note heading the legend: how to read the figure.
NOTE = (
    "One row per method, one panel per table column. REPRODUCTION.md counts a cell "
    "within the paper's when our mean (the mark) lies in the grey band; our "
    "interval (Student t over our splits: mean ± t std / √n, sample std) shows how "
    "far the draw of the labeled rows moves it. Equal tuning: eps chosen on "
    "validation from one grid for CCA (BST/AVG), CCA-LS and TCCA; BSF, CAT, DSE and "
    "SSMVD keep their own parameters (the same numbers as the paper's protocol)."
)
#: What the figure says when no cell of the run has a paper number.
NO_CELLS = "No cell of this run has a paper number to compare with."
_PM = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*±\s*(\d+(?:\.\d+)?)\s*$")


def t_interval(
    mean: float, std: float, n: int, level: float = LEVEL
) -> tuple[float, float]:
    """Student t interval of a mean: mean +- t((1 + level) / 2, n - 1) std / sqrt(n).

    ``std`` is the sample std (ddof = 1). With one split (or no std) the interval
    is the mean itself.
    """
    from scipy import stats

    if n < 2 or std is None or math.isnan(std):
        return mean, mean
    half = float(stats.t.ppf((1 + level) / 2, n - 1)) * std / math.sqrt(n)
    return mean - half, mean + half


#: The possible range of an accuracy (%): intervals and bands are clipped to it
#: (two splits give t(0.975, 1) = 12.7 standard errors, far past 100 %).
ACCURACY_RANGE = (0.0, 100.0)


def _clip(value: float) -> float:
    lo, hi = ACCURACY_RANGE
    return min(max(value, lo), hi)


def _stats(mean: float, std: float, n: int, level: float) -> dict:
    """Return a cell's drawn interval: :func:`t_interval`, clipped to the range."""
    lo, hi = t_interval(mean, std, n, level)
    return {"mean": mean, "std": std, "n": n, "lo": _clip(lo), "hi": _clip(hi)}


def _band(c: Mapping) -> tuple[float, float]:
    """Return the paper's mean +- 2 std of a cell, clipped to the possible range."""
    m, s = c["paper_mean"], c["paper_std"]
    return _clip(m - 2 * s), _clip(m + 2 * s)


def _equal_values(equal: Mapping | None) -> dict[tuple[str, str], tuple[float, float]]:
    """(table and column, method label) -> (mean, std) of the equal-tuning table."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for table in (equal or {}).get("tables", []):
        cols = table.get("columns", [])
        if not {"cell", "method", "equal tuning"} <= set(cols):
            continue
        i, j, k = cols.index("cell"), cols.index("method"), cols.index("equal tuning")
        for row in table["rows"]:
            m = _PM.match(row[k])
            if m:  # "not run" and "n/a" are no number
                out[(row[i], row[j])] = (float(m.group(1)), float(m.group(2)))
    return out


def _paper_order(name: str, table: Mapping) -> tuple[int, str]:
    order = list(PAPER_TABLES)
    key = table.get("paper_table")
    return (order.index(key) if key in order else len(order), name)


def _subject(name: str, table: Mapping) -> str:
    """Return the data set as the table's title names it ("SecStr", "Ads", ...)."""
    m = re.search(r"at the best dimension,\s*([^,\[]+)", table.get("title", ""))
    return m.group(1).strip() if m else name


def glance_cells(
    summary: Mapping, equal: Mapping | None = None, level: float = LEVEL
) -> list[dict]:
    """Every cell with a paper number, ours under both protocols, in drawing order.

    Parameters
    ----------
    summary : the pipeline's ``results/summary.json`` (reading (A): ``val``).
    equal : the equal-tuning investigation's data (its ``tables``); None: none.
    level : the intervals' coverage.

    Returns
    -------
    list of dict
        Per cell, tables in the paper's order, then columns, then methods in the
        registry's order: ``table``, ``panel`` (data set and column), ``column``,
        ``method``, ``label``, ``paper_mean``, ``paper_std``, ``ours`` and
        ``equal`` (``mean``, ``std``, ``n``, ``lo``, ``hi``; ``equal`` is None where
        the equal-tuning table has no number for the cell).
    """
    equal_values = _equal_values(equal)
    tables = sorted(summary.get("tables", {}).items(), key=lambda kv: _paper_order(*kv))
    out = []
    for name, t in tables:
        recs = t.get("accuracy", {}).get("val", [])
        for col in t.get("columns", []):
            cells = [
                r
                for r in recs
                if r["column"] == col["label"]
                and r.get("paper_mean") is not None
                and r.get("mean") is not None
                and r["method"] in METHODS
                and METHODS[r["method"]].paper
            ]
            for rec in sorted(cells, key=lambda r: _rank(r["method"])):
                label = METHODS[rec["method"]].label
                n = int(rec.get("n_splits") or 1)
                eq = equal_values.get((f"{name} {col['label']}", label))
                out.append(
                    {
                        "table": name,
                        "panel": f"{_subject(name, t)}: {col['label']}",
                        "column": col["label"],
                        "method": rec["method"],
                        "label": label,
                        "paper_mean": float(rec["paper_mean"]),
                        "paper_std": float(rec.get("paper_std") or 0.0),
                        "ours": _stats(rec["mean"], rec.get("std"), n, level),
                        "equal": None if eq is None else _stats(*eq, n, level),
                    }
                )
    return out


def _limits(cells: Sequence[Mapping]) -> tuple[float, float]:
    """Return an x range holding every interval and band of a panel, with a margin."""
    values = []
    for c in cells:
        values += [*_band(c), c["paper_mean"]]
        for key in ("ours", "equal"):
            if c[key] is not None:
                values += [c[key]["lo"], c[key]["hi"], c[key]["mean"]]
    lo, hi = min(values), max(values)
    pad = 0.06 * max(hi - lo, 1.0)
    # a margin for the marks, not room past the possible range
    bottom, top = ACCURACY_RANGE
    return max(lo - pad, bottom - 1.0), min(hi + pad, top + 1.0)


def _draw_panel(ax, cells: Sequence[Mapping], rows: int) -> None:
    """One table column: a row per method, top to bottom in the paper's order.

    ``rows``: the most rows of any panel, so that every panel's rows are as tall.
    """
    ys = [rows - 1 - i for i in range(len(cells))]
    means = [c["paper_mean"] for c in cells]
    bands = [_band(c) for c in cells]
    ax.barh(ys, [hi - lo for lo, hi in bands], left=[lo for lo, _ in bands],
            height=0.72, color="0.85", edgecolor="0.6", linewidth=0.6,
            label=PAPER_BAND_LABEL)  # fmt: skip
    ax.scatter(means, ys, marker="|", s=180, color="0.35", linewidths=1.6)
    for key, label, dy, style in (
        ("ours", PROTOCOL_LABEL, 0.17, {"fmt": "o", "color": "black"}),
        ("equal", EQUAL_LABEL, -0.17, {"fmt": "s", "color": "C1",
                                       "markerfacecolor": "white"}),
    ):  # fmt: skip
        drawn = [(y, c[key]) for y, c in zip(ys, cells, strict=True) if c[key]]
        if not drawn:
            continue
        ax.errorbar(
            [s["mean"] for _, s in drawn],
            [y + dy for y, _ in drawn],
            xerr=[
                [s["mean"] - s["lo"] for _, s in drawn],
                [s["hi"] - s["mean"] for _, s in drawn],
            ],
            markersize=5,
            elinewidth=1.4,
            capsize=2.5,
            markeredgewidth=1.2,
            label=label,
            **style,
        )
    ax.set_yticks(ys, [c["label"] for c in cells])
    ax.set_ylim(-0.6, rows - 0.4)
    ax.set_xlim(*_limits(cells))
    ax.set_xlabel("test accuracy (%), reading (A)")
    ax.grid(True, axis="x", alpha=0.3)


def plot_at_a_glance(
    summary: Mapping,
    equal: Mapping | None,
    paths: Sequence[str | os.PathLike],
    *,
    title: str | None = None,
    level: float = LEVEL,
):
    """Draw every cell with a paper number: ours (both protocols) against the paper.

    One panel per table column with paper numbers (grouped by data set, in the
    paper's order), one row per method: the paper's mean +- 2 std as a grey band
    with a bar at its mean; our (A) under the paper's protocol (filled circle) and
    under equal tuning (hollow square), each with its Student t interval over our
    splits (:func:`t_interval`). Each panel's x axis spans all of its marks. A
    summary without paper numbers (a reduced run of mfeat only) gives a figure that
    says so (:data:`NO_CELLS`). Written to every path in ``paths`` (PNG, PDF, ...)
    without dates, so that a rerun gives the same files.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    cells = glance_cells(summary, equal, level)
    panels: dict[str, list[dict]] = {}
    for c in cells:
        panels.setdefault(c["panel"], []).append(c)
    rows = max((len(v) for v in panels.values()), default=1)
    fig = Figure(
        figsize=(max(4.2 * len(panels), 8.0), 0.42 * rows + 2.9),
        layout="constrained",
    )
    axes = fig.subplots(1, max(len(panels), 1), squeeze=False)[0]
    for ax, (name, group) in zip(axes, panels.items(), strict=False):
        _draw_panel(ax, group, rows)
        ax.set_title(_plain(name), fontsize=10)
    if not panels:  # a reduced run without the paper's tables: say so, not fail
        axes[0].set_axis_off()
        axes[0].text(0.5, 0.5, NO_CELLS, ha="center", va="center", wrap=True)
    run = summary.get("provenance", {}).get("run", {})
    if title is None:
        title = "Every cell at a glance: our accuracy (reading (A)) against the paper's"
        if run.get("reduced"):
            title += f" [reduced run: {run.get('label', '')}]"
    _finish(fig, title, paths, note=NOTE if panels else "")
    return fig
