"""The pipeline's figures (issue #33): every panel shows all of its data, the
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
    """The issue's case: the N = 600 panel's r goes to 100, N = 300's to 40."""
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
        for ax in _panels(fig):  # the largest r of the table on every panel
            assert ax.get_xlim()[1] >= 100


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
