"""The at-a-glance figure: marks, intervals and axes."""

import math

import numpy as np
import pytest

from tcca_core.reporting import glance

#: Student t quantiles t(0.975, df), from tables (not from scipy, which the
#: figure uses): df = 2 and df = 4.
T975 = {2: 4.302652729911275, 4: 2.7764451051977987}


def _rec(column, method, mean, std, n, paper=(None, None)):
    return {
        "column": column,
        "setting": column.lower(),
        "method": method,
        "mean": mean,
        "std": std,
        "n_splits": n,
        "r": "",
        "paper_mean": paper[0],
        "paper_std": paper[1],
    }


def _summary():
    secstr = [
        _rec("A", "bsf", 58.0, 1.7, 5, (57.5, 1.9)),
        _rec("A", "cca_bst", 66.2, 0.8, 5, (58.8, 3.0)),
        _rec("A", "tcca", 57.5, 1.4, 5, (62.4, 1.3)),
        _rec("A", "tcca_nc", 65.1, 1.0, 5),  # post hoc: no paper number, no mark
        _rec("B", "cca_bst", 65.9, 1.1, 3, (60.0, 2.5)),
        _rec("B", "dse", None, None, 3, (None, None)),  # not attempted
        _rec("B", "tcca", 61.9, 0.8, 3, (64.4, 1.7)),
    ]
    ads = [
        _rec("C", "cat", 90.1, 1.2, 5, (91.1, 1.7)),
        _rec("C", "tcca", 89.1, 1.1, 5, (94.6, 0.3)),
    ]
    mfeat = [_rec("D", "tcca", 89.3, 2.3, 5)]  # a table without the paper's numbers

    def table(title, paper, cols, recs):
        return {
            "title": title,
            "paper_table": paper,
            "columns": [{"label": c, "setting": c.lower()} for c in cols],
            "accuracy": {"val": recs},
        }

    return {
        "tables": {
            # not in the paper's order: the figure puts SecStr first
            "ads": table("Accuracy (%) at the best dimension, Ads, x", "ads", "C", ads),
            "mfeat": table("mfeat", None, "D", mfeat),
            "secstr": table(
                "Accuracy (%) at the best dimension, SecStr, x", "secstr", "AB", secstr
            ),
        }
    }


EQUAL = {
    "tables": [
        {
            "columns": ["cell", "method", "paper", "equal tuning", "change"],
            "rows": [
                ["secstr A", "CCA (BST)", "", "66.57 ± 0.46", "+0.36"],
                ["secstr A", "TCCA", "", "59.85 ± 0.66", "+2.36"],
                ["secstr A", "TCCA (uncentered) (post hoc)", "", "65.44 ± 1.13", ""],
                ["secstr B", "TCCA", "", "not run", ""],
                ["ads C", "TCCA", "", "93.06 ± 0.81", "+3.92"],
            ],
        },
        {"columns": ["claim", "paper protocol"], "rows": [["x", "confirmed"]]},
    ]
}


def _expected(summary):
    """(panel title, method label) -> (mean, std, n) of every cell with a paper
    number, read straight from the summary."""
    from tcca_core.registry import METHODS

    out = {}
    for t in summary["tables"].values():
        subject = t["title"].split(", ")[1] if t["paper_table"] else None
        for r in t["accuracy"]["val"]:
            if r["paper_mean"] is None or r["mean"] is None:
                continue
            key = (f"{subject}: {r['column']}", METHODS[r["method"]].label)
            out[key] = (r["mean"], r["std"], r["n_splits"], r["paper_mean"],
                        r["paper_std"])  # fmt: skip
    return out


def _marks(ax, label):
    """(row label, mean, lo, hi) of the errorbar container with that legend label."""
    ticks = dict(zip(ax.get_yticks(), [t.get_text() for t in ax.get_yticklabels()]))
    for c in ax.containers:
        if c.get_label() != label:
            continue
        line, _, (bars,) = c.lines
        out = []
        for x, y, seg in zip(line.get_xdata(), line.get_ydata(), bars.get_segments()):
            row = ticks[min(ticks, key=lambda t: abs(t - y))]
            out.append((row, x, seg[:, 0].min(), seg[:, 0].max()))
        return out
    return []


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("glance")
    paths = [folder / "g.png", folder / "g.pdf"]
    fig = glance.plot_at_a_glance(_summary(), EQUAL, paths)
    return fig, paths


def test_every_cell_with_a_paper_number_gets_a_mark(drawn):
    fig, _ = drawn
    axes = [ax for ax in fig.axes if ax.get_visible()]
    expected = _expected(_summary())
    # one panel per column with paper numbers, SecStr first (the paper's order)
    assert [ax.get_title() for ax in axes] == ["SecStr: A", "SecStr: B", "Ads: C"]
    seen = set()
    for ax in axes:
        marks = _marks(ax, glance.PROTOCOL_LABEL)
        rows = {m[0] for m in marks}
        assert len(rows) == len(marks)  # one mark per row
        seen |= {(ax.get_title(), r) for r in rows}
        # the paper's band: one bar per row, mean - 2 std to mean + 2 std
        (bars,) = [c for c in ax.containers if c.get_label() == glance.PAPER_BAND_LABEL]
        assert len(bars) == len(marks)
        for bar in bars:
            x0, w = bar.get_x(), bar.get_width()
            y = bar.get_y() + bar.get_height() / 2
            ticks = dict(zip(ax.get_yticks(), ax.get_yticklabels()))
            row = ticks[min(ticks, key=lambda t: abs(t - y))].get_text()
            _, _, _, pm, ps = expected[(ax.get_title(), row)]
            assert (x0, x0 + w) == pytest.approx((pm - 2 * ps, pm + 2 * ps))
    assert seen == set(expected)
    # equal tuning: a mark where its table has a number ("not run" has none)
    eq = {(ax.get_title(), m[0]) for ax in axes for m in _marks(ax, glance.EQUAL_LABEL)}
    assert eq == {("SecStr: A", "CCA (BST)"), ("SecStr: A", "TCCA"), ("Ads: C", "TCCA")}


def test_intervals_are_student_t_intervals(drawn):
    fig, _ = drawn
    expected = _expected(_summary())
    for ax in fig.axes:
        for row, x, lo, hi in _marks(ax, glance.PROTOCOL_LABEL):
            mean, std, n, _, _ = expected[(ax.get_title(), row)]
            half = T975[n - 1] * std / math.sqrt(n)
            assert x == pytest.approx(mean)
            assert (lo, hi) == pytest.approx((mean - half, mean + half), abs=1e-9)
    # equal tuning: its shown numbers, the cell's number of splits (5 on Ads)
    ((row, x, lo, hi),) = _marks(fig.axes[2], glance.EQUAL_LABEL)
    half = T975[4] * 0.81 / math.sqrt(5)
    assert (row, x, lo, hi) == pytest.approx(
        ("TCCA", 93.06, 93.06 - half, 93.06 + half)
    )
    assert glance.t_interval(1.0, 2.0, 1) == (1.0, 1.0)  # one split: no interval


def test_axis_limits_contain_all_data(drawn):
    fig, _ = drawn
    for ax in fig.axes:
        left, right = ax.get_xlim()
        xs = []
        for label in (glance.PROTOCOL_LABEL, glance.EQUAL_LABEL):
            xs += [v for m in _marks(ax, label) for v in m[1:]]
        for c in ax.containers:
            if c.get_label() == glance.PAPER_BAND_LABEL:
                xs += [b.get_x() for b in c] + [b.get_x() + b.get_width() for b in c]
        assert xs and left < min(xs) and max(xs) < right
        bottom, top = ax.get_ylim()
        assert bottom < min(ax.get_yticks()) and max(ax.get_yticks()) < top


def test_files_are_deterministic_and_input_checked(drawn, tmp_path):
    _, paths = drawn
    again = [tmp_path / "g.png", tmp_path / "g.pdf"]
    glance.plot_at_a_glance(_summary(), EQUAL, again)
    for a, b in zip(paths, again):
        assert a.read_bytes() == b.read_bytes()
    assert again[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # no equal tuning: only our marks under the paper's protocol
    cells = glance.glance_cells(_summary(), None)
    assert cells and all(c["equal"] is None for c in cells)
    assert np.isfinite([c["ours"]["lo"] for c in cells]).all()
    summary = _summary()
    for t in summary["tables"].values():
        for r in t["accuracy"]["val"]:
            r["paper_mean"] = None
    # a run without paper numbers: a figure that says so, not a failed job
    fig = glance.plot_at_a_glance(summary, EQUAL, [tmp_path / "x.png"])
    assert [t.get_text() for t in fig.axes[0].texts] == [glance.NO_CELLS]
    assert (tmp_path / "x.png").is_file()


def test_intervals_and_bands_stay_within_0_and_100():
    """Two splits: t(0.975, 1) = 12.7 standard errors run far past 100 %; the
    drawn interval, the paper's band and the axis stop at the possible range."""
    recs = [
        _rec("A", "tcca", 97.0, 4.0, 2, (98.5, 1.5)),  # t interval 97 +- 35.9
        _rec("A", "cca_bst", 3.0, 4.0, 2, (2.0, 1.5)),  # and below 0
    ]
    summary = {
        "tables": {
            "secstr": {
                "title": "Accuracy (%) at the best dimension, SecStr, x",
                "paper_table": "secstr",
                "columns": [{"label": "A", "setting": "a"}],
                "accuracy": {"val": recs},
            }
        }
    }
    assert glance.t_interval(97.0, 4.0, 2)[1] > 130  # the statistic itself
    fig = glance.plot_at_a_glance(summary, None, [])
    (ax,) = [a for a in fig.axes if a.get_visible()]
    marks = _marks(ax, glance.PROTOCOL_LABEL)
    assert {m[0] for m in marks} == {"TCCA", "CCA (BST)"}
    for _, x, lo, hi in marks:
        assert 0.0 <= lo <= x <= hi <= 100.0
    (bars,) = [c for c in ax.containers if c.get_label() == glance.PAPER_BAND_LABEL]
    for bar in bars:
        assert 0.0 <= bar.get_x() and bar.get_x() + bar.get_width() <= 100.0
    left, right = ax.get_xlim()
    assert -1.0 <= left < 0.0 and 100.0 < right <= 101.0
