"""SecStr 84K: the paper's formulas on centered vs raw (uncentered) views.

The paper assumes centered views (section 3.1). On SecStr's one-hot windows the
centered third-order moment holds little beyond noise, while the raw third moment
also carries every pairwise covariance (weighted by the means). This script runs
TCCA, CCA (AVG) and CCA-LS both ways, with the pipeline's protocol (100 labeled,
RLS, eps = 1e-2, validation 20 %, the pipeline's splits).
"""

from _common import load, parse_args, run, summarize, write

from tcca_core import protocol

R_GRID = [5, 10, 20]

args = parse_args(__doc__)
views, y = load("secstr", args.data_root)
splits = protocol.make_splits(y, n_labeled=100, n_splits=args.splits, seed=0)


def report(rows):
    write(
        rows,
        "SecStr 84K: centered vs raw views",
        f"{args.splits} splits, 100 labeled, RLS, eps = 1e-2; (A) validation-selected "
        "over r in " + ", ".join(map(str, R_GRID)) + "; columns r = ...: mean test "
        "accuracy (%) at that r. Command: `python investigations/secstr_centering.py`.",
        args.out,
        "secstr_centering",
    )


rows = []
for method in ("cca_avg", "cca_ls", "tcca"):
    for center in (True, False):
        key, params = method, {"eps": 1e-2, "center": center}
        if method == "tcca":  # the registry's tcca_nc is TCCA(center=False)
            key, params = ("tcca" if center else "tcca_nc"), {"eps": 1e-2}
        df = run(views, y, splits, key, r_grid=R_GRID, params=params)
        label = protocol.METHODS[method].label
        rows.append(summarize(df, f"{label}, {'centered' if center else 'raw views'}"))
        report(rows)  # after every variant, so that a long run leaves its rows
