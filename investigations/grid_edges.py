"""Grid edges: the cells past the ends of their grids.

**Ranks below the paper's grid.** On SecStr the CCA family picks r = 5, the smallest
rank of the paper's grid, in every split; nothing said what r < 5 gives. The cells
whose validation picks the smallest rank of their grid in some split (read from
``results/summary.json``: reading (A), r per split) are refitted through the
pipeline's own fit jobs with r = 1, 2, 3, 4 added (overlay
``investigations/configs/grid_edges.yaml``: a reduced run in ``results/grid_edges/``,
the same seeds and splits). Per cell, r is chosen on validation per split exactly as
the tables choose it (:func:`tcca_core.protocol.select`), once on the paper's grid and
once on the extended grid (the paper's plus 1-4). The paper-grid rows are the
published fit rows (``results/fits/``, in a clone ``results/rows/``) when they are
there, else this run's own rows of the paper's ranks, which must give the published
picks and (A) (checked; a cell whose published pick lies outside the run's ranks is
not judged).

**eps past the equal-tuning grid.** Under equal tuning (``investigations/
equal_tuning.py``) eps is chosen on validation from 1e-3 ... 1e2; a split that picks
an end of that grid is listed, and where the overlay
``investigations/configs/grid_edges_eps.yaml`` (``results/grid_edges_eps/``) fitted
values beyond it, (eps, r) is chosen again on the joined rows (published 1e-2, the
equal-tuning values, the edge values).

Then the verdicts REPRODUCTION.md draws are drawn again with the moved cells: the
paper's claims (the same checks, :data:`tcca_core.reproduction.CLAIMS`; the cost
claim does not read accuracies and is left out) and, per cell, whether our (A) lies
outside the paper's mean +- 2 std (:func:`tcca_core.reproduction.outside_paper`).
Commands::

    snakemake --cores 1 --configfile investigations/configs/grid_edges.yaml -- \\
        results/grid_edges/fits/secstr/84k/cca_bst/splitall.csv ...
    python investigations/grid_edges.py

Every number comes from the fit files (in a clone, the rows committed from them,
``results/rows/`` and ``results/<run>/rows/``, which the script rewrites from the runs'
fit files), results/summary.json and investigations/results/equal_tuning.json;
nothing is typed by hand.
"""

from __future__ import annotations

import copy
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from _common import RESULTS, bundle_rows, path_fitted, published_parser, read_fits, save

from tcca_core._io import atomic_write_text
from tcca_core.protocol import accuracy_by_r, select, select_per_split
from tcca_core.registry import METHODS
from tcca_core.reporting import format_pm
from tcca_core.reproduction import CLAIMS, outside_paper
from tcca_core.reproduction.claims import claim_cost

#: The (A) of a cell rebuilt from fit rows must match the summary's to this (points):
#: the summary stores it to 1e-10, and a different pick moves it by far more.
MATCH = 1e-6
#: The claims that read accuracies (the cost claim reads fit time and memory).
ACCURACY_CLAIMS = [c for c in CLAIMS if c[2] is not claim_cost]
NOT_RUN = "not run"
CONFIGS = Path(__file__).resolve().parent / "configs"


# ------------------------------------------------------------------ which cells


def _picks(rec: Mapping) -> list[int]:
    return [int(v) for v in str(rec.get("r") or "").split("/") if v.strip()]


def _grid(table: Mapping, setting: str, method: str) -> list[int]:
    """The ranks of a cell's published curve: its grid, cut at the method's r_max."""
    return sorted(
        int(c["r"])
        for c in table.get("curves", [])
        if c["setting"] == setting and c["method"] == method and c["r"] is not None
    )


def _curve_of(table: Mapping, setting: str, method: str) -> dict[int, float]:
    """The summary's mean test accuracy (%) per rank of a cell."""
    return {
        int(c["r"]): float(c["mean"])
        for c in table.get("curves", [])
        if c["setting"] == setting
        and c["method"] == method
        and c["r"] is not None
        and c["mean"] is not None
    }


def edge_cells(summary: Mapping) -> list[dict]:
    """Every cell whose validation picks an end of its grid in some split.

    One dict per (table, column, method): ``table``, ``dataset``, ``setting``,
    ``column``, ``method``, ``picks`` (r per split), ``grid`` (the published
    ranks), ``edge`` ("lowest" or "highest"), ``splits`` (how many picked it) and
    ``rec`` (the summary's record, reading (A)).
    """
    out = []
    for name, t in summary.get("tables", {}).items():
        for rec in t["accuracy"].get("val", []):
            picks = _picks(rec)
            if not picks or rec.get("mean") is None:
                continue
            if rec.get("result_of_setting", rec["setting"]) != rec["setting"]:
                continue  # another setting's result (same_as): judged there
            grid = _grid(t, rec["setting"], rec["method"])
            if not grid:
                continue
            for edge, r in (("lowest", grid[0]), ("highest", grid[-1])):
                n = sum(p == r for p in picks)
                if n:
                    out.append(
                        {
                            "table": name,
                            "dataset": t["dataset"],
                            "setting": rec["setting"],
                            "column": rec["column"],
                            "method": rec["method"],
                            "picks": picks,
                            "grid": grid,
                            "edge": edge,
                            "splits": n,
                            "rec": rec,
                        }
                    )
    return out


def fit_targets(cells: list[dict], overlay: Path) -> list[str]:
    """The overlay's fit files for the cells that pick the lowest rank of their grid.

    One per (dataset, setting, method), in the order of ``cells``; the post hoc
    methods' files need ``--config post_hoc=true`` as well.
    """
    out = []
    for c in cells:
        if c["edge"] == "lowest":
            path = overlay / "fits" / c["dataset"] / c["setting"] / c["method"]
            target = os.path.relpath(path / "splitall.csv")
            if target not in out:
                out.append(target)
    return out


# ------------------------------------------------------------ one cell, two grids


def _selected(rows: pd.DataFrame) -> dict:
    sel = select(rows, by=["method"]).iloc[0]
    per_split = select_per_split(rows, by=["method"]).sort_values("split")
    return {
        "mean": 100 * float(sel["acc_val_mean"]),
        "std": 100 * float(sel["acc_val_std"]),
        "n_splits": int(sel["n_splits"]),
        "picks": [int(r) for r in per_split["r"]],
    }


def extend_cell(
    run: pd.DataFrame | None,
    published: pd.DataFrame | None,
    picks: list[int],
    grid: list[int],
    mean: float,
    curve: Mapping[int, float] | None = None,
) -> dict:
    """(A) on the paper's grid and on the grid extended by the run's other ranks.

    Parameters
    ----------
    run : the overlay's fit rows of the cell (None: not run).
    published : the published fit rows (None: not on this machine).
    picks, grid, mean : the summary's r per split, ranks and (A) mean (%).
    curve : the summary's mean test accuracy (%) per rank of the cell, if any: the
        run's ranks of the paper's grid must give the same numbers (all splits).

    Returns a dict with ``status`` ("judged", "not run" or "not judged"), and when
    judged ``paper`` and ``extended`` (mean, std, n_splits, picks), ``new_ranks``,
    ``curve`` (new rank -> mean test accuracy over splits, %) and ``source`` (where
    the paper-grid rows came from). Not judged when the rows do not give the
    published cell back (not judged: another run, e.g. other splits).

    A cell fitted as a warm-started rank path (its params say ``warm_start``, as
    TCCA's do) fits the run's ranks of the paper's grid from the ranks below it, so
    they are not the published fits and are not compared with them: such a cell is
    judged on the published fits plus the run's new ranks (its path from r = 1), and
    not without the published fits.
    """
    if run is None:
        return {"status": NOT_RUN}
    path = path_fitted(run)
    ranks = set(run["r"].dropna().astype(int))
    new = sorted(ranks - set(grid))
    # the mean test accuracy at a new rank needs no selection across ranks: it is
    # known from the run alone, judged or not
    here = accuracy_by_r(run, by=["method"])
    here_curve = {
        int(r): 100 * float(a)
        for r, a in zip(here["r"], here["test_acc_mean"], strict=True)
        if pd.notna(r)
    }
    out: dict = {
        "new_ranks": new,
        "curve": {r: a for r, a in here_curve.items() if r in new},
    }
    off = [
        r for r, a in (curve or {}).items() if r in here_curve and not path
        and abs(here_curve[r] - a) > MATCH
    ]  # fmt: skip
    if off:  # other data, splits or code than the published run's
        r, more = off[0], len(off) - 1
        return {
            **out,
            "curve": {},
            "status": "not judged",
            "why": f"mean test accuracy at r = {r}: {here_curve[r]:.2f} here, "
            f"{curve[r]:.2f} published"
            + (f", and {more} more ranks differ" if more else "")
            + ": not the same run",
        }
    if published is not None:
        base, source = published, "published fits"
        if path:
            source += " (a rank path: the new ranks from the run's own, from r = 1)"
    elif path:
        why = "a rank path, whose ranks of the paper's grid follow the new ones"
        return {**out, "status": "not judged", "why": why + "; needs results/fits/"}
    elif set(grid) <= ranks or set(picks) <= ranks:
        base = run[run["r"].isin(grid)]
        source = "this run's ranks of the paper's grid"
    else:
        return {**out, "status": "not judged", "why": _partial(run, picks, grid, new)}
    paper = _selected(base)
    if paper["picks"] != picks or abs(paper["mean"] - mean) > MATCH:
        # other data, splits or code than the published run's: nothing to compare,
        # and its curve is not the published one's either
        return {
            **out,
            "curve": {},
            "status": "not judged",
            "why": f"{source} give r = {', '.join(map(str, paper['picks']))}, (A) "
            f"{paper['mean']:.2f}, not the published cell: not the same run",
        }
    extended = pd.concat([base, run[run["r"].isin(new)]], ignore_index=True)
    return {
        **out,
        "status": "judged",
        "source": source,
        "paper": paper,
        "extended": _selected(extended),
    }


def _partial(run: pd.DataFrame, picks: list[int], grid: list[int], new: list[int]):
    """Why a cell is not judged, and what the splits whose pick is here say."""
    ranks = set(run["r"].dropna().astype(int))
    ids = sorted(set(run["split"]))
    missing = [(ids[i], p) for i, p in enumerate(picks) if p not in ranks]
    text = "published pick " + ", ".join(f"r = {p} (split {s})" for s, p in missing)
    text += " not in this run; needs results/fits/"
    known = [(ids[i], p) for i, p in enumerate(picks) if p in ranks]
    if not known:
        return text
    rows = run[run["split"].isin([s for s, _ in known])]
    here = _selected(rows[rows["r"].isin(grid)])["picks"]
    if here != [p for _, p in known]:
        return f"{text}; the other splits give r = {here}: not the same run"
    ext = _selected(rows[rows["r"].isin(grid) | rows["r"].isin(new)])["picks"]
    won = sum(r in new for r in ext)
    return (
        f"{text}; in the {len(known)} other splits a rank below the grid wins "
        f"validation in {won} (r = {', '.join(map(str, ext))})"
    )


# ------------------------------------------------------------------- verdicts


def moved_summary(summary: Mapping, cells: list[dict]) -> dict:
    """The summary with each judged cell's (A) on the extended grid, and the new
    ranks of every run cell on its curve (a curve's point needs no selection)."""
    out = copy.deepcopy(dict(summary))
    for cell in cells:
        res = cell.get("result", {})
        t = out["tables"][cell["table"]]
        ext = res.get("extended") if res.get("status") == "judged" else None
        for rec in t["accuracy"]["val"] if ext else []:
            if rec["setting"] == cell["setting"] and rec["method"] == cell["method"]:
                rec.update(mean=ext["mean"], std=ext["std"])
                rec["r"] = "/".join(map(str, ext["picks"]))
                if rec.get("paper_mean") is not None:
                    rec["diff"] = ext["mean"] - rec["paper_mean"]
        t["curves"] = t.get("curves", []) + [
            {"setting": cell["setting"], "method": cell["method"], "r": r, "mean": a}
            for r, a in res.get("curve", {}).items()
        ]
    return out


def verdicts(
    before: Mapping, after: Mapping, names=("paper's grid", "extended grid")
) -> pd.DataFrame:
    """The paper's accuracy claims on both summaries (REPRODUCTION.md's checks)."""
    rows = []
    for claim, _, check in ACCURACY_CLAIMS:
        a, b = check(before), check(after)
        rows.append(
            {
                "claim": claim,
                names[0]: a.status,
                names[1]: b.status,
                "moves": "yes" if a.status != b.status else "no",
                f"{names[1]}: evidence": "; ".join(b.evidence),
            }
        )
    return pd.DataFrame(rows)


def _flag(rec: Mapping, mean: float | None = None) -> str:
    rec = dict(rec) if mean is None else {**rec, "mean": mean}
    out = outside_paper(rec)
    return "" if out is None else ("outside" if out else "within")


def cell_rows(cells: list[dict]) -> list[dict]:
    """The table's rows: one per edge cell."""
    rows = []
    for cell in cells:
        rec, res = cell["rec"], cell["result"]
        label = METHODS[cell["method"]].label
        if not METHODS[cell["method"]].paper:
            label += " (post hoc)"
        end = cell["grid"][0] if cell["edge"] == "lowest" else cell["grid"][-1]
        row = {
            "cell": f"{cell['table']} {cell['column']}: {label}",
            "edge": f"r = {end} ({cell['edge']}) in {cell['splits']} of "
            f"{len(cell['picks'])} splits",
            "paper": format_pm(rec.get("paper_mean"), rec.get("paper_std")),
            "paper grid (A)": format_pm(rec["mean"], rec["std"]),
            "r per split": ", ".join(map(str, cell["picks"])),
        }
        if res["status"] != "judged":
            row["extended grid (A)"] = res["status"] + (
                f" ({res['why']})" if "why" in res else ""
            )
            rows.append(row)
            continue
        ext = res["extended"]
        row.update(
            {
                "extended grid (A)": format_pm(ext["mean"], ext["std"]),
                "r per split (extended)": ", ".join(map(str, ext["picks"])),
                "change": f"{ext['mean'] - res['paper']['mean']:+.2f}",
                "vs the paper's mean ± 2 std": (
                    f"{_flag(rec)} -> {_flag(rec, ext['mean'])}" if _flag(rec) else ""
                ),
            }
        )
        rows.append(row)
    return rows


def summary_lines(cells: list[dict], verdict: pd.DataFrame) -> list[str]:
    """What the tables say in a few lines (the prose quotes them)."""
    low = [c for c in cells if c["edge"] == "lowest"]
    judged = [c for c in low if c["result"]["status"] == "judged"]
    other = [
        f"{c['table']} {c['column']}: {METHODS[c['method']].label} "
        f"({c['result']['status']})"
        for c in low
        if c["result"]["status"] != "judged"
    ]
    lines = [
        f"- Cells at the lowest r of their grid: {len(low)}; judged on the extended "
        f"grid: {len(judged)}. Not judged: {', '.join(other) or 'none'}."
    ]
    if judged:
        below = [
            (c, sum(p < c["grid"][0] for p in c["result"]["extended"]["picks"]))
            for c in judged
        ]
        n_splits = sum(len(c["picks"]) for c in judged)
        # the change against the (A) rebuilt from the same rows: exactly 0 where no
        # split moves (the summary's copy differs in the last digits)
        change = [
            (c["result"]["extended"]["mean"] - c["result"]["paper"]["mean"], c)
            for c in judged
        ]
        d, big = max(change, key=lambda x: abs(x[0]))
        crossed = [
            c
            for c in judged
            if _flag(c["rec"])
            and _flag(c["rec"]) != _flag(c["rec"], c["result"]["extended"]["mean"])
        ]
        lines.append(
            f"- Splits that pick an r below the paper's grid: "
            f"{sum(n for _, n in below)} of {n_splits}, in "
            f"{sum(1 for _, n in below if n)} of {len(judged)} cells; largest change: "
            f"{d:+.2f} points ({big['table']} {big['column']}: "
            f"{METHODS[big['method']].label})."
        )
        lines.append(
            f"- Cells that cross the paper's mean ± 2 std: {len(crossed)}"
            + (
                " ("
                + ", ".join(
                    f"{c['table']} {c['column']}: {METHODS[c['method']].label}"
                    for c in crossed
                )
                + ")"
                if crossed
                else ""
            )
            + "."
        )
    high = [c for c in cells if c["edge"] == "highest"]
    lines.append(
        f"- Cells at the highest r of their grid: {len(high)}"
        + (
            " ("
            + ", ".join(
                f"{c['table']} {c['column']}: {METHODS[c['method']].label}"
                for c in high
            )
            + ")"
            if high
            else ""
        )
        + "."
    )
    lines.append(
        f"- Verdicts of the paper's claims that move: "
        f"{int((verdict['moves'] == 'yes').sum())} of {len(verdict)}."
    )
    return lines


# ------------------------------------------------------- eps past equal tuning


def eps_grid(overlay_config: Path, published_eps: float = 1e-2) -> list[float]:
    """The shared eps grid of equal tuning: its overlay's values and the published."""
    cfg = yaml.safe_load(Path(overlay_config).read_text(encoding="utf-8")) or {}
    values = {published_eps}
    for methods in (cfg.get("method_sets") or {}).values():
        for params in methods.values():
            values |= {float(e) for e in (params or {}).get("eps", [])}
    return sorted(values)


def equal_cells(equal: Mapping, grid: list[float]) -> list[dict]:
    """The tuned cells of the equal-tuning table, with the eps edges they pick.

    ``equal``: the data of investigations/results/equal_tuning.json. One dict per
    tuned cell: ``cell`` (table and column), ``method`` (label), ``shown`` (its
    equal-tuning (A) as written), ``eps`` (per split) and ``edges`` (edge ->
    splits that pick it: eps = the grid's smallest or largest value).
    """
    out = []
    for table in equal.get("tables", []):
        cols = table["columns"]
        if "eps chosen per split" not in cols:
            continue
        i = cols.index("eps chosen per split")
        for row in table["rows"]:
            try:
                eps = [float(v) for v in row[i].split(",")]
            except ValueError:  # "own parameters (published)", "not run"
                continue
            edges = {
                f"eps = {value:g}": sum(math.isclose(e, value) for e in eps)
                for value in (grid[0], grid[-1])
            }
            out.append(
                {
                    "cell": row[0],
                    "method": row[cols.index("method")],
                    "shown": row[cols.index("equal tuning")],
                    "eps": eps,
                    "edges": {k: n for k, n in edges.items() if n},
                }
            )
    return out


def joined_eps(*parts: pd.DataFrame | None) -> pd.DataFrame | None:
    """Rows of one cell from several runs, each holding other eps values.

    None when a run lacks the cell or holds other splits (a run cut short).
    """
    if any(p is None for p in parts):
        return None
    seen: set[float] = set()
    splits = None
    for p in parts:
        assert p is not None
        values = set(np.round(p["eps"].dropna(), 12))
        if seen & values:
            raise SystemExit(f"eps {sorted(seen & values)} is in two runs of a cell")
        seen |= values
        s = set(p["split"])
        if splits is not None and s != splits:
            return None
        splits = s
    return pd.concat([p for p in parts if p is not None], ignore_index=True)


def _tuned(rows: pd.DataFrame) -> dict:
    out = _selected(rows)
    per_split = select_per_split(rows, by=["method"]).sort_values("split")
    out["eps"] = [float(e) for e in per_split["eps"]]
    ranks = sorted(set(rows["r"].dropna().astype(int)))
    out["r_edges"] = {
        f"r = {r}": sum(p == r for p in out["picks"]) for r in (ranks[0], ranks[-1])
    }
    out["r_edges"] = {k: n for k, n in out["r_edges"].items() if n}
    curve = accuracy_by_r(rows, by=["method"])
    out["curve"] = {
        int(r): 100 * float(a)
        for r, a in zip(curve["r"], curve["test_acc_mean"], strict=True)
        if pd.notna(r)
    }
    return out


def eps_results(
    cells: list[dict], published: Path, equal_run: Path, edge_run: Path
) -> None:
    """Fill in each equal-tuning cell from the fit rows where they are here.

    ``tuned``: (A) on the published and equal-tuning rows, with its r per split and
    the ends of the r grid it picks (the r picks are in no committed file);
    ``extended``: the same with the rows of ``edge_run`` joined (eps past the grid).
    """
    by_label = {spec.label: name for name, spec in METHODS.items()}
    summary = json.loads((published / "summary.json").read_text())
    where = {
        f"{name} {col['label']}": (t["dataset"], col["setting"])
        for name, t in summary.get("tables", {}).items()
        for col in t["columns"]
    }
    for cell in cells:
        method = by_label.get(cell["method"].removesuffix(" (post hoc)"))
        if method is None or cell["cell"] not in where:
            continue
        dataset, setting = where[cell["cell"]]
        name = f"{dataset}/{setting}/{method}"
        base = [read_fits(published, name), read_fits(equal_run, name)]
        rows = joined_eps(*base)
        if rows is None:
            continue
        cell["key"] = (dataset, setting, method)
        cell["tuned"] = _tuned(rows)
        more = joined_eps(*base, read_fits(edge_run, name))
        if more is not None:
            cell["extended"] = _tuned(more)


def eps_rows(cells: list[dict]) -> list[dict]:
    """The eps table's rows: the cells at an end of the eps or of the r grid."""
    rows = []
    for c in cells:
        r_edges = c.get("tuned", {}).get("r_edges", {})
        if not c["edges"] and not r_edges:
            continue
        n = len(c["eps"])
        ext = c.get("extended")
        rows.append(
            {
                "cell": f"{c['cell']}: {c['method']}",
                "eps at an end": "; ".join(
                    f"{k} in {v} of {n} splits" for k, v in c["edges"].items()
                ),
                "r at an end": "; ".join(
                    f"{k} in {v} of {n} splits" for k, v in r_edges.items()
                )
                if "tuned" in c
                else "(fits not here)",
                "equal tuning (A)": c["shown"],
                "eps grid extended (A)": NOT_RUN
                if ext is None
                else format_pm(ext["mean"], ext["std"]),
                "eps per split (extended)": ""
                if ext is None
                else ", ".join(f"{e:g}" for e in ext["eps"]),
            }
        )
    return rows


def eps_verdicts(cells: list[dict], published: Path, equal_run: Path):
    """The claims under equal tuning, before and after the eps extension.

    None when no cell was extended (nothing to re-judge). Uses the equal-tuning
    investigation's own summary of its cells (equal_tuning.build).
    """
    extended = [c for c in cells if "extended" in c]
    if not extended:
        return None
    import equal_tuning  # the sibling script: its summary of the tuned cells

    _, before, _ = equal_tuning.build(published, equal_run)
    after = copy.deepcopy(before)
    for c in extended:
        dataset, setting, method = c["key"]
        for t in after["tables"].values():
            for rec in t["accuracy"]["val"]:
                if rec["setting"] == setting and rec["method"] == method:
                    rec.update(mean=c["extended"]["mean"], std=c["extended"]["std"])
            if "curves" in t:
                t["curves"] = [
                    p
                    for p in t["curves"]
                    if (p["setting"], p["method"]) != (setting, method)
                ] + [
                    {"setting": setting, "method": method, "r": r, "mean": a}
                    for r, a in c["extended"]["curve"].items()
                ]
    return verdicts(before, after, ("equal tuning", "eps grid extended"))


# ------------------------------------------------------------------------ main


def build(published: Path, overlay: Path) -> tuple[list[dict], dict, pd.DataFrame]:
    """The edge cells with their results, the moved summary and the verdicts."""
    summary = json.loads((published / "summary.json").read_text())
    cells = edge_cells(summary)
    for cell in cells:
        if cell["edge"] != "lowest":
            cell["result"] = {"status": "not extended (no r above the grid)"}
            continue
        name = f"{cell['dataset']}/{cell['setting']}/{cell['method']}"
        cell["result"] = extend_cell(
            read_fits(overlay, name),
            read_fits(published, name),
            cell["picks"],
            cell["grid"],
            cell["rec"]["mean"],
            _curve_of(
                summary["tables"][cell["table"]], cell["setting"], cell["method"]
            ),
        )
    after = moved_summary(summary, cells)
    return cells, after, verdicts(summary, after)


def _markdown(rows: list[dict]) -> str:
    return pd.DataFrame(rows).fillna("").to_markdown(index=False, disable_numparse=True)


def _data(cells: list[dict]) -> list[dict]:
    """The cells' numbers for grid_edges.json (the summary record left out)."""
    return [{k: v for k, v in c.items() if k != "rec"} for c in cells]


def main(argv=None) -> int:
    ap = published_parser(__doc__, "grid_edges")
    ap.add_argument("--overlay", default=None, help="default: <published>/grid_edges")
    ap.add_argument(
        "--equal-tuning",
        default=str(RESULTS / "equal_tuning.json"),
        help="the equal-tuning investigation's data (its eps per split)",
    )
    ap.add_argument(
        "--targets",
        action="store_true",
        help="print the overlay's fit files that the published picks call for "
        "(the Snakemake targets of investigations/configs/grid_edges.yaml) and stop",
    )
    args = ap.parse_args(argv)
    published = Path(args.published)
    overlay = Path(args.overlay) if args.overlay else published / "grid_edges"
    if args.targets:
        summary = json.loads((published / "summary.json").read_text())
        print("\n".join(fit_targets(edge_cells(summary), overlay)))
        return 0
    cells, _, verdict = build(published, overlay)
    text = (
        "#### Grid edges: ranks below the paper's grid\n\n"
        "Command: `python investigations/grid_edges.py`, after the overlay's fit jobs "
        "(module docstring). Reading (A); r chosen on validation per split on the "
        "paper's grid and on the extended grid (the paper's plus the ranks of "
        "`investigations/configs/grid_edges.yaml` below it), the same splits.\n\n"
        + _markdown(cell_rows(cells))
        + "\n\n"
        + "\n".join(summary_lines(cells, verdict))
        + "\n\n"
        + verdict.to_markdown(index=False, disable_numparse=True)
        + "\n"
    )
    equal_path = Path(args.equal_tuning)
    eps: list[dict] = []
    runs = [overlay]  # the investigation runs read: their rows are rewritten
    if equal_path.is_file():
        grid = eps_grid(CONFIGS / "equal_tuning.yaml")
        eps = equal_cells(json.loads(equal_path.read_text()), grid)
        equal_run = published / "equal_tuning"
        runs += [equal_run, published / "grid_edges_eps"]
        eps_results(eps, published, equal_run, published / "grid_edges_eps")
        rows = eps_rows(eps)
        text += (
            "\n#### Grid edges: eps past the equal-tuning grid\n\n"
            f"The equal-tuning cells (eps from {', '.join(f'{e:g}' for e in grid)}, "
            "chosen on validation jointly with r) whose validation picks an end of the "
            "eps grid, or of the r grid where the fit rows are here to tell; with the "
            "values of `investigations/configs/grid_edges_eps.yaml` joined where that "
            "overlay has been run (`results/grid_edges_eps/`).\n\n"
            + (_markdown(rows) if rows else "No split picks an end of a grid.")
            + "\n"
        )
        moved = eps_verdicts(eps, published, equal_run)
        if moved is not None:
            text += "\n" + moved.to_markdown(index=False, disable_numparse=True) + "\n"
    out = Path(args.out)
    data = {"cells": _data(cells), "equal_tuning_cells": eps}
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        out.with_suffix(".json"), json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    )
    save(text, out)
    bundle_rows(published, *runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
