"""What REPRODUCTION.md reads of ``results/summary.json``: cells, curves, deviations.

The paper's tables come first (:data:`TABLE_ORDER`); a cell deviates when our (A)
mean lies outside the paper's mean +- :data:`N_STD` paper stds. The method groups
that the claims name come from the registry's roles, families and groups.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..registry import METHODS, methods_where

TABLE_ORDER = (
    "secstr",
    "ads",
    "nuswide_linear",
    "nuswide_kernel",
    "mfeat_linear",
    "mfeat_kernel",
)
#: How many of the paper's standard deviations count as "reproduced".
N_STD = 2.0
#: The paper's linear and kernel multi-view reduction methods (the registry's methods
#: of the paper that have a dimension r), and its CCA-based linear baselines.
_DR_LINEAR = methods_where(role="paper", family="linear", has_r=True)
_DR_KERNEL = methods_where(role="paper", family="kernel", has_r=True)
_CCA_FAMILY = methods_where(role="paper", family="linear", group="cca")


def _post_hoc(method: str) -> bool:
    """Whether a method was added after test results were seen (role post_hoc)."""
    spec = METHODS.get(method)
    return spec is not None and spec.role == "post_hoc"


def _of_paper(method: str) -> bool:
    """Whether the paper's claims read a method (role paper; unknown names too)."""
    spec = METHODS.get(method)
    return spec is None or spec.role == "paper"


def _records(summary: Mapping, table: str, reading: str = "val") -> list[dict]:
    t = summary.get("tables", {}).get(table)
    return [] if t is None else list(t["accuracy"].get(reading, []))


def _cell(summary, table, column, method, reading="val") -> dict | None:
    for rec in _records(summary, table, reading):
        if rec["column"] == column and rec["method"] == method:
            return rec if rec.get("mean") is not None else None
    return None


def _columns(summary: Mapping, table: str) -> list[str]:
    t = summary.get("tables", {}).get(table)
    return [] if t is None else [c["label"] for c in t["columns"]]


def _curve(summary, table, setting, method) -> list[tuple[int, float]]:
    t = summary.get("tables", {}).get(table) or {}
    pts = [
        (int(c["r"]), float(c["mean"]))
        for c in t.get("curves", [])
        if c["setting"] == setting
        and c["method"] == method
        and c["mean"] is not None
        and not math.isnan(c["mean"])
    ]
    return sorted(pts)


def _setting_of(summary, table, column) -> str | None:
    t = summary.get("tables", {}).get(table) or {}
    for c in t.get("columns", []):
        if c["label"] == column:
            return c["setting"]
    return None


def outside_paper(rec: Mapping, n_std: float = N_STD) -> bool | None:
    """Return True when our mean lies outside the paper's mean +- n_std paper stds.

    None when there is nothing to compare (no paper number, or no result).
    """
    if rec.get("mean") is None or rec.get("paper_mean") is None:
        return None
    std = rec.get("paper_std") or 0.0
    return abs(rec["mean"] - rec["paper_mean"]) > n_std * std


def deviations(summary: Mapping, reading: str = "val") -> list[dict]:
    """Every cell (table, column, method) outside the paper's mean +- 2 std."""
    out = []
    for table in TABLE_ORDER:
        for rec in _records(summary, table, reading):
            if outside_paper(rec):
                std = rec.get("paper_std") or float("nan")
                out.append(
                    {
                        "table": table,
                        "column": rec["column"],
                        "method": rec["method"],
                        "mean": rec["mean"],
                        "paper_mean": rec["paper_mean"],
                        "paper_std": rec.get("paper_std"),
                        "diff": rec["mean"] - rec["paper_mean"],
                        "paper_stds": (rec["mean"] - rec["paper_mean"]) / std,
                    }
                )
    return out
