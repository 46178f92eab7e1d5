"""Our cells against the paper's: the 2-std flag, Welch's test and Hedges' g.

The flag of the tables (:func:`~.summary.outside_paper`) reads only the paper's spread.
Beside it, each cell with a paper number gets Welch's two-sample t test of
our splits against the paper's 5 (each with its own std), Holm's adjustment over the
family of cells compared, and Hedges' g, the difference in pooled stds. The tests
are :mod:`tcca_core.stats`; this module only picks the cells and counts the verdicts.

Both the paper's stds and ours are read as sample stds (ddof = 1), as the paper does
not say which it reports (docs/deviations.md, D-31).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..reporting import format_pm, method_label
from ..stats import hedges_g, holm, welch
from .summary import TABLE_ORDER, _of_paper, _records, outside_paper

#: The paper's splits per cell ("five random choices of the labeled instances").
PAPER_SPLITS = 5
#: Significance level of every test REPRODUCTION.md reports (family-wise after Holm).
ALPHA = 0.05
#: Equivalence margin of "comparable" (accuracy points): an open decision of ours
#: (docs/deviations.md, D-36), about the smallest gap the paper's "A beats B" claims
#: rest on; stated here once and read by the claims and the investigations.
MARGIN = 1.0


def p_text(p: float | None) -> str:
    """Format a p-value as the tables show it: four decimals, or below their reach."""
    if p is None or math.isnan(p):
        return ""
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def against_paper(summary: Mapping) -> list[dict]:
    """Every cell of the paper's methods with our (A) mean and the paper's.

    Per cell: the 2-std flag, Welch's t, df and p (ours over ``n_splits`` splits,
    the paper's over :data:`PAPER_SPLITS`), Holm's p over the family and Hedges' g.
    A cell that copies another (``same_as``: SecStr 1.3M's BSF and CAT are the 84K
    cells, as in the paper) is one test: it is left out of the family and shows its
    source's adjusted p. ``family`` tells which cells are in the family.
    """
    cells = []
    for table in TABLE_ORDER:
        for rec in _records(summary, table):
            if rec.get("mean") is None or rec.get("paper_mean") is None:
                continue
            if not _of_paper(rec["method"]):
                continue
            n = int(rec.get("n_splits") or 0)
            cell = {
                "table": table,
                "column": rec["column"],
                "setting": rec.get("setting"),
                "method": rec["method"],
                "mean": rec["mean"],
                "std": rec.get("std") or 0.0,
                "n": n,
                "paper_mean": rec["paper_mean"],
                "paper_std": rec.get("paper_std") or 0.0,
                "diff": rec["mean"] - rec["paper_mean"],
                "outside": bool(outside_paper(rec)),
                "source": (table, rec.get("result_of_setting"), rec["method"]),
                "family": rec.get("result_of_setting", rec.get("setting"))
                == rec.get("setting"),
                "t": None,
                "df": None,
                "p": None,
                "p_holm": None,
                "g": None,
            }
            if n >= 2:
                args = (cell["mean"], cell["std"], n, cell["paper_mean"])
                w = welch(*args, cell["paper_std"], PAPER_SPLITS)
                cell.update(t=w.t, df=w.df, p=w.p)
                cell["g"] = hedges_g(*args, cell["paper_std"], PAPER_SPLITS)
            else:
                cell["family"] = False
            cells.append(cell)
    fam = [c for c in cells if c["family"]]
    for c, ph in zip(fam, holm([c["p"] for c in fam]), strict=True):
        c["p_holm"] = float(ph)
    sources = {(c["table"], c["setting"], c["method"]): c for c in fam}
    for c in cells:
        if not c["family"] and c["source"] in sources:
            c["p_holm"] = sources[c["source"]]["p_holm"]
    return cells


def _label(c: Mapping) -> str:
    return f"{c['table']} {c['column']} {method_label(c['method'])}"


def _significant(c: Mapping, key: str) -> bool:
    return c[key] is not None and c[key] < ALPHA


def paper_tests(summary: Mapping) -> dict:
    """Return what the template says of :func:`against_paper`: counts, lists, rows."""
    cells = against_paper(summary)
    fam = [c for c in cells if c["family"]]

    def listed(cs) -> str:
        return "; ".join(
            f"{_label(c)} ({c['diff']:+.2f} points, Welch p = {p_text(c['p'])}, "
            f"Holm p = {p_text(c['p_holm'])}, g = {c['g']:+.2f})"
            for c in cs
        )

    within_flagged = [c for c in fam if not c["outside"] and _significant(c, "p")]
    outside_not = [c for c in fam if c["outside"] and not _significant(c, "p")]
    return {
        "n_cells": len(fam),
        "n_copies": len(cells) - len(fam),
        "n_outside": sum(c["outside"] for c in fam),
        "n_welch": sum(_significant(c, "p") for c in fam),
        "n_holm": sum(_significant(c, "p_holm") for c in fam),
        "n_outside_holm": sum(c["outside"] and _significant(c, "p_holm") for c in fam),
        "within_but_welch": listed(within_flagged),
        "outside_not_welch": listed(outside_not),
        "alpha": f"{ALPHA:g}",
        "paper_splits": PAPER_SPLITS,
        "rows": [_row(c) for c in cells],
    }


def _row(c: Mapping) -> list[str]:
    paper_stds = c["diff"] / c["paper_std"] if c["paper_std"] else math.nan
    holm_p = p_text(c["p_holm"])
    if not c["family"] and holm_p:
        holm_p += " (the 84K cell)" if c["table"] == "secstr" else " (its source)"
    return [
        c["table"],
        c["column"],
        method_label(c["method"]),
        f"{c['mean']:.2f}",
        format_pm(c["paper_mean"], c["paper_std"]),
        f"{c['diff']:+.2f}",
        f"{paper_stds:+.1f}",
        "**outside**" if c["outside"] else "within",
        "" if c["t"] is None else f"{c['t']:+.2f} ({c['df']:.1f})",
        p_text(c["p"]),
        holm_p,
        "" if c["g"] is None else f"{c['g']:+.2f}",
    ]


#: The columns of :func:`paper_tests`' rows.
PAPER_TEST_HEADER = [
    "table",
    "column",
    "method",
    "ours (A)",
    "paper",
    "diff",
    "paper stds",
    "2 std",
    "Welch t (df)",
    "p",
    "Holm p",
    "Hedges' g",
]


def cell_tests(summary: Mapping) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(table, column, method) -> ("p (Holm p)", "g") for the tables' columns."""
    out = {}
    for c in against_paper(summary):
        if c["p"] is None:
            continue
        out[(c["table"], c["column"], c["method"])] = (
            f"{p_text(c['p'])} ({p_text(c['p_holm'])})",
            f"{c['g']:+.2f}",
        )
    return out
