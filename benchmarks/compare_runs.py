"""Two runs' tables side by side: which accuracies are identical, which moved.

Reads the accuracy tables (``<results>/tables/<table>.csv``, the reading of the
table files: validation-selected (A)) of a run *before* and a run *after* a change,
and prints one row per table x column x method with both means ± std, the
difference of the means, and a verdict:

* ``identical``: the same cell, character for character;
* ``within noise``: the means differ by no more than the larger of the two
  standard deviations over the splits (the spread that validation selection and
  the draw of the labeled rows already give; the paper's own ± column);
* ``MOVED``: further apart than that;
* ``only before`` / ``only after``: a method one run did not run (e.g. a post hoc
  method left out of the default run).

What a performance change must show: tables identical for
every method whose algorithm did not change, and within the selection noise for
those that did, shown side by side.

Usage::

    python benchmarks/compare_runs.py BEFORE_RESULTS AFTER_RESULTS [--markdown]

e.g. ``git worktree add /tmp/before <commit>`` then
``python benchmarks/compare_runs.py /tmp/before/results results``. Exit status 1
when a cell MOVED (or ``--strict`` and anything is not identical).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import pandas as pd

_CELL = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*±\s*(\d+(?:\.\d+)?)\s*$")
#: Table files that are not accuracy tables.
_NOT_ACCURACY = ("_cost", "_best_r", "grid_cost")


def parse_cell(text) -> tuple[float, float]:
    """``(mean, std)`` of a "mean ± std" cell; NaNs for an empty or other cell."""
    m = _CELL.match(str(text)) if isinstance(text, str) else None
    return (float(m.group(1)), float(m.group(2))) if m else (math.nan, math.nan)


def accuracy_columns(frame: pd.DataFrame) -> list[str]:
    """The columns holding our accuracies (not r, the paper's or the difference)."""
    return [
        c
        for c in frame.columns[1:]
        if not (c.endswith(" r") or c.endswith("(paper)") or c.endswith(" diff"))
    ]


def read_tables(results: Path) -> dict[str, pd.DataFrame]:
    """``{table name: table}`` of a run's accuracy tables."""
    out = {}
    for path in sorted((results / "tables").glob("*.csv")):
        if any(tag in path.stem for tag in _NOT_ACCURACY):
            continue
        out[path.stem] = pd.read_csv(path, dtype=str, keep_default_na=False)
    return out


def verdict(before: str | None, after: str | None) -> str:
    """Classify a pair of cells (see the module docstring)."""
    if before is None or before == "":
        return "only after" if after else "empty"
    if after is None or after == "":
        return "only before"
    if before == after:
        return "identical"
    (mb, sb), (ma, sa) = parse_cell(before), parse_cell(after)
    if any(map(math.isnan, (mb, ma))):
        return "MOVED"
    return "within noise" if abs(ma - mb) <= max(sb, sa) + 1e-9 else "MOVED"


def compare(before: Path, after: Path) -> pd.DataFrame:
    """One row per table, column and method of either run, with the verdict."""
    old, new = read_tables(before), read_tables(after)
    rows = []
    for table in sorted(set(old) | set(new)):
        a, b = old.get(table), new.get(table)
        frames = [f for f in (a, b) if f is not None]
        columns = list(dict.fromkeys(c for f in frames for c in accuracy_columns(f)))
        methods = list(dict.fromkeys(m for f in frames for m in f.iloc[:, 0]))
        for col in columns:
            for method in methods:
                cells = []
                for f in (a, b):
                    if f is None or col not in f.columns:
                        cells.append(None)
                        continue
                    hit = f.loc[f.iloc[:, 0] == method, col]
                    cells.append(hit.iloc[0] if len(hit) else None)
                if not any(cells):
                    continue
                mb, ma = parse_cell(cells[0])[0], parse_cell(cells[1])[0]
                rows.append(
                    {
                        "table": table,
                        "column": col,
                        "method": method,
                        "before": cells[0] or "",
                        "after": cells[1] or "",
                        "diff": round(ma - mb, 2)
                        if not (math.isnan(ma) or math.isnan(mb))
                        else math.nan,
                        "verdict": verdict(cells[0], cells[1]),
                    }
                )
    return pd.DataFrame(
        rows,
        columns=["table", "column", "method", "before", "after", "diff", "verdict"],
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("before", type=Path, help="results folder of the old run")
    parser.add_argument("after", type=Path, help="results folder of the new run")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument(
        "--strict", action="store_true", help="fail unless every cell is identical"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="also write the Markdown table, under a heading naming the command, "
        "to this file (e.g. investigations/results/grid_rerun.md)",
    )
    parser.add_argument("--title", default="Tables before and after")
    parser.add_argument(
        "--before-name", help="how --out names the old run (default: its folder)"
    )
    args = parser.parse_args(argv)
    table = compare(args.before, args.after)
    if table.empty:
        print("no accuracy tables found", file=sys.stderr)
        return 2
    counts = table["verdict"].value_counts()
    tally = ", ".join(f"{k}: {v}" for k, v in counts.items())
    markdown = table.to_markdown(index=False, floatfmt="+.2f")
    if args.markdown:
        print(markdown)
    else:
        with pd.option_context("display.width", 200, "display.max_rows", None):
            print(table.to_string(index=False))
    print("\n" + tally)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            f"#### {args.title}\n\n"
            "Command: `python benchmarks/compare_runs.py "
            f"{args.before_name or args.before} {args.after}`; "
            "reading (A); within noise: the means differ by no more than the larger "
            "std.\n\n"
            f"{markdown}\n\nCells: {len(table)} ({tally}).\n"
        )
    bad = counts.get("MOVED", 0) > 0
    if args.strict:
        bad = bad or (table["verdict"] != "identical").any()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
