"""Variance: the headline cells over 30 random draws (issue #19, item 3).

The paper averages 5 draws of the labeled set; its +- numbers (Ads TCCA +- 0.27) are
then a fragile measure of the spread, and its "A beats B" claims rest on differences
of a point or two. Here the headline cells of SecStr and Ads (BSF, CAT, CCA (BST/AVG),
CCA-LS, TCCA; the paper's protocol, eps = 1e-2) are drawn 30 times:

* draws 0-4 are the published splits (draw i uses the seed 0 + i in both runs; this
  script checks that the draws run's splits 0-4 are the published ones) and are read
  from ``results/``;
* draws 5-29 come from the overlay ``investigations/configs/draws30.yaml``
  (``results/draws30/``, one fit job per draw).

Per cell: the number of draws, mean +- std, the 95 % confidence interval of the mean
(Student t) and, beside it, the published 5-draw figure and the paper's. Per claim of
the paper that compares two methods, the paired difference over the draws both have
(the same labeled sets), its 95 % interval, and what the interval says: A above B,
A below B, or not resolved (0 inside). A cell whose draws are not all run says how
many it has. Commands::

    snakemake --cores 1 --configfile investigations/configs/draws30.yaml -- \\
        results/draws30/fits/secstr/84k/tcca/split{5..29}.csv ...
    python investigations/variance.py

Every number comes from the fit files and results/summary.json; nothing is typed by
hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from _common import published_parser, read_fits, save
from scipy import stats

from tcca_core.protocol import select_per_split
from tcca_core.registry import METHODS
from tcca_core.reporting import format_pm

#: (table, dataset, setting): the headline columns.
CELLS = (("secstr", "secstr", "84k"), ("ads", "ads", "l100"))
METHODS_30 = ("bsf", "cat", "cca_bst", "cca_avg", "cca_ls", "tcca")
N_DRAWS = 30
#: The columns that name one row of a fit file (timings may differ between runs).
_GRID_POINT = ("split", "r", "params", "view", "pair", "eps", "k", "gamma")
#: The paper's comparisons of two methods: (claim, A, B), "A beats B" read as A - B.
PAIRS = (
    ("CAT is comparable to BSF", "cat", "bsf"),
    *(
        (f"every reduction beats BSF and CAT ({METHODS[a].label})", a, b)
        for a in ("cca_bst", "cca_avg", "cca_ls", "tcca")
        for b in ("bsf", "cat")
    ),
    *(
        ("TCCA outperforms the other methods", "tcca", b)
        for b in ("cca_bst", "cca_avg", "cca_ls")
    ),
)


def check_same_splits(published: Path, draws: Path, dataset: str, setting: str) -> int:
    """How many leading splits the two runs share; SystemExit if they disagree."""
    a = json.loads((published / "splits" / dataset / f"{setting}.json").read_text())
    path = draws / "splits" / dataset / f"{setting}.json"
    if not path.exists():
        return 0
    b = json.loads(path.read_text())
    n = len(a["splits"])
    for i in range(min(n, len(b["splits"]))):
        sa, sb = a["splits"][i], b["splits"][i]
        if any(sa[k] != sb[k] for k in ("labeled", "validation", "test", "seed")):
            raise SystemExit(
                f"{dataset}/{setting}: split {i} of {draws} is not the published one"
            )
    return n


def per_draw(published: Path, draws: Path, dataset: str, setting: str, method: str):
    """Test accuracy (%) at the validation-selected r, per draw (index: draw)."""
    n_pub = check_same_splits(published, draws, dataset, setting)
    cell = f"{dataset}/{setting}/{method}"
    base = read_fits(published, cell)
    if base is None:
        return None
    more = read_fits(draws, cell)
    frames = [base[base["split"] < n_pub] if n_pub else base]
    if more is not None:
        frames.append(more[more["split"] >= n_pub])
    # a cell run both per draw and as one job holds some draws twice; a row is one
    # grid point (view or pair of the BST methods included) at one r of one draw
    rows = pd.concat(frames, ignore_index=True)
    rows = rows.drop_duplicates([c for c in _GRID_POINT if c in rows.columns])
    sel = select_per_split(rows, by=["method"])
    return pd.Series(100 * sel["test_acc"].to_numpy(), index=sel["split"].to_numpy())


def interval(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and the Student-t confidence interval of the mean."""
    n = len(x)
    mean = float(np.mean(x))
    if n < 2:
        return mean, math.nan, math.nan
    half = stats.t.ppf(0.5 + level / 2, n - 1) * float(np.std(x, ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half


def _ci(lo: float, hi: float) -> str:
    return "n/a" if math.isnan(lo) else f"[{lo:.2f}, {hi:.2f}]"


def build(published: Path, draws: Path):
    summary = json.loads((published / "summary.json").read_text())
    cell_rows, pair_rows = [], []
    for table, dataset, setting in CELLS:
        t = summary["tables"].get(table)
        if t is None:
            continue
        label = next(c["label"] for c in t["columns"] if c["setting"] == setting)
        recs = {
            r["method"]: r
            for r in t["accuracy"]["val"]
            if r["column"] == label and r.get("mean") is not None
        }
        acc = {}
        for m in METHODS_30:
            if m not in recs:
                continue
            s = per_draw(published, draws, dataset, setting, m)
            if s is None:
                continue
            acc[m] = s
            mean, lo, hi = interval(s.to_numpy())
            rec = recs[m]
            cell_rows.append(
                {
                    "cell": f"{table} {label}",
                    "method": METHODS[m].label,
                    "draws": f"{len(s)} of {N_DRAWS}",
                    "mean ± std": format_pm(mean, float(np.std(s, ddof=1))),
                    "95 % CI": _ci(lo, hi),
                    "published (5 draws)": format_pm(rec["mean"], rec["std"]),
                    "paper (5 draws)": format_pm(
                        rec.get("paper_mean"), rec.get("paper_std")
                    ),
                }
            )
        for claim, a, b in PAIRS:
            if a not in acc or b not in acc:
                continue
            common = acc[a].index.intersection(acc[b].index)
            d = (acc[a].loc[common] - acc[b].loc[common]).to_numpy()
            mean, lo, hi = interval(d)
            spread = max(
                np.std(acc[a].loc[common], ddof=1), np.std(acc[b].loc[common], ddof=1)
            )
            if math.isnan(lo):
                says = "too few draws"
            elif lo > 0:
                says = "A above B"
            elif hi < 0:
                says = "A below B"
            else:
                says = "not resolved (0 inside)"
            pair_rows.append(
                {
                    "cell": f"{table} {label}",
                    "claim": claim,
                    "A - B": f"{METHODS[a].label} - {METHODS[b].label}",
                    "draws": str(len(d)),
                    "difference": f"{mean:+.2f}",
                    "95 % CI": _ci(lo, hi),
                    "larger std": f"{spread:.2f}",
                    "the interval says": says,
                }
            )
    return pd.DataFrame(cell_rows), pd.DataFrame(pair_rows)


def claim_verdicts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per claim and cell, what its paired intervals say together.

    "Comparable" is REPRODUCTION.md's rule (the mean difference within the larger
    std of the two over the draws); "beats"/"outperforms" is confirmed when every
    pair's interval lies above 0, refuted when one lies below, and not resolved
    otherwise.
    """
    if pairs.empty:
        return pairs
    claims = pairs["claim"].str.split(" \\(").str[0]  # one claim for all reductions
    out = []
    for (claim, cell), g in pairs.groupby([claims, pairs["cell"]], sort=False):
        says = list(g["the interval says"])
        if claim.startswith("CAT is comparable"):
            diff, spread = g["difference"].astype(float), g["larger std"].astype(float)
            ok = bool((diff.abs() <= spread).all())
            verdict = "confirmed" if ok else "not confirmed"
        elif "A below B" in says:
            verdict = "refuted"
        elif all(x == "A above B" for x in says):
            verdict = "confirmed"
        else:
            verdict = "not resolved"
        out.append(
            {
                "claim": claim,
                "cell": cell,
                "pairs": str(len(g)),
                "over the draws": verdict,
            }
        )
    return pd.DataFrame(out)


def main(argv=None) -> int:
    ap = published_parser(__doc__, "variance")
    ap.add_argument("--draws", default=None, help="default: <published>/draws30")
    args = ap.parse_args(argv)
    published = Path(args.published)
    draws = Path(args.draws) if args.draws else published / "draws30"
    cells, pairs = build(published, draws)
    text = (
        "#### Variance: the headline cells over 30 draws\n\n"
        "Command: `python investigations/variance.py`, after the overlay's fit jobs "
        "(module docstring). The paper's protocol (eps = 1e-2), reading (A); draws "
        "0-4 are the published splits. 95 % intervals: Student t over the draws.\n\n"
        + cells.to_markdown(index=False, disable_numparse=True)
        + "\n\nPaired differences (A - B over the same draws) for the paper's claims "
        "that compare two methods:\n\n"
        + pairs.to_markdown(index=False, disable_numparse=True)
        + "\n\nThe claims over the draws (comparable: the difference within the larger "
        "std, REPRODUCTION.md's rule; beats: every interval above 0, refuted if one "
        "lies below):\n\n"
        + claim_verdicts(pairs).to_markdown(index=False, disable_numparse=True)
        + "\n"
    )
    save(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
