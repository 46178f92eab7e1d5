"""The pipeline's figures: every panel shows all of its data, the
paper's value is drawn where the paper gives one, and the figures say what their
bands and memory mean.

The first test catches the figures as they are saved (``Figure.savefig`` is
wrapped), so it looks at exactly what the pipeline writes (to ``tmp_path``); the
others take the returned figure and write no file (rendering a PNG takes seconds).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from tcca_core import reporting
from tcca_core.paper import PAPER_TABLES
from tcca_core.protocol import RESULT_COLUMNS
from tcca_core.reporting.figures import _style


def _row(setting, method, split, r, test, *, fit_s=1.0, peak=10.0, shared=False):
    row = dict.fromkeys(RESULT_COLUMNS)
    row.update(setting=setting, method=method, learner="knn", split=split, r=r,
               eps=1.0, val_acc=test, test_acc=test, fit_s=fit_s, peak_mb=peak,
               fit_shared=shared)  # fmt: skip
    return row


def _runs(grids: dict[str, list[int]], methods=("tcca", "cca_bst", "bsf")):
    """Runs of ``methods`` on each setting's own r grid, 2 splits.

    Accuracy grows with r, so the last r of a grid is also the highest point;
    costs grow with r too (memory of the nested CCA is one shared fit's).
    """
    out = []
    for setting, grid in grids.items():
        for split in range(2):
            for method in methods:
                if method == "bsf":
                    out.append(_row(setting, method, split, None, 0.30 + 0.01 * split))
                    continue
                for r in grid:
                    acc = 0.20 + 0.004 * r + 0.01 * split
                    out.append(_row(setting, method, split, r, acc,
                                    fit_s=0.01 * r * (split + 1), peak=2.0 + r,
                                    shared=method == "cca_bst"))  # fmt: skip
    return pd.DataFrame(out)


@pytest.fixture
def saved(monkeypatch):
    """The figures saved while the test runs, in order (one per savefig call)."""
    figures: list[Figure] = []
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        if not figures or figures[-1] is not self:
            figures.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return figures


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def _assert_data_inside(fig):
    """Every panel's data (lines, bands, levels, error bars) lies inside its limits."""
    for ax in _panels(fig):
        data = ax.dataLim
        assert np.isfinite(data.bounds).all(), ax.get_title()
        x0, x1 = sorted(ax.get_xlim())
        y0, y1 = sorted(ax.get_ylim())
        where = f"panel {ax.get_title()!r} {ax.get_ylabel()!r}"
        assert x0 <= data.x0 and data.x1 <= x1, (where, (x0, x1), data.intervalx)
        assert y0 <= data.y0 and data.y1 <= y1, (where, (y0, y1), data.intervaly)


# The mfeat kernel table of the quick run: the second column's grid goes further.
GRIDS = {"n300": [5, 10, 20, 40], "n600": [5, 10, 20, 40, 70, 100]}
COLUMNS = [{"setting": "n300", "label": "N = 300"},
           {"setting": "n600", "label": "N = 600"}]  # fmt: skip


def test_every_panel_shows_all_of_its_data(tmp_path, saved):
    """Grids that differ by column: N = 600's r goes to 100, N = 300's to 40."""
    runs = _runs(GRIDS)
    reporting.plot_accuracy(reporting.accuracy_curves(runs), COLUMNS,
                            [tmp_path / "acc.png"], title="t")  # fmt: skip
    reporting.plot_cost(reporting.cost_by_r(runs), COLUMNS, [tmp_path / "cost.png"],
                        title="t", subtitle="s")  # fmt: skip
    assert len(saved) == 2
    for fig in saved:
        assert len(_panels(fig)) in (2, 4)
        _assert_data_inside(fig)
    # the selected r = 70 (and 100) of N = 600 is inside the drawn range
    n600 = next(ax for ax in _panels(saved[0]) if ax.get_title() == "N = 600")
    xs = np.concatenate([line.get_xdata() for line in n600.get_lines()
                         if len(line.get_xdata()) > 2])  # fmt: skip
    assert 70 in xs and 100 in xs
    lo, hi = n600.get_xlim()
    assert lo <= 0 and hi >= 100


def test_every_panel_shows_all_of_its_data_in_two_rows():
    # more than three columns: a second row of panels, the widest grid last
    grids = {f"s{i}": [5, 10, 20 * (i + 1)] for i in range(5)}
    runs = _runs(grids)
    cols = [{"setting": s, "label": s} for s in grids]
    figures = [
        reporting.plot_accuracy(reporting.accuracy_curves(runs), cols, []),
        reporting.plot_cost(reporting.cost_by_r(runs), cols, []),
    ]
    for fig in figures:
        assert len(_panels(fig)) in (5, 10)
        _assert_data_inside(fig)
        for ax in _panels(fig):  # each panel ends at its own largest r, not 100
            top = max(max(line.get_xdata(), default=0) for line in ax.get_lines())
            assert top in {20, 40, 60, 80, 100} and top < ax.get_xlim()[1] < 1.1 * top


def _texts(fig) -> str:
    """All the text a reader sees: titles, axis labels, legend entries and titles."""
    parts = [fig._suptitle.get_text() if fig._suptitle else ""]
    for legend in fig.legends:
        parts.append(legend.get_title().get_text())
        parts += [t.get_text() for t in legend.get_texts()]
    for ax in _panels(fig):
        parts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        parts += [t.get_text() for t in ax.texts]
    return "\n".join(parts)


def test_figures_say_what_bands_and_memory_mean():
    runs = _runs(GRIDS)
    acc = _texts(reporting.plot_accuracy(reporting.accuracy_curves(runs), COLUMNS, []))
    cost = _texts(reporting.plot_cost(reporting.cost_by_r(runs), COLUMNS, []))
    assert "shaded: ±1 std over splits" in acc
    assert "peak traced memory (tracemalloc, MB)" in cost
    assert "not the process RSS" in cost


PAPER_COLUMNS = [
    {"setting": "l4", "label": "#labeled = 4", "paper": "4"},
    {"setting": "l6", "label": "#labeled = 6", "paper": "6"},
]


def _paper_marks(ax):
    """(x, y, yerr) of the error-bar markers drawn on ``ax`` (the paper's values)."""
    marks = []
    for container in ax.containers:
        line, _caps, (bars,) = container.lines
        x, y = (float(v[0]) for v in line.get_data())
        (lo, hi) = bars.get_segments()[0][:, 1]
        marks.append((x, y, (hi - lo) / 2, line.get_color()))
    return marks


def test_the_papers_value_is_drawn_with_two_std():
    grids = {"l4": [5, 10, 20, 40], "l6": [5, 10, 20, 40]}
    runs = _runs(grids, methods=("tcca", "cca_bst", "bsf"))
    fig = reporting.plot_accuracy(reporting.accuracy_curves(runs), PAPER_COLUMNS, [],
                                  paper="nuswide_linear")  # fmt: skip
    _assert_data_inside(fig)
    texts = _texts(fig)
    assert "paper" in texts and "± 2 std" in texts
    for ax, col in zip(_panels(fig), PAPER_COLUMNS, strict=True):
        table = PAPER_TABLES["nuswide_linear"][col["paper"]]
        marks = _paper_marks(ax)
        # every method the paper reports in this column, at its mean, bars of 2 std
        assert sorted(round(y, 2) for _, y, _, _ in marks) == sorted(
            mean for mean, _ in table.values()
        )
        for _, y, half, _ in marks:
            std = next(s for m, s in table.values() if abs(m - y) < 1e-9)
            assert half == pytest.approx(2 * std)
        # to the right of every r: the paper gives no r for them
        assert min(x for x, *_ in marks) > 40
        # TCCA's mark has TCCA's colour
        tcca = table["tcca"][0]
        colour = next(c for _, y, _, c in marks if abs(y - tcca) < 1e-9)
        assert colour == _style("tcca")[0]
    # same method, same slot in every panel (the x axes are shared)
    xs = [sorted(x for x, *_ in _paper_marks(ax)) for ax in _panels(fig)]
    assert xs[0] == xs[1]
    # the r ticks stop at the last r: the paper's strip has no r
    assert max(_panels(fig)[0].get_xticks()) <= 40


def test_no_paper_no_marks():
    runs = _runs(GRIDS)
    fig = reporting.plot_accuracy(reporting.accuracy_curves(runs), COLUMNS, [],
                                  paper=None)  # fmt: skip
    assert all(not ax.containers for ax in _panels(fig))
    assert "paper" not in _texts(fig).lower()


def test_not_attempted_gets_no_mark():
    cols = [{"setting": "a", "label": "1.3M", "paper": "1.3M"}]
    runs = _runs({"a": [5, 10]}, methods=("tcca", "dse"))
    fig = reporting.plot_accuracy(reporting.accuracy_curves(runs), cols, [],
                                  paper="secstr")  # fmt: skip
    numbers = [
        v for v in PAPER_TABLES["secstr"]["1.3M"].values() if v != "not attempted"
    ]
    assert len(_paper_marks(_panels(fig)[0])) == len(numbers)


def test_the_quick_run_uses_its_own_r_grid_everywhere():
    """quick.yaml says "4 values of r": no setting keeps the full run's own grid.

    The mfeat kernel settings of config.yaml have their own grid (to 100), which
    a reduced run's top-level r_grid does not override; their figure panels went
    to r = 100 while quick.yaml promised r in {5, 10, 20, 40}.
    """
    from snakemake.utils import update_config

    from tcca_core.pipeline.config import load_yaml, r_grid_of, resolve_settings

    root = Path(__file__).resolve().parents[1]
    quick = load_yaml(root / "config" / "quick.yaml")
    cfg = load_yaml(root / "config" / "config.yaml")
    update_config(cfg, quick)  # as Snakemake merges --configfile overlays
    assert quick["r_grid"] == [5, 10, 20, 40]
    assert "4 values of r" in (root / "config" / "quick.yaml").read_text()
    grids = {
        (dataset, setting): r_grid_of(s)
        for dataset, settings in resolve_settings(cfg).items()
        for setting, s in settings.items()
    }
    assert ("mfeat", "kernel2000_6") in grids
    assert {k: g for k, g in grids.items() if g != quick["r_grid"]} == {}


def test_bands_and_the_papers_bars_stay_within_0_and_100():
    """Mean +- std over two splits near 100 % (or 0 %) would reach past it."""
    from matplotlib.figure import Figure

    rows = []
    for split, acc in enumerate((0.999, 0.80)):  # mean 89.95, std 14.1
        for r in (5, 10, 20):
            rows.append(_row("a", "tcca", split, r, acc))
            rows.append(_row("a", "cca_bst", split, r, 0.001 + 0.15 * split))
    curves = reporting.accuracy_curves(pd.DataFrame(rows))
    fig = reporting.plot_accuracy(curves, [{"setting": "a", "label": "a"}], [])
    (ax,) = _panels(fig)
    bands = [c for c in ax.collections if c.get_paths() and c.get_alpha() == 0.12]
    assert len(bands) == 2
    for band in bands:
        ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
        assert ys.min() >= 0.0 and ys.max() <= 100.0
    assert (curves["mean"] + curves["std"]).max() > 100  # the clip did something
    assert (curves["mean"] - curves["std"]).min() < 0
    # the paper's mean +- 2 std, as drawn beside the curves
    from tcca_core.reporting.figures import _draw_paper

    ax = Figure().subplots()
    _draw_paper(
        ax,
        {"tcca": (97.0, 3.0), "cca_bst": (2.0, 1.5)},
        {"tcca": 0, "cca_bst": 1},
        30.0,
        1.0,
    )
    for container in ax.containers:
        _, _, (bars,) = container.lines
        ys = np.concatenate([s[:, 1] for s in bars.get_segments()])
        assert ys.min() >= 0.0 and ys.max() <= 100.0


def _legend_share(fig) -> tuple[float, float]:
    """The legend's share of the figure's area, and its width over the figure's."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    box = fig.legends[0].get_window_extent(fig.canvas.get_renderer())
    area = fig.bbox.width * fig.bbox.height
    return box.width * box.height / area, box.width / fig.bbox.width


def test_a_one_panel_legend_is_compact():
    """Ads: one panel, nine methods and two marks; two legend columns took a third
    of the figure. The legend takes as many columns as fit the figure's width."""
    methods = ("bsf", "cat", "cca_bst", "cca_avg", "cca_ls", "dse", "ssmvd", "tcca",
               "tcca_nc")  # fmt: skip
    runs = _runs({"l100": [5, 10, 20, 40]}, methods)
    cols = [{"setting": "l100", "label": "#labeled = 100", "paper": "100"}]
    fig = reporting.plot_accuracy(reporting.accuracy_curves(runs), cols, [],
                                  title="Ads", paper="ads")  # fmt: skip
    share, width = _legend_share(fig)
    assert share < 0.25 and width <= 1.0
    legend = fig.legends[0]
    texts = legend.get_texts()
    assert len(texts) == len(methods) + 2
    renderer = fig.canvas.get_renderer()
    rows = {round(t.get_window_extent(renderer).y0) for t in texts}
    assert len(rows) <= 3  # at least four columns at this width


def test_a_panel_of_a_shorter_grid_ends_at_its_own_r():
    """mfeat kernels: N = 500 runs to r = 300, N = 2,000 to 100; the N = 2,000
    panels end at 100 (not two-thirds empty), and panels of one grid share x."""
    grids = {f"n500_{k}": [5, 100, 300] for k in (4, 6)}
    grids |= {f"n2000_{k}": [5, 50, 100] for k in (4, 6)}
    runs = _runs(grids)
    cols = [{"setting": s, "label": s} for s in grids]
    for fig in (
        reporting.plot_accuracy(reporting.accuracy_curves(runs), cols, []),
        reporting.plot_cost(reporting.cost_by_r(runs), cols, []),
    ):
        _assert_data_inside(fig)
        for ax in _panels(fig):
            if ax.get_title():  # the memory rows share their time panel's x
                top = 300 if ax.get_title().startswith("n500") else 100
                assert top < ax.get_xlim()[1] <= 1.05 * top, ax.get_title()
        rights = {round(ax.get_xlim()[1], 6) for ax in _panels(fig)}
        assert rights == {309.0, 103.0}
