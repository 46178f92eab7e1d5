"""Did the new solver (issue #14) move any TCCA verdict?

Reads fit results made with the current solver (the pipeline's own fit jobs, e.g.
``snakemake --cores 1 results/fits/ads/l100/tcca/splitall.csv`` in a scratch copy of
the repository, so that the published results/ are not touched), selects them exactly
as the tables do (:func:`tcca_core.protocol.select`, readings (A) and (B)) and prints
them beside the published cells of ``results/summary.json``, which were fitted with the
solver before issue #14 (one randomized-sketch start, the old stopping rule, rank
paths warm-started), and beside the paper's value. Every number comes from those
files; nothing is typed by hand.

    python investigations/solver_rerun.py /tmp/rerun/results/fits \\
        ads/l100/tcca secstr/84k/tcca
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from tcca_core.protocol import select
from tcca_core.registry import METHODS
from tcca_core.reporting import format_pm

ROOT = Path(__file__).resolve().parents[1]


def published(summary: dict, dataset: str, setting: str, method: str):
    """The published (A) and (B) cells and the paper's value for one table cell."""
    for table in summary["tables"].values():
        acc = table["accuracy"]
        val = [
            c
            for c in acc["val"]
            if (c["setting"], c["method"]) == (setting, method)
            and c.get("result_of_setting", setting) == setting
        ]
        best = [
            c for c in acc["best_r"] if (c["setting"], c["method"]) == (setting, method)
        ]
        if val and best and _dataset_of(table) == dataset:
            return val[0], best[0]
    return None, None


def _dataset_of(table: dict) -> str | None:
    return table.get("dataset")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fits", help="folder with <dataset>/<setting>/<method>/*.csv")
    ap.add_argument("cells", nargs="+", help="dataset/setting/method")
    ap.add_argument("--summary", default=str(ROOT / "results" / "summary.json"))
    out = ROOT / "investigations" / "results" / "solver_rerun.md"
    ap.add_argument("--out", default=str(out))
    args = ap.parse_args(argv)
    summary = json.loads(Path(args.summary).read_text())
    rows = []
    for cell in args.cells:
        dataset, setting, method = cell.split("/")
        files = sorted(Path(args.fits, dataset, setting, method).glob("*.csv"))
        if not files:
            raise SystemExit(f"no fit results for {cell} under {args.fits}")
        df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        sel = select(df, by=["method"]).iloc[0]
        val, best = published(summary, dataset, setting, method)
        new_a = 100 * sel["acc_val_mean"]
        row = {
            "cell": f"{dataset} {setting}: {METHODS[method].label}",
            "(A) new solver": format_pm(new_a, 100 * sel["acc_val_std"]),
            "(A) published": format_pm(val["mean"], val["std"]) if val else "",
            "(A) change": f"{new_a - val['mean']:+.2f}" if val else "",
            "(B) new solver": format_pm(
                100 * sel["acc_best_r_mean"], 100 * sel["acc_best_r_std"]
            )
            + f" (r = {sel['r_best']})",
            "(B) published": (
                format_pm(best["mean"], best["std"]) + f" (r = {best['r']})"
                if best
                else ""
            ),
            "paper": (
                format_pm(val["paper_mean"], val["paper_std"])
                if val and val.get("paper_mean") is not None
                else ""
            ),
        }
        if val and val.get("paper_mean") is not None:
            outside = abs(new_a - val["paper_mean"]) > 2 * val["paper_std"]
            row["new vs paper"] = f"{new_a - val['paper_mean']:+.2f} " + (
                "(outside 2 std)" if outside else "(within 2 std)"
            )
        rows.append(row)
    table = pd.DataFrame(rows).fillna("")
    text = (
        "#### TCCA cells refitted with the solver of issue #14\n\n"
        "Command: `python investigations/solver_rerun.py FITS "
        + " ".join(args.cells)
        + "`; FITS from the pipeline's fit jobs with the full configuration.\n\n"
        + table.to_markdown(index=False, disable_numparse=True)
        + "\n"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
