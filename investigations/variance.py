"""Variance: the headline cells over 30 random draws.

The paper averages 5 draws of the labeled set; its +- numbers (Ads TCCA +- 0.27) are
then a fragile measure of the spread, and its "A beats B" claims rest on differences
of a point or two. Here the headline cells of SecStr and Ads (BSF, CAT, CCA (BST/AVG),
CCA-LS, TCCA; the paper's protocol, eps = 1e-2) are drawn 30 times:

* draws 0-4 are the published splits (draw i uses the seed 0 + i in both runs; this
  script checks that the draws run's splits 0-4 are the published ones, from the
  runs' splits files, or in a clone, which has only the committed rows, from the
  rows' seeds and sizes) and are read from ``results/``;
* draws 5-29 come from the overlay ``investigations/configs/draws30.yaml``
  (``results/draws30/``, one fit job per draw).

Per cell: the number of draws, mean +- std, the 95 % confidence interval of the mean
(Student t) and, beside it, the published 5-draw figure and the paper's. Per claim of
the paper that compares two methods, the paired difference over the draws both have
(the same labeled sets), its 95 % interval and paired t test, and what the interval
says: A above B, A below B, or not resolved (0 inside); beside them the same family
adjusted for its number of comparisons: Holm's p-values, simultaneous
(Bonferroni) 95 % intervals and what is still resolved after Holm. "CAT is comparable
to BSF" is an equivalence test (TOST) within +- :data:`MARGIN` accuracy points. A
cell whose draws are not all run says how many it has.

The intervals speak of the draw of the labeled rows on this data set: every draw
takes its labeled, validation and test rows from one fixed pool, so the test sets
overlap, and nothing here covers new data sets from the same source.

``--from-record`` rewrites the output from the tables it recorded last
(``investigations/results/variance.json``), without the fit files: the pairs'
p-values, Holm's adjustment, the simultaneous intervals and the verdicts are
recomputed from the recorded differences and intervals (the std of the differences
where recorded, else recovered from the interval's printed bounds by
:func:`tcca_core.stats.interval_from_bounds`). Commands::

    snakemake --cores 1 --configfile investigations/configs/draws30.yaml -- \\
        results/draws30/fits/secstr/84k/tcca/split{5..29}.csv ...
    python investigations/variance.py
    python investigations/variance.py --from-record   # no fits needed

Every number comes from the fit files (or the rows committed from them,
``results/rows/`` and ``results/draws30/rows/``, which the script rewrites from the
draws run's fit files) and results/summary.json; nothing is typed by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from _common import bundle_rows, published_parser, read_fits, read_setting, save
from scipy import stats

from tcca_core.protocol import select_per_split
from tcca_core.registry import METHODS
from tcca_core.reporting import format_pm
from tcca_core.reproduction.significance import ALPHA, MARGIN
from tcca_core.stats import (
    PairedInterval,
    holm,
    interval_from_bounds,
    paired_family,
    paired_interval,
    tost,
)

#: (table, dataset, setting): the headline columns.
CELLS = (("secstr", "secstr", "84k"), ("ads", "ads", "l100"))
METHODS_30 = ("bsf", "cat", "cca_bst", "cca_avg", "cca_ls", "tcca")
N_DRAWS = 30
# ALPHA: the level of every test; MARGIN: the equivalence margin of "comparable"
# (points; an open decision, docs/deviations.md D-36), both from tcca_core.reproduction.
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


#: The columns of a fit row that identify its split's draw: split i is drawn with
#: the seed seed + i (tcca_core.protocol.make_splits), and the same seed, data and
#: configuration give the same rows, of these sizes (fewer evaluation rows for a
#: method that keeps a subset of them, protocol.restrict_split: compared per method).
_DRAW = ("seed", "n_labeled", "n_validation", "n_test")


def check_same_splits(published: Path, draws: Path, dataset: str, setting: str) -> int:
    """How many leading splits the two runs share; SystemExit if they disagree.

    From the runs' splits files (``splits/<dataset>/<setting>.json``: every split's
    rows compared) where both have one; else (a clone, where only the fit rows are
    committed) from the fit rows (:func:`same_splits_in_rows`). 0 when the draws run
    has neither for the setting.
    """
    path_a = published / "splits" / dataset / f"{setting}.json"
    path_b = draws / "splits" / dataset / f"{setting}.json"
    if not (path_a.is_file() and path_b.is_file()):
        return same_splits_in_rows(published, draws, dataset, setting)
    a = json.loads(path_a.read_text())
    b = json.loads(path_b.read_text())
    n = len(a["splits"])
    for i in range(min(n, len(b["splits"]))):
        sa, sb = a["splits"][i], b["splits"][i]
        if any(sa[k] != sb[k] for k in ("labeled", "validation", "test", "seed")):
            raise SystemExit(
                f"{dataset}/{setting}: split {i} of {draws} is not the published one"
            )
    return n


def same_splits_in_rows(
    published: Path, draws: Path, dataset: str, setting: str
) -> int:
    """:func:`check_same_splits` from the fit rows of the two runs (their :data:`_DRAW`
    columns), for runs without splits files.

    A split both runs have must be the same draw in both (per method: its seed and
    sizes), and every split of both must come from the same seed series (seed -
    split one number): the draws run continues the published draws. Returns the
    number of the published run's splits.
    """
    b = read_setting(draws, dataset, setting)
    if b is None:
        return 0
    a = read_setting(published, dataset, setting)
    where = f"{dataset}/{setting}"
    if a is None:
        raise SystemExit(f"{where}: no splits file and no fit rows under {published}")
    lacking = [c for c in ("method", "split", *_DRAW) if c not in a or c not in b]
    if lacking:
        raise SystemExit(
            f"{where}: no splits files, and the fit rows lack {', '.join(lacking)} "
            "to tell the draws apart"
        )
    ids_a, ids_b = _draw_ids(a), _draw_ids(b)
    for method, split in sorted(ids_a.keys() & ids_b.keys()):
        if ids_a[method, split] != ids_b[method, split]:
            raise SystemExit(
                f"{where}: split {split} of {draws} is not the published one "
                f"({method}: seed and sizes {sorted(ids_b[method, split])}, "
                f"published {sorted(ids_a[method, split])})"
            )
    offsets = {
        seed - split
        for ids in (ids_a, ids_b)
        for (_, split), draws_of_split in ids.items()
        for seed, *_ in draws_of_split
        if seed >= 0  # -1: no seed recorded (a split given, not drawn)
    }
    if len(offsets) > 1:
        raise SystemExit(
            f"{where}: the splits of {draws} are not the published one's series "
            f"(split i drawn with seed s + i; s here: {sorted(offsets)})"
        )
    return int(a["split"].nunique())


def _draw_ids(rows: pd.DataFrame) -> dict[tuple[str, int], set[tuple[int, ...]]]:
    """(method, split) -> the split's draw(s) in the rows: (seed, sizes) tuples."""
    cols = ["split", *_DRAW]
    # integers whatever a file's parse made of them (a column with gaps reads
    # float); -1 for a cell left empty
    ids = rows[cols].apply(pd.to_numeric, errors="coerce").fillna(-1).astype("int64")
    ids.insert(0, "method", rows["method"].astype(str))
    out: dict[tuple[str, int], set[tuple[int, ...]]] = {}
    for method, split, *draw in ids.drop_duplicates().itertuples(index=False):
        out.setdefault((method, split), set()).add(tuple(draw))
    return out


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


def p_text(p: float) -> str:
    """A p-value as the tables show it (four decimals, or below their reach)."""
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def p_is(p: float) -> str:
    """ "p < 0.0001" or "p = 0.0252"."""
    text = p_text(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


_SAYS = {1: "A above B", -1: "A below B", 0: "not resolved (0 inside)"}
_SAYS_HOLM = {1: "A above B", -1: "A below B", 0: "not resolved"}


def family_table(rows: list[dict], intervals: list[PairedInterval]) -> pd.DataFrame:
    """The rows of a family of paired comparisons, with their tests beside them.

    ``rows`` name each comparison (their columns come first); ``intervals`` are their
    raw 95 % paired intervals. Added: the difference, the raw interval, the std of
    the differences, the paired t test's p, Holm's p over the family, the
    simultaneous (Bonferroni) interval, and what the raw interval and Holm say.
    Columns starting with "_" hold the numbers, for the verdicts; they are not shown.
    """
    out = []
    fam = paired_family(intervals, ALPHA)
    for row, iv, f in zip(rows, intervals, fam, strict=True):
        out.append(
            {
                **row,
                "draws": str(iv.n),
                "difference": f"{iv.mean:+.2f}",
                "95 % CI": _ci(iv.low, iv.high),
                "sd of A - B": f"{iv.std:.3f}",
                "p": p_text(iv.p),
                "Holm p": p_text(f.p_holm),
                "simultaneous 95 % CI": _ci(f.low_sim, f.high_sim),
                "the interval says": _SAYS[f.side],
                "after Holm": _SAYS_HOLM[f.side_holm],
                "_mean": iv.mean,
                "_sd": iv.std,
                "_n": iv.n,
            }
        )
    return pd.DataFrame(out)


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """The table without its hidden number columns."""
    return table[[c for c in table.columns if not str(c).startswith("_")]]


def build(published: Path, draws: Path):
    summary = json.loads((published / "summary.json").read_text())
    cell_rows, pair_rows, intervals = [], [], []
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
            if len(common) < 2:
                continue
            pair_rows.append(
                {
                    "cell": f"{table} {label}",
                    "claim": claim,
                    "A - B": f"{METHODS[a].label} - {METHODS[b].label}",
                }
            )
            intervals.append(
                paired_interval(
                    acc[a].loc[common].to_numpy(), acc[b].loc[common].to_numpy()
                )
            )
    return pd.DataFrame(cell_rows), family_table(pair_rows, intervals)


def from_record(data: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The cells and pairs recorded in ``variance.json``, the pairs' tests redone.

    Each pair's interval is the recorded one: its std of the differences where the
    record has it, else recovered from the printed 95 % bounds.
    """
    tables = {tuple(t["columns"][:3]): t for t in data.get("tables", [])}
    cells = next(t for k, t in tables.items() if k == ("cell", "method", "draws"))
    pairs = next(t for k, t in tables.items() if k == ("cell", "claim", "A - B"))
    rows, intervals = [], []
    for values in pairs["rows"]:
        r = dict(zip(pairs["columns"], values, strict=True))
        n, mean = int(r["draws"]), float(r["difference"])
        lo, hi = (float(v) for v in r["95 % CI"].strip("[]").split(","))
        iv = interval_from_bounds(mean, lo, hi, n)
        if r.get("sd of A - B"):  # recorded: the test from it, the bounds as shown
            sd = float(r["sd of A - B"])
            t = mean / (sd / math.sqrt(n))
            p = float(2 * stats.t.sf(abs(t), n - 1))
            iv = iv._replace(std=sd, t=t, p=p)
        intervals.append(iv)
        rows.append({k: r[k] for k in ("cell", "claim", "A - B")})
    return (
        pd.DataFrame(cells["rows"], columns=cells["columns"]),
        family_table(rows, intervals),
    )


def claim_verdicts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Per claim and cell, what its paired comparisons say together.

    "Comparable" is an equivalence test: TOST within +- :data:`MARGIN` points on
    the paired differences, confirmed when p < :data:`ALPHA` (Holm's adjustment is
    over the cells' TOSTs). "Beats"/"outperforms" is confirmed when every pair lies
    above 0, refuted when one lies below, not resolved otherwise: once by the raw
    95 % intervals, once by Holm's p over the whole table's family.
    """
    if pairs.empty:
        return pd.DataFrame()
    claims = pairs["claim"].str.split(" \\(").str[0]  # one claim for all reductions
    groups = list(pairs.groupby([claims, pairs["cell"]], sort=False))
    # the TOSTs of "comparable", one per cell: their own family for Holm
    tosts = {
        key: tost(
            float(g["_mean"].iloc[0]),
            float(g["_sd"].iloc[0]),
            int(g["_n"].iloc[0]),
            MARGIN,
        )  # fmt: skip
        for key, g in groups
        if key[0].startswith("CAT is comparable")
    }
    tost_holm = dict(zip(tosts, holm([t.p for t in tosts.values()]), strict=True))
    out = []
    for key, g in groups:
        claim, cell = key
        if key in tosts:
            p, ph = tosts[key].p, tost_holm[key]
            rule = f"TOST within ± {MARGIN:g} point: {p_is(p)}"
            raw = "confirmed" if p < ALPHA else "not confirmed"
            adj = "confirmed" if ph < ALPHA else "not confirmed"
        else:
            rule = "every pair above 0"
            raw = _together(list(g["the interval says"]))
            adj = _together(list(g["after Holm"]))
        out.append(
            {
                "claim": claim,
                "cell": cell,
                "pairs": str(len(g)),
                "rule": rule,
                "over the draws (raw)": raw,
                "over the draws (Holm)": adj,
            }
        )
    return pd.DataFrame(out)


def _together(says: list[str]) -> str:
    if "A below B" in says:
        return "refuted"
    if all(x == "A above B" for x in says):
        return "confirmed"
    return "not resolved"


def report(cells: pd.DataFrame, pairs: pd.DataFrame, recorded: bool = False) -> str:
    """The Markdown output."""
    m = len(pairs)
    source = (
        " The pairs' tests are recomputed from the differences and intervals recorded "
        "by the last run over the fit files (`--from-record`; where the std of the "
        "differences was not recorded, it is recovered from the printed bounds)."
        if recorded
        else ""
    )
    return (
        "#### Variance: the headline cells over 30 draws\n\n"
        "Command: `python investigations/variance.py`, after the overlay's fit jobs "
        "(module docstring). The paper's protocol (eps = 1e-2), reading (A); draws "
        "0-4 are the published splits. 95 % intervals: Student t over the draws. "
        "Every draw takes its rows from one fixed pool (the test sets overlap), so "
        "the intervals speak of the draw of the labeled rows on this data set, not "
        "of new data sets."
        + source
        + "\n\n"
        + cells.to_markdown(index=False, disable_numparse=True)
        + "\n\nPaired differences (A - B over the same draws) for the paper's claims "
        f"that compare two methods; p: the paired t test; Holm p: Holm's adjustment "
        f"over the {m} comparisons of this table; simultaneous 95 % CI: Bonferroni "
        f"(each at level 1 - {ALPHA:g}/{m}), covering all {m} together; after Holm: "
        f"the direction where Holm p < {ALPHA:g}:\n\n"
        + shown(pairs).to_markdown(index=False, disable_numparse=True)
        + "\n\nThe claims over the draws (comparable: equivalent within "
        f"± {MARGIN:g} accuracy point by TOST, alpha = {ALPHA:g}; beats: every pair "
        "above 0, refuted if one lies below; raw: the 95 % intervals, Holm: "
        "the adjusted p-values):\n\n"
        + claim_verdicts(pairs).to_markdown(index=False, disable_numparse=True)
        + "\n"
    )


def main(argv=None) -> int:
    ap = published_parser(__doc__, "variance")
    ap.add_argument("--draws", default=None, help="default: <published>/draws30")
    ap.add_argument(
        "--from-record",
        action="store_true",
        help="redo the tests from the output's recorded tables (no fit files)",
    )
    args = ap.parse_args(argv)
    if args.from_record:
        record = Path(args.out).with_suffix(".json")
        cells, pairs = from_record(json.loads(record.read_text()))
        save(report(cells, pairs, recorded=True), args.out)
        return 0
    published = Path(args.published)
    draws = Path(args.draws) if args.draws else published / "draws30"
    cells, pairs = build(published, draws)
    save(report(cells, pairs), args.out)
    bundle_rows(published, draws)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
