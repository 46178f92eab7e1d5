"""Accuracy, time and memory against r: the paper's figures, one panel per column."""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from .._io import atomic_write
from ..paper import PAPER_TABLES
from ..registry import METHODS
from .tables import METHOD_LABELS, _ordered, _paper_cell, _rank, method_label

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


#: The possible range of an accuracy (%): bands and bars are clipped to it, since
#: mean +- std over a few splits can pass 100 (or 0) where no accuracy can.
ACCURACY_RANGE = (0.0, 100.0)


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
            lo, hi = ACCURACY_RANGE  # a band is an accuracy's ± std
            ax.fill_between(g["r"], (g[value] - g[band]).clip(lower=lo),
                            (g[value] + g[band]).clip(upper=hi), color=color,
                            alpha=0.12, linewidth=0)  # fmt: skip
    elif len(g):
        ax.axhline(float(g[value].iloc[0]), color=color,
                   linestyle=line if line != "-" else "--", linewidth=1.3,
                   label=label)  # fmt: skip


def _figure(n_panels: int, rows_per_panel: int, height: float, r_max=None):
    """Make a bare Figure with the panels in blocks of at most three columns.

    No pyplot: no global state, no GUI backend. A panel shares its x axis with
    the panels of the same largest r (``r_max``, one per panel; None: all alike),
    so that panels of one grid compare at a glance and a panel of a shorter grid
    is not left mostly empty (mfeat's N = 2,000 panels end at r = 100, the
    N = 500 ones at 300); row k of every panel shares its y axis with row k of
    the others. Returns (fig, [axes of panel i, top to bottom]).
    """
    from matplotlib.figure import Figure

    ncols = min(n_panels, _MAX_COLS)
    blocks = -(-n_panels // ncols)
    fig = Figure(
        figsize=(max(4.4 * ncols, 8.0), height * rows_per_panel * blocks + 1.4),
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
    keys = list(r_max) if r_max is not None else [0.0] * len(panels)
    leaders: dict = {}
    for axes, key in zip(panels, keys, strict=True):
        leader = leaders.setdefault(key, axes[0])
        for k, ax in enumerate(axes):
            if ax is not leader:
                ax.sharex(leader)
            if ax is not first[k]:
                ax.sharey(first[k])
    return fig, panels


def _plain(text) -> str:
    """Return ``text`` for matplotlib as plain text: ``$`` never starts mathtext."""
    return str(text).replace("$", r"\$")


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
    width = max(30, int(fig.get_figwidth() * _TITLE_CHARS_PER_INCH))
    # the note (how to read the figure) heads the legend, where the layout keeps it
    legend = _compact_legend(
        fig,
        [handles[k] for k in ordered],
        ordered,
        title=textwrap.fill(note, int(width * 1.2)) if note else None,
    )
    if note:
        legend.get_title().set_color("0.3")
    if title:
        wrapped = "\n".join(
            textwrap.fill(_plain(line), width) for line in title.split("\n") if line
        )
        fig.suptitle(wrapped, fontsize=10)
    for path in paths:
        # No creation date or software version: rerunning gives identical files.
        meta = (
            {"Software": None} if str(path).endswith(".png") else {"CreationDate": None}
        )
        with atomic_write(path) as part:
            fig.savefig(part, format=Path(path).suffix[1:], dpi=150, metadata=meta)


def _compact_legend(fig, handles, labels, title=None):
    """Put the legend under the panels in as many columns as fit the figure.

    The columns are measured, not guessed from the labels' lengths: the widest
    legend (fewest rows) narrower than the figure is kept, so that it neither
    overflows the figure (cutting off its first and last entries) nor stacks the
    entries in a tall column (Ads: two columns took a third of the figure).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    room = 0.98 * fig.bbox.width
    kw = dict(loc="outside lower center", fontsize=9, frameon=False,
              title=title, title_fontsize=8, columnspacing=1.2,
              handlelength=2.4)  # fmt: skip
    for ncols in range(max(len(labels), 1), 1, -1):
        legend = fig.legend(handles, labels, ncols=ncols, **kw)
        if legend.get_window_extent(renderer).width <= room:
            return legend
        legend.remove()
    return fig.legend(handles, labels, ncols=1, **kw)


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


def _x_axis(panels, r_max: Sequence[float], strip: Sequence[float] = ()) -> None:
    """Set each panel's x axis once every panel is drawn: 0 to its largest r.

    ``r_max``: per panel (the panels of one value share their axis, see
    :func:`_figure`). Setting it while drawing (``set_xlim(left=0)``) froze the
    range at the first panel's data and clipped the wider grids of the panels
    after it. ``strip``: per panel, room right of the last r for the paper's
    marks; the r ticks then stop at the last r, since those marks have no r.
    """
    from matplotlib.ticker import MaxNLocator

    strip = list(strip) or [0.0] * len(panels)
    for axes, top, room in zip(panels, r_max, strip, strict=True):
        top = top if top > 0 else 1.0
        axes[0].set_xlim(0, top * 1.03 + room)
        if room:
            ticks = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], integer=True)
            axes[0].set_xticks([t for t in ticks.tick_values(0, top) if 0 <= t <= top])


def _r_max(sub: pd.DataFrame) -> float:
    """Return the largest r of a panel's rows (0 without any)."""
    return float(sub["r"].max()) if len(sub) and sub["r"].notna().any() else 0.0


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
        lo, hi = ACCURACY_RANGE
        yerr = [[min(2 * std, mean - lo)], [min(2 * std, hi - mean)]]
        ax.errorbar([x0 + slots[method] * step], [mean], yerr=yerr, fmt="D",
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

    subs = [_with_same_as(curves, col["setting"], same_as) for col in columns]
    r_max = [_r_max(sub) for sub in subs]
    fig, panels = _figure(len(columns), 1, 3.4, r_max)
    numbers = _paper_numbers(paper, columns)
    slots = {m: i for i, m in enumerate(_ordered(m for n in numbers for m in n))}
    steps = [0.035 * max(top, 1.0) for top in r_max]
    for (ax,), col, sub, ref, top, step in zip(
        panels, columns, subs, numbers, r_max, steps, strict=True
    ):
        for method in _ordered(sub["method"]):
            _draw(ax, method, sub[sub["method"] == method], "mean", band="std")
        _draw_paper(ax, ref, slots, max(top, 1.0) * 1.03 + 2 * step, step)
        ax.set_xlabel("dimension of the common subspace r")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(_plain(col["label"]), fontsize=10)
        ax.grid(True, alpha=0.3)
    _x_axis(
        panels, r_max, [(len(slots) + 2) * step if slots else 0.0 for step in steps]
    )
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
    subs = [_with_same_as(costs, col["setting"], same_as) for col in columns]
    r_max = [_r_max(sub) for sub in subs]
    fig, panels = _figure(len(columns), 2, 2.6, r_max)
    for (ax_t, ax_m), col, sub in zip(panels, columns, subs, strict=True):
        for method in _ordered(sub["method"]):
            g = sub[sub["method"] == method]
            shared = bool(g["shared_fit"].any()) if "shared_fit" in g else False
            _draw(ax_t, method, g, "fit_s", level=_nested(method))
            _draw(ax_m, method, g, "peak_mb", level=_nested(method) or shared)
        ax_t.set_yscale("log", nonpositive="mask")
        ax_t.set_title(_plain(col["label"]), fontsize=10)
        ax_t.set_ylabel("fit time (s, log)")
        ax_m.set_ylabel("peak traced memory (tracemalloc, MB)")
        ax_m.set_xlabel("dimension of the common subspace r")
        for ax in (ax_t, ax_m):
            ax.grid(True, alpha=0.3)
    _x_axis(panels, r_max)
    _finish(fig, "\n".join(t for t in (title, subtitle) if t), paths, note=COST_NOTE)
    return fig
