"""Optimizer robustness of the TCCA/KTCCA cells.

Does a TCCA/KTCCA cell of the tables depend on how the CP decomposition was started?
Each variant refits the cell through the pipeline's own fit jobs, with one solver
setting changed by a configuration overlay in ``investigations/configs/`` (a reduced
run: it writes ``results/<overlay name>/``, never the published folder):

* ``warm_start``: the warm start flipped: TCCA's ranks fitted each on its own (the
  published run fits each eps's r grid as a warm-started rank path, where the previous
  rank's solution is one more raced start), KTCCA's fitted as such a path (the
  published run fits them alone);
* ``more_starts``: ``n_init = 10`` starts at every rank, raced by successive
  halving (the default's ``"auto"`` runs one start where ALS is expensive);
* ``other_grid``: a different r grid, with ranks the paper's grid shares and
  ranks off it (7, 13, 47, 115, 235: :data:`OFF_GRID` tells them apart). The column
  counts the shared ranks whose accuracies differ at all. Where a cell's ranks are
  fitted each on its own (KTCCA), a shared rank's fit, and every accuracy at it, must
  be the very same as in the published run. Where they are fitted as a warm-started
  path (TCCA: the fits' ``params`` say ``warm_start``), a rank's fit also depends on
  the ranks fitted before it, and the summary gives the largest change of a shared
  rank's mean test accuracy instead. A rank off the paper's grid has
  no published twin; its mean test accuracy must lie in line with those of its
  published neighbours (between them, widened by the largest std over splits of
  the three: a solver that fitted only "round" ranks well would show there), and
  the cell is selected again on the published grid plus the off-grid ranks, which
  says whether a rank the paper's grid skips would change the cell.

The published cell and each variant are selected exactly as the tables are
(:func:`tcca_core.protocol.select`, reading (A): r on validation per split) and
printed side by side with the change in points; a change of the mean beyond the
larger of the two standard deviations over the splits is flagged. A setting whose r
grid the ``other_grid`` overlay leaves unchanged (mfeat's kernel2000 cells keep their
own; resolved as the pipeline resolves ``config/config.yaml`` with the overlay) says
so, and needs no refit, which would only repeat the published jobs. Without cells
named, every published TCCA/KTCCA cell is listed, and a cell whose variants have not
been run says "not run". Commands::

    snakemake --cores 2 --configfile investigations/configs/warm_start.yaml -- \\
        results/warm_start/fits/ads/l100/tcca/splitall.csv ...
    python investigations/optimizer_robustness.py

Every number comes from the fit files (in a clone, the rows committed from them,
``results/rows/`` and ``results/<variant>/rows/``, which the script rewrites from the
variants' fit files); nothing is typed by hand.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from _common import bundle_rows, path_fitted, read_fits, save
from snakemake.utils import update_config

from tcca_core.pipeline.config import r_grid_of, resolve_settings
from tcca_core.pipeline.rows import row_cells
from tcca_core.protocol import accuracy_by_r, select, select_per_split
from tcca_core.registry import METHODS, R_GRID_PAPER
from tcca_core.reporting import format_pm

ROOT = Path(__file__).resolve().parents[1]
#: Variant name -> what it changes (the overlay of the same name in configs/).
VARIANTS = {
    "warm_start": "warm start flipped",
    "more_starts": "n_init = 10",
    "other_grid": "other r grid (shared ranks)",
}
#: The column of the cells selected on the published grid plus the off-grid ranks.
OFF_GRID = "published grid + off-grid ranks"
SAME_GRID = "same grid (the setting's own)"
#: What tells two rows of a fit file apart: a split, a rank, the method's parameters
#: and the learner's (kNN's k, RLS's gamma: one row each).
_ROW_KEYS = ("split", "r", "params", "k", "gamma", "view", "pair")


def selected(df: pd.DataFrame) -> tuple[float, float]:
    """Reading (A): mean and std (%) of the test accuracy, r chosen on validation."""
    sel = select(df, by=["method"]).iloc[0]
    return 100 * sel["acc_val_mean"], 100 * sel["acc_val_std"]


def differing_ranks(base: pd.DataFrame, other: pd.DataFrame) -> tuple[int, int]:
    """(ranks in common, ranks whose accuracies differ) between two runs of a cell."""
    cols = ["val_acc", "test_acc"]
    keys = [c for c in _ROW_KEYS if c in base.columns and c in other.columns]
    a, b = (_indexed(df, keys, cols) for df in (base, other))
    common = a.index.intersection(b.index)
    if common.empty:
        return 0, 0
    diff = (a.loc[common] != b.loc[common]).any(axis=1)
    ranks = common.get_level_values("r")
    return int(np.unique(ranks).size), int(np.unique(ranks[diff.to_numpy()]).size)


#: The options the started variants change (their overlays' only other key is eps).
_STARTED = ("n_init", "warm_start")


def _solver_free(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with the started variants' options (n_init, warm_start) left out of
    their params, so that a variant's rows meet the published ones they refit."""
    free = {
        p: json.dumps(
            {k: v for k, v in json.loads(p).items() if k not in _STARTED},
            sort_keys=True,
        )
        for p in df["params"].dropna().unique()
    }
    return df.assign(params=df["params"].map(free))


def largest_rank_change(
    base: pd.DataFrame, other: pd.DataFrame
) -> tuple[float, int | None]:
    """The largest change (points) of a shared rank's mean test accuracy over
    splits, and that rank (None if no rank is shared)."""
    means = [
        accuracy_by_r(df, by=["method"]).dropna(subset=["r"]).set_index("r")
        for df in (base, other)
    ]
    common = means[0].index.intersection(means[1].index)
    if common.empty:
        return 0.0, None
    d = means[1].loc[common, "test_acc_mean"] - means[0].loc[common, "test_acc_mean"]
    d = d.abs()
    return float(100 * d.max()), int(d.idxmax())


def off_grid(base: pd.DataFrame, other: pd.DataFrame) -> dict:
    """The ranks of ``other`` that ``base``'s grid lacks, against their neighbours.

    Returns ``ranks`` (the off-grid ranks), ``points`` (per off-grid rank: r, its
    mean test accuracy over splits, the published neighbours' means and the
    tolerance, all in %, and ``in_line``), and ``selected``: (A) on ``base`` plus
    the off-grid rows (mean, std, r per split), or None without off-grid ranks.
    In line: within [min, max] of the nearest published rank below and above,
    widened by the largest std over splits of the three (one neighbour at an end
    of the grid).
    """
    grid = sorted(set(base["r"].dropna().astype(int)))
    ranks = sorted(set(other["r"].dropna().astype(int)) - set(grid))
    if not ranks:
        return {"ranks": [], "points": [], "selected": None}
    curves = {
        name: accuracy_by_r(df, by=["method"]).dropna(subset=["r"]).set_index("r")
        for name, df in (("base", base), ("other", other))
    }
    points = []
    for r in ranks:
        if r not in curves["other"].index:  # capped in every split: no accuracy
            continue
        below = [g for g in grid if g < r][-1:]
        above = [g for g in grid if g > r][:1]
        near = curves["base"].loc[below + above]
        mean = float(curves["other"].loc[r, "test_acc_mean"])
        stds = [*near["test_acc_std"], curves["other"].loc[r, "test_acc_std"]]
        tol = max((float(v) for v in stds if pd.notna(v)), default=0.0)
        lo = float(near["test_acc_mean"].min())
        hi = float(near["test_acc_mean"].max())
        points.append(
            {
                "r": r,
                "mean": 100 * mean,
                "neighbours": {
                    int(g): 100 * float(v) for g, v in near["test_acc_mean"].items()
                },
                "tolerance": 100 * tol,
                "in_line": bool(lo - tol <= mean <= hi + tol),
            }
        )
    union = pd.concat([base, other[other["r"].isin(ranks)]], ignore_index=True)
    sel = select(union, by=["method"]).iloc[0]
    picks = [
        int(r) for r in select_per_split(union, by=["method"]).sort_values("split")["r"]
    ]
    return {
        "ranks": ranks,
        "points": points,
        "selected": (100 * sel["acc_val_mean"], 100 * sel["acc_val_std"], picks),
    }


def grid_unchanged(config: Path, overlay: Path) -> set[str]:
    """``dataset/setting`` of every setting whose r grid ``overlay`` leaves as it is
    in ``config`` (merged as ``snakemake --configfile`` merges an overlay)."""
    base = yaml.safe_load(Path(config).read_text(encoding="utf-8"))
    merged = copy.deepcopy(base)
    update_config(merged, yaml.safe_load(Path(overlay).read_text(encoding="utf-8")))
    before, after = resolve_settings(base), resolve_settings(merged)
    return {
        f"{dataset}/{setting}"
        for dataset, settings in before.items()
        for setting, s in settings.items()
        if r_grid_of(s) == r_grid_of(after[dataset][setting])
    }


def _indexed(df: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
    # NaN (no such parameter, e.g. gamma for kNN) is a value of its own
    df = df.dropna(subset=cols).copy()
    for c in keys:
        numeric = pd.api.types.is_numeric_dtype(df[c])
        df[c] = df[c].astype(float).fillna(-1.0) if numeric else df[c].fillna("")
    out = df.set_index(keys)[cols]
    if not out.index.is_unique:
        raise SystemExit(f"fit rows are not unique by {keys}: cannot compare runs")
    return out


def compare(
    cells, published: Path, variants: dict[str, Path], same_grid=frozenset()
) -> pd.DataFrame:
    """One row per cell: the published (A) and each variant's, with the change.

    ``same_grid``: ``dataset/setting`` of the settings whose r grid the
    ``other_grid`` variant leaves unchanged (:func:`grid_unchanged`)."""
    rows = []
    # Numbers behind the summary lines: (cell, variant, change in points, beyond noise)
    # for the started variants; (shared ranks, differing ranks, largest change of a
    # shared rank) for other grids, apart for ranks fitted alone and rank paths; per
    # cell with off-grid ranks, what off_grid found (and the change, beyond noise).
    changes, offs = [], []
    identical = []  # (variant, its fits equal the published at every rank)
    # per kind: shared ranks, differing ranks, largest change, its cell and rank
    ranks = {"alone": [0, 0, 0.0, ""], "path": [0, 0, 0.0, ""]}
    for cell in cells:
        base = read_fits(published, cell)
        if base is None:
            raise SystemExit(f"no published fits for {cell} under {published}")
        dataset, setting, method = cell.split("/")
        mb, sb = selected(base)
        row = {
            "cell": f"{dataset} {setting}: {METHODS[method].label}",
            "published (A)": format_pm(mb, sb),
        }
        for name, folder in variants.items():
            other = read_fits(folder, cell)
            label = VARIANTS.get(name, name)
            if name == "other_grid" and f"{dataset}/{setting}" in same_grid:
                row[label] = row[OFF_GRID] = SAME_GRID
                continue
            if other is None:
                row[label] = "not run"
                if name == "other_grid":
                    row[OFF_GRID] = "not run"
                continue
            mv, sv = selected(other)
            flag = " (beyond noise)" if abs(mv - mb) > max(sb, sv) else ""
            shown = f"{format_pm(mv, sv)} ({mv - mb:+.2f}){flag}"
            if name != "other_grid":
                changes.append((row["cell"], label, mv - mb, bool(flag)))
                n, bad = differing_ranks(*(_solver_free(df) for df in (base, other)))
                identical.append((label, n > 0 and bad == 0))
            else:
                if set(other["r"].dropna()) == set(base["r"].dropna()):
                    row[label] = row[OFF_GRID] = SAME_GRID
                    continue
                row[OFF_GRID] = _off_grid_text(row["cell"], base, other, mb, sb, offs)
                # Ranks fitted alone are grid-free only if every shared rank gives the
                # very same numbers; a rank path's depend on the ranks before them.
                # The selected cell may move either way, because validation chooses
                # among other candidates (a property of the grid, not the fit).
                n, bad = differing_ranks(base, other)
                tally = ranks["path" if path_fitted(base) else "alone"]
                tally[0] += n
                tally[1] += bad
                d, r = largest_rank_change(base, other)
                if r is not None and d >= tally[2]:
                    tally[2:] = [d, f"{row['cell']}, r = {r}"]
                shown = f"{bad} of {n} shared ranks differ; selected "
                shown += format_pm(mv, sv)
            row[label] = shown
        rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs.update(
        changes=changes,
        identical=identical,
        ranks={k: tuple(v) for k, v in ranks.items()},
        off_grid=offs,
    )
    return table


def _off_grid_text(cell, base, other, mb, sb, offs) -> str:
    """The off-grid column of a cell; what it found is appended to ``offs``."""
    found = off_grid(base, other)
    if found["selected"] is None:
        return "no off-grid ranks"
    mu, sd, picks = found["selected"]
    beyond = abs(mu - mb) > max(sb, sd)
    out_of_line = [p["r"] for p in found["points"] if not p["in_line"]]
    offs.append(
        {
            "cell": cell,
            **found,
            "change": mu - mb,
            "beyond_noise": beyond,
            "picked": sum(p in found["ranks"] for p in picks),
            "splits": len(picks),
        }
    )
    return (
        f"{format_pm(mu, sd)} ({mu - mb:+.2f}){' (beyond noise)' if beyond else ''}; "
        f"r = {', '.join(map(str, picks))}; out of line: "
        + (", ".join(f"r = {r}" for r in out_of_line) or "none")
    )


def summary_lines(table: pd.DataFrame, variant_cols: list[str]) -> str:
    """What the table says in a few lines (the prose quotes them)."""
    done = table[variant_cols].ne("not run").all(axis=1)
    missing = ", ".join(table.loc[~done, "cell"]) or "none"
    lines = [
        f"- Cells with every variant run: {int(done.sum())} of {len(table)}. "
        f"Not (fully) rerun: {missing}."
    ]
    changes = table.attrs.get("changes", [])
    if changes:
        # a change beyond noise first, then the largest
        cell, label, d, _ = max(changes, key=lambda c: (c[3], abs(c[2])))
        beyond = sum(c[3] for c in changes)
        lines.append(
            f"- Started variants run: {len(changes)}; beyond noise: {beyond}; "
            f"largest change: {d:+.2f} points ({cell}, {label})."
        )
    identical = table.attrs.get("identical", [])
    if identical:
        per = {}
        for label, same in identical:
            per.setdefault(label, []).append(same)
        lines.append(
            "- Started variants identical to the published fits at every rank: "
            f"{sum(same for _, same in identical)} of {len(identical)} ("
            + "; ".join(f"{lab}: {sum(v)} of {len(v)}" for lab, v in per.items())
            + ")."
        )
    ranks = table.attrs.get("ranks", {})
    n, bad, _, _ = ranks.get("alone", (0, 0, 0.0, ""))
    if n:
        lines.append(
            f"- Other r grid, ranks fitted alone: {bad} of {n} shared ranks differ."
        )
    n, bad, d, at = ranks.get("path", (0, 0, 0.0, ""))
    if n:
        lines.append(
            f"- Other r grid, warm-started rank paths: {bad} of {n} shared ranks "
            f"differ; the largest change of a shared rank's mean test accuracy: "
            f"{d:.2f} points ({at})."
        )
    offs = table.attrs.get("off_grid", [])
    if offs:
        ranks = sorted({r for o in offs for r in o["ranks"]})
        points = [p for o in offs for p in o["points"]]
        d = max(offs, key=lambda o: (o["beyond_noise"], abs(o["change"])))
        lines.append(
            f"- Off-grid ranks ({', '.join(map(str, ranks))}): "
            f"{sum(not p['in_line'] for p in points)} of {len(points)} cell ranks out "
            "of line with their published neighbours; picked on validation in "
            f"{sum(o['picked'] for o in offs)} of {sum(o['splits'] for o in offs)} "
            f"splits; cells moved beyond noise: "
            f"{sum(o['beyond_noise'] for o in offs)} of {len(offs)} (the largest move: "
            f"{d['change']:+.2f}, {d['cell']})."
        )
    return "\n".join(lines)


def published_cells(published: Path) -> list[str]:
    """Every TCCA/KTCCA cell of the published run, as dataset/setting/method: those
    of its fit files, or without any (a clone) those of its committed rows."""
    cells = sorted(
        "/".join(d.relative_to(published / "fits").parts)
        for method in ("tcca", "ktcca")
        for d in (published / "fits").glob(f"*/*/{method}")
        if any(d.glob("*.csv"))
    )
    return cells or row_cells(published, ("tcca", "ktcca"))


def overlay_grid(overlay: Path) -> list[int] | None:
    """The other r grid, as its overlay lists it (None if it lists none)."""
    grid = yaml.safe_load(Path(overlay).read_text(encoding="utf-8")).get("r_grid")
    return [int(r) for r in grid] if isinstance(grid, list) else None


def grid_text(overlay: Path) -> str:
    """What the other r grid is, read from its overlay (ranks off the paper's grid)."""
    grid = overlay_grid(overlay)
    if grid is None:
        return ""
    off = [r for r in grid if r not in R_GRID_PAPER]
    return (
        f"The other r grid (other_grid.yaml): {', '.join(map(str, grid))}; off "
        "the paper's grid: "
        f"{', '.join(map(str, off)) or 'none'}."
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "cells", nargs="*", help="dataset/setting/method (default: every published one)"
    )
    ap.add_argument("--published", default=str(ROOT / "results"))
    ap.add_argument(
        "--variants",
        nargs="*",
        default=list(VARIANTS),
        help="variant names; their fits are read from results/<name>/",
    )
    out = ROOT / "investigations" / "results" / "optimizer_robustness.md"
    ap.add_argument("--out", default=str(out))
    ap.add_argument(
        "--config",
        default=str(ROOT / "config" / "config.yaml"),
        help="the published configuration (to tell which r grids other_grid keeps)",
    )
    args = ap.parse_args(argv)
    published = Path(args.published)
    folders = {v: published / v for v in args.variants}
    cells = args.cells or published_cells(published)
    overlay = ROOT / "investigations" / "configs" / "other_grid.yaml"
    same = grid_unchanged(args.config, overlay) if "other_grid" in folders else set()
    table = compare(cells, published, folders, same)
    variant_cols = [VARIANTS.get(v, v) for v in args.variants]
    text = (
        "#### Optimizer robustness of the TCCA/KTCCA cells\n\n"
        "Command: `python investigations/optimizer_robustness.py"
        + "".join(" " + c for c in args.cells)
        + "`, after the variants' fit jobs (module docstring). Reading (A); "
        "the change is in points against the published cell. "
        + grid_text(overlay)
        + "\n\n"
        + table.to_markdown(index=False, disable_numparse=True)
        + "\n\n"
        + summary_lines(table, variant_cols)
        + "\n"
    )
    # the grid beside the tables: REPRODUCTION.md's sentence on this column reads
    # it (tcca_core.reproduction.sentences.recorded_grid)
    grid = overlay_grid(overlay)
    save(text, args.out, data=None if grid is None else {"other_grid": grid})
    bundle_rows(published, *folders.values())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
