"""Where a recomputed output differs from the committed one: the first cell, named.

Used by :mod:`.published`: :func:`first_difference` for JSON (the table records of
``summary.json``), :func:`csv_difference` for the tables' CSV files and
:func:`table_difference` for the investigations' outputs (their tables and facts).
Every comparison is exact; a difference names the record (its table, setting,
column, method, r), the field, the committed value and the recomputed one.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["csv_difference", "first_difference", "leaves", "table_difference"]

#: Fields that name a record in a list (the first difference says which record);
#: ``r`` only where the others do not (a curve's point; not a cell's selected r).
_IDENTITY = ("table", "Setting", "setting", "column", "Method", "method")
#: Fields compared first, so that a changed row names the accuracy of reading (A).
_FIRST = ("val", "mean", "std")


def _identity(rec: Any, fields: Sequence[str]) -> tuple | None:
    if not isinstance(rec, Mapping):
        return None
    key = tuple((k, rec[k]) for k in fields if k in rec)
    return key or None


def _named(records: list, fields: Sequence[str]) -> list | None:
    """Name each record by ``fields``; None if one has no name or two the same."""
    keys = [_identity(x, fields) for x in records]
    if None in keys or len(set(keys)) != len(keys):
        return None
    return keys


def _label(key: tuple | None) -> str:
    return "[" + ", ".join(f"{k}={v!r}" for k, v in key or ()) + "]"


def _same(a: Any, b: Any) -> bool:
    """Equal JSON scalars: numbers by value (NaN equals NaN), the rest by type too."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def first_difference(committed: Any, recomputed: Any, where: str = "") -> str | None:
    """Return the first place where two JSON values differ, or None (exactly).

    Records in a list are matched by the fields that name them (table, setting,
    column, method, r) when these are unique, so a difference says which cell.
    """
    if isinstance(committed, Mapping) and isinstance(recomputed, Mapping):
        keys = [*committed, *(k for k in recomputed if k not in committed)]
        for k in sorted(keys, key=lambda k: _FIRST.index(k) if k in _FIRST else 9):
            at = f"{where}.{k}" if where else str(k)
            if k not in recomputed:
                return f"{at}: committed, but not recomputed"
            if k not in committed:
                return f"{at}: recomputed, but not committed"
            found = first_difference(committed[k], recomputed[k], at)
            if found:
                return found
        return None
    if isinstance(committed, list) and isinstance(recomputed, list):
        for fields in (_IDENTITY, (*_IDENTITY, "r")):
            keys_a, keys_b = _named(committed, fields), _named(recomputed, fields)
            if keys_a is not None and keys_b is not None:
                break
        if keys_a is not None and keys_b is not None:
            by_key = dict(zip(keys_b, recomputed, strict=True))
            for key, rec in zip(keys_a, committed, strict=True):
                if key not in by_key:
                    return f"{where}{_label(key)}: committed, but not recomputed"
                found = first_difference(rec, by_key[key], where + _label(key))
                if found:
                    return found
            extra = [k for k in keys_b if k not in set(keys_a)]
            if extra:
                return f"{where}{_label(extra[0])}: recomputed, but not committed"
            if keys_a != keys_b:
                return f"{where}: the same records in another order"
            return None
        for i, (a, b) in enumerate(zip(committed, recomputed, strict=False)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        if len(committed) != len(recomputed):
            return (
                f"{where}: {len(committed)} entries committed, "
                f"{len(recomputed)} recomputed"
            )
        return None
    if _same(committed, recomputed):
        return None
    return f"{where}: committed {committed!r}, recomputed {recomputed!r}"


def leaves(value: Any) -> int:
    """Count the scalar values of a JSON value."""
    if isinstance(value, Mapping):
        return sum(leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(leaves(v) for v in value)
    return 1


def _read_csv(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return [r for r in csv.reader(fh) if r]


def _row_label(header: list[str], row: list[str]) -> str:
    named = [
        row[header.index(c)]
        for c in ("Setting", "setting", "Method", "method", "r")
        if c in header
    ]
    return " / ".join(named or row[:1])


def csv_difference(committed: Path, recomputed: Path) -> tuple[str | None, int]:
    """Return the first differing cell of two CSV tables (or None), cells compared."""
    a, b = _read_csv(committed), _read_csv(recomputed)
    if not a or not b or a[0] != b[0]:
        return (
            f"{committed}: columns {a[0] if a else []} committed, "
            f"{b[0] if b else []} recomputed",
            0,
        )
    header, cells = a[0], 0
    for ra, rb in zip(a[1:], b[1:], strict=False):
        for col, x, y in zip(header, ra, rb, strict=True):
            cells += 1
            if x != y:
                return (
                    f"{committed}: row {_row_label(header, ra)!r}, column {col!r}: "
                    f"committed {x!r}, recomputed {y!r}",
                    cells,
                )
    if len(a) != len(b):
        longer = a if len(a) > len(b) else b
        first = _row_label(header, longer[min(len(a), len(b))])
        return (
            f"{committed}: {len(a) - 1} rows committed, {len(b) - 1} recomputed "
            f"(first unmatched: {first!r})",
            cells,
        )
    return None, cells


def table_difference(committed: dict, recomputed: dict) -> str | None:
    """First difference between two investigation outputs' tables and facts."""
    a, b = committed.get("tables", []), recomputed.get("tables", [])
    for i, (ta, tb) in enumerate(zip(a, b, strict=False)):
        name = ta.get("heading") or f"table {i + 1}"
        if ta.get("columns") != tb.get("columns"):
            return (
                f"{name!r}: columns {ta.get('columns')} committed, "
                f"{tb.get('columns')} recomputed"
            )
        for ra, rb in zip(ta["rows"], tb["rows"], strict=False):
            for col, x, y in zip(ta["columns"], ra, rb, strict=False):
                if x != y:
                    row = " / ".join(ra[:2])
                    return (
                        f"{name!r}, row {row!r}, column {col!r}: committed {x!r}, "
                        f"recomputed {y!r}"
                    )
        if len(ta["rows"]) != len(tb["rows"]):
            return (
                f"{name!r}: {len(ta['rows'])} rows committed, "
                f"{len(tb['rows'])} recomputed"
            )
    if len(a) != len(b):
        return f"{len(a)} tables committed, {len(b)} recomputed"
    facts = committed.get("facts", {}), recomputed.get("facts", {})
    return first_difference(*facts, "facts")
