"""Equal tuning: eps chosen on validation for every linear method.

The paper fixes the ridge eps = 1e-2 on SecStr and Ads for every CCA-based method
(taken from Foster et al.); the published tables follow it. Does TCCA still beat the
CCA family when each method gets the same chance, eps chosen on validation from one
shared grid jointly with r? The fits come from the pipeline's own fit jobs:

* ``results/`` (the published run) holds eps = 1e-2;
* ``results/equal_tuning/`` (overlay ``investigations/configs/equal_tuning.yaml``)
  holds the grid's other values, 1e-3, 1e-1, 1, 10 and 100, on the same splits and
  seeds.

This script joins the two per cell (refusing an eps present in both), selects
(eps, r) per split on validation exactly as the tables do
(:func:`tcca_core.protocol.select`, reading (A)), and prints the equal-tuning table
beside the paper-protocol one. BSF, CAT, DSE and SSMVD keep their own parameters and
are the published cells. Then the paper's claims are re-judged on the equal-tuning
cells with the same checks as REPRODUCTION.md (:data:`tcca_core.reproduction.CLAIMS`).
A column where one of the tuned paper methods was not run is left out of the
verdicts (and said so).

Over 30 draws: 5 splits give the central comparison, TCCA against each
CCA method under equal tuning, no interval. Where the draws have been fitted
(``investigations/configs/equal_tuning_draws30.yaml``: the other eps values on draws
5-29; eps = 1e-2 there comes from ``results/draws30/``, the variance investigation's
run), :func:`tuned_draws` selects (eps, r) on validation per draw exactly as above,
and :func:`draw_pairs` gives, per cell, TCCA minus each CCA method over the same
draws: the paired t interval, the paired t test, Holm's adjustment over the family
of those comparisons and simultaneous (Bonferroni) intervals (the table of
``variance.py``, :func:`variance.family_table`). Without those runs the table is left
out and the output says so. Commands::

    snakemake --cores 2 --configfile investigations/configs/equal_tuning.yaml -- \\
        results/equal_tuning/fits/ads/l100/{cca_bst,cca_avg,cca_ls,tcca}/splitall.csv
    snakemake --cores 2 --configfile investigations/configs/equal_tuning_draws30.yaml \\
        -- results/equal_tuning_draws30/fits/ads/l100/tcca/split{5..29}.csv ...
    python investigations/equal_tuning.py

Every number comes from the fit files (in a clone, the rows committed from them,
``results/rows/`` and ``results/<run>/rows/``, which the script rewrites from the runs'
fit files) and results/summary.json; nothing is typed by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from _common import bundle_rows, published_parser, read_fits, save
from variance import _GRID_POINT, check_same_splits, family_table, shown

from tcca_core.protocol import accuracy_by_r, select, select_per_split
from tcca_core.registry import METHODS
from tcca_core.reporting import format_pm
from tcca_core.reproduction import CLAIMS
from tcca_core.reproduction.claims import claim_cost
from tcca_core.stats import paired_interval

#: The tables of the paper's linear, eps-regularized experiments.
TABLES = ("secstr", "ads")
#: Methods whose eps the overlay tunes (the paper's and the post hoc variant).
TUNED = ("cca_bst", "cca_avg", "cca_ls", "tcca", "tcca_nc")
#: The claims that depend on the accuracies (the cost claim does not change with
#: the tables' numbers and is judged in REPRODUCTION.md only).
REJUDGED = tuple(i for i, c in enumerate(CLAIMS) if c[2] is not claim_cost)
#: Over 30 draws: (table, dataset, setting), and the comparisons (A - B) per cell.
DRAW_CELLS = (("secstr", "secstr", "84k"), ("ads", "ads", "l100"))
DRAW_PAIRS = tuple(("tcca", b) for b in ("cca_bst", "cca_avg", "cca_ls"))
#: The heading of the 30-draw table (REPRODUCTION.md's prose looks for it).
DRAWS_HEADING = "Equal tuning over 30 draws: TCCA against each CCA method"


def joined(published: Path, overlay: Path, dataset: str, setting: str, method: str):
    """Published rows and the overlay's, one eps grid; None if the overlay lacks it.

    None too while the overlay has only some of the splits (a run in pieces).
    """
    cell = f"{dataset}/{setting}/{method}"
    base, more = read_fits(published, cell), read_fits(overlay, cell)
    if base is None or more is None:
        return None
    both = set(np.round(base["eps"].dropna(), 12)) & set(
        np.round(more["eps"].dropna(), 12)
    )
    if both:
        raise SystemExit(
            f"{dataset}/{setting}/{method}: eps {sorted(both)} is in both runs; the "
            "overlay must fit only the values the published run lacks"
        )
    splits, done = set(base["split"]), set(more["split"])
    if not done <= splits:
        raise SystemExit(f"{dataset}/{setting}/{method}: the runs' splits differ")
    if done != splits:  # a run cut short: not a cell yet
        return None
    return pd.concat([base, more], ignore_index=True)


def _eps_text(per_split: pd.DataFrame) -> str:
    return ", ".join(f"{e:g}" for e in per_split.sort_values("split")["eps"])


def tuned_cell(rows: pd.DataFrame) -> dict:
    """(A) on the joined rows: mean, std (%), eps per split, and the r curve."""
    sel = select(rows, by=["method"]).iloc[0]
    per_split = select_per_split(rows, by=["method"])
    curve = accuracy_by_r(rows, by=["method"])
    return {
        "mean": 100 * float(sel["acc_val_mean"]),
        "std": 100 * float(sel["acc_val_std"]),
        "n_splits": int(sel["n_splits"]),
        "eps": _eps_text(per_split),
        "r": str(sel["r_val"]),
        "curve": [
            (int(r), 100 * float(a))
            for r, a in zip(curve["r"], curve["test_acc_mean"], strict=True)
            if pd.notna(r)
        ],
    }


def build(published: Path, overlay: Path) -> tuple[pd.DataFrame, dict, list[str]]:
    """The side-by-side table, the equal-tuning summary and the incomplete columns."""
    summary = json.loads((published / "summary.json").read_text())
    rows, tables, incomplete = [], {}, []
    for table in TABLES:
        t = summary["tables"].get(table)
        if t is None:
            continue
        records, curves = [], []
        for col in t["columns"]:
            setting, label = col["setting"], col["label"]
            cells = {}
            for rec in t["accuracy"]["val"]:
                if rec["column"] != label or rec.get("mean") is None:
                    continue
                m = rec["method"]
                cell = None
                if m in TUNED:
                    data = joined(published, overlay, t["dataset"], setting, m)
                    cell = None if data is None else tuned_cell(data)
                cells[m] = (rec, cell)
            missing = [m for m, (_, c) in cells.items() if m in TUNED and c is None]
            paper_missing = [m for m in missing if METHODS[m].paper]
            if paper_missing:
                incomplete.append(
                    f"{table}, {label} (not run: "
                    + ", ".join(METHODS[m].label for m in paper_missing)
                    + ")"
                )
            col_records, col_curves = [], []
            for m, (rec, cell) in cells.items():
                tuned = m in TUNED
                eq = cell if tuned else {"mean": rec["mean"], "std": rec["std"]}
                change = None if eq is None else eq["mean"] - rec["mean"]
                rows.append(
                    {
                        "table": table,
                        "column": label,
                        "method": METHODS[m].label
                        + ("" if METHODS[m].paper else " (post hoc)"),
                        "paper": format_pm(rec.get("paper_mean"), rec.get("paper_std")),
                        "paper protocol (eps = 1e-2)": format_pm(
                            rec["mean"], rec["std"]
                        ),
                        "equal tuning": "not run"
                        if eq is None
                        else format_pm(eq["mean"], eq["std"]),
                        "change": "" if change is None else f"{change:+.2f}",
                        "eps chosen per split": ("not run" if eq is None else eq["eps"])
                        if tuned
                        else "own parameters (published)",
                    }
                )
                if eq is None:
                    continue
                col_records.append(
                    {**rec, "mean": eq["mean"], "std": eq["std"], "diff": None}
                )
                src = (
                    cell["curve"]
                    if tuned
                    else [
                        (int(c["r"]), c["mean"])
                        for c in t.get("curves", [])
                        if c["setting"] == setting and c["method"] == m
                    ]
                )
                col_curves += [
                    {"setting": setting, "method": m, "r": r, "mean": a}
                    for r, a in src
                    if a is not None and not math.isnan(a)
                ]
            if not paper_missing:  # else the column is out of the verdicts
                records += col_records
                curves += col_curves
        tables[table] = {
            "columns": t["columns"],
            "accuracy": {"val": records},
            "curves": curves,
        }
    return pd.DataFrame(rows), {"tables": tables}, incomplete


def restricted(summary: dict) -> dict:
    """The published summary cut to the tables re-judged here."""
    return {
        "tables": {t: summary["tables"][t] for t in TABLES if t in summary["tables"]}
    }


def verdicts(published_summary: dict, equal: dict) -> pd.DataFrame:
    rows = []
    for i in REJUDGED:
        claim, _, check = CLAIMS[i]
        a, b = check(restricted(published_summary)), check(equal)
        rows.append(
            {
                "claim (SecStr and Ads)": claim,
                "paper protocol": a.status,
                "equal tuning": b.status,
                "equal tuning: evidence": "; ".join(b.evidence),
            }
        )
    return pd.DataFrame(rows)


def statements(table: pd.DataFrame) -> list[str]:
    """Per column: TCCA against the best of the CCA family and the best method."""
    out = []
    family = {METHODS[m].label for m in ("cca_bst", "cca_avg", "cca_ls")}
    for (tab, col), g in table.groupby(["table", "column"], sort=False):
        vals = {
            r["method"]: float(r["equal tuning"].split(" ")[0])
            for _, r in g.iterrows()
            if r["equal tuning"] not in ("not run", "n/a")
        }
        tcca = vals.get(METHODS["tcca"].label)
        fam = {k: v for k, v in vals.items() if k in family}
        if tcca is None or len(fam) < len(family):
            out.append(f"- {tab}, {col}: not all of TCCA and the CCA family were run.")
            continue
        best_fam = max(fam, key=fam.get)
        paper = {k: v for k, v in vals.items() if "post hoc" not in k}
        best = max(paper, key=paper.get)
        out.append(
            f"- {tab}, {col}: TCCA {tcca:.2f} against the best of the CCA family, "
            f"{best_fam} {fam[best_fam]:.2f}: {tcca - fam[best_fam]:+.2f} points; "
            f"the best of the paper's methods under equal tuning is {best} "
            f"({paper[best]:.2f})."
        )
    return out


def tuned_draws(
    runs: dict[str, Path], dataset: str, setting: str, method: str
) -> tuple[pd.Series | None, int]:
    """Test accuracy (%) per draw at the (eps, r) validation picks from all of eps.

    ``runs``: ``published`` (eps = 1e-2, the first draws), ``draws`` (eps = 1e-2,
    the later draws), ``overlay`` (the other eps, the first draws) and
    ``overlay_draws`` (the other eps, the later draws). The first draws are the
    published run's splits (their count, n); the later ones are read from draw n on,
    so that a run holding all draws is not counted twice. Returns the series (index:
    draw) of the draws that have every eps of the grid, and how many draws were left
    out for lacking some; None when a run has no rows for the cell.
    """
    n_pub = check_same_splits(runs["published"], runs["draws"], dataset, setting)
    check_same_splits(runs["published"], runs["overlay_draws"], dataset, setting)
    cell = f"{dataset}/{setting}/{method}"
    parts = {k: read_fits(folder, cell) for k, folder in runs.items()}
    if any(v is None for v in parts.values()):
        return None, 0
    first = {"published", "overlay"}
    frames = {
        k: df[df["split"] < n_pub] if k in first else df[df["split"] >= n_pub]
        for k, df in parts.items()
    }
    eps_a = set(np.round(pd.concat([frames["published"], frames["draws"]])["eps"], 12))
    eps_b = set(
        np.round(pd.concat([frames["overlay"], frames["overlay_draws"]])["eps"], 12)
    )
    if eps_a & eps_b:
        raise SystemExit(
            f"{cell}: eps {sorted(eps_a & eps_b)} is in both the published draws and "
            "the overlay's; the overlay must fit only the values the published lack"
        )
    rows = pd.concat(frames.values(), ignore_index=True)
    rows = rows.drop_duplicates([c for c in _GRID_POINT if c in rows.columns])
    grid = set(np.round(rows["eps"], 12))
    full = rows.groupby("split")["eps"].agg(lambda e: set(np.round(e, 12)) == grid)
    left_out = int((~full).sum())
    rows = rows[rows["split"].isin(full[full].index)]
    if rows.empty:
        return None, left_out
    sel = select_per_split(rows, by=["method"])
    acc = pd.Series(100 * sel["test_acc"].to_numpy(), index=sel["split"].to_numpy())
    return acc, left_out


def draw_pairs(runs: dict[str, Path]) -> tuple[pd.DataFrame, list[str]]:
    """TCCA minus each CCA method per draw under equal tuning, with their tests.

    One row per cell and comparison (:data:`DRAW_PAIRS`) over the draws both
    methods have; Holm's adjustment is over all of the table's comparisons. Also
    returns a note per method that had draws left out (an eps not yet fitted).
    """
    rows, intervals, notes = [], [], []
    if not (runs["draws"].is_dir() and runs["overlay_draws"].is_dir()):
        return family_table(rows, intervals), notes
    summary = json.loads((runs["published"] / "summary.json").read_text())
    for table, dataset, setting in DRAW_CELLS:
        t = summary["tables"].get(table)
        if t is None:
            continue
        label = next(c["label"] for c in t["columns"] if c["setting"] == setting)
        acc = {}
        for m in {m for pair in DRAW_PAIRS for m in pair}:
            series, left_out = tuned_draws(runs, dataset, setting, m)
            if left_out:
                notes.append(
                    f"{table} {label}, {METHODS[m].label}: {left_out} draws without "
                    "every eps, left out"
                )
            if series is not None:
                acc[m] = series
        for a, b in DRAW_PAIRS:
            if a not in acc or b not in acc:
                continue
            common = acc[a].index.intersection(acc[b].index)
            if len(common) < 2:
                continue
            rows.append(
                {
                    "cell": f"{table} {label}",
                    "A - B": f"{METHODS[a].label} - {METHODS[b].label}",
                }
            )
            intervals.append(
                paired_interval(
                    acc[a].loc[common].to_numpy(), acc[b].loc[common].to_numpy()
                )
            )
    return family_table(rows, intervals), sorted(notes)


def draws_text(pairs: pd.DataFrame, notes: list[str]) -> str:
    """The 30-draw section of the output ("" when no draw beyond 5 was fitted)."""
    if pairs.empty or int(pairs["_n"].max()) <= 5:
        return (
            "Over 30 draws: not run yet (the overlay "
            "`investigations/configs/equal_tuning_draws30.yaml`, module docstring).\n"
        )
    m = len(pairs)
    return (
        f"#### {DRAWS_HEADING}\n\n"
        "Equal tuning as above, per draw: eps and r chosen on validation from the "
        "whole eps grid; draws 0-4 are the published splits. Paired differences "
        "over the same draws; p: the paired t test; Holm p: Holm's adjustment over "
        f"the {m} comparisons of this table; simultaneous 95 % CI: Bonferroni, "
        f"covering all {m} together; after Holm: the direction where Holm p < 0.05. "
        "Every draw takes its rows from one fixed pool (the test sets overlap), so "
        "the intervals speak of the draw of the labeled rows on this data set, not of "
        "new data sets.\n\n"
        + shown(pairs).to_markdown(index=False, disable_numparse=True)
        + "\n"
        + ("".join(f"\n- {n}." for n in notes) + "\n" if notes else "")
    )


def main(argv=None) -> int:
    ap = published_parser(__doc__, "equal_tuning")
    ap.add_argument("--overlay", default=None, help="default: <published>/equal_tuning")
    args = ap.parse_args(argv)
    published = Path(args.published)
    overlay = Path(args.overlay) if args.overlay else published / "equal_tuning"
    table, equal, incomplete = build(published, overlay)
    runs = {
        "published": published,
        "draws": published / "draws30",
        "overlay": overlay,
        "overlay_draws": published / "equal_tuning_draws30",
    }
    pairs, notes = draw_pairs(runs)
    summary = json.loads((published / "summary.json").read_text())
    verdict = verdicts(summary, equal)
    shown = table.drop(columns=["table"]).rename(columns={"column": "cell"})
    shown["cell"] = table["table"] + " " + table["column"]
    text = (
        "#### Equal tuning: eps on validation for every linear method\n\n"
        "Command: `python investigations/equal_tuning.py`, after the overlay's fit "
        "jobs (module docstring). Reading (A); eps from one shared grid (1e-3, 1e-2, "
        "1e-1, 1, 10, 100) chosen on validation jointly with r, per split; 5 splits, "
        "the paper's r grid. BSF, CAT, DSE and SSMVD keep their own parameters.\n\n"
        + shown.to_markdown(index=False, disable_numparse=True)
        + "\n\n"
        + "\n".join(statements(table))
        + "\n\n"
        + (
            "Left out of the verdicts (a tuned method not run): "
            + "; ".join(incomplete)
            + ".\n\n"
            if incomplete
            else ""
        )
        + verdict.to_markdown(index=False, disable_numparse=True)
        + "\n\n"
        + draws_text(pairs, notes)
    )
    save(text, args.out)
    bundle_rows(published, *runs.values())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
