"""Write the data of every committed output of investigations/results/ beside it.

The scripts write <stem>.json with their Markdown (_common.save); this rewrites it
from the Markdown already there, for outputs written before the scripts did, or by
another script (grid_rerun.md: benchmarks/compare_runs.py), without rerunning them:

    python investigations/hand_over.py

It keeps the provenance each output records (its last line: commit, source digest,
command) and stamps none: an output is as fresh as the code that made it. An
output written by a script that does not stamp (compare_runs.py) is stamped right
after it is written, naming that command (what tests/test_staleness.py shows when
the library changes):

    python benchmarks/compare_runs.py BEFORE results --out OUT
    python investigations/hand_over.py --stamp grid_rerun --command "<that command>"

(BEFORE: the run compared with; OUT: investigations/results/grid_rerun.md).
"""

import argparse

from _common import REPO, RESULTS, hand_over

from tcca_core._io import atomic_write_text
from tcca_core.reporting.provenance import output_stamp, stamp_text

NOTES = "_notes"  # the hand-written notes beside some outputs: no data

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument(
    "--stamp",
    nargs="+",
    default=[],
    metavar="STEM",
    help="outputs (results/<STEM>.md) just written by another script: record this "
    "tree's provenance in them",
)
ap.add_argument("--command", help="with --stamp: the command that wrote them")
args = ap.parse_args()
if args.stamp and not args.command:
    ap.error("--stamp needs --command: the command that wrote the outputs")

for stem in args.stamp:
    path = RESULTS / f"{stem}.md"
    if not path.is_file():
        ap.error(f"--stamp: {path} does not exist")
    stamped = stamp_text(path.read_text(), output_stamp(REPO, args.command))
    atomic_write_text(path, stamped)
    print(f"stamped {path}")

for path in sorted(RESULTS.glob("*.md")):
    if not path.stem.endswith(NOTES):
        hand_over(path.read_text(), path, stamp=False)
        print(path.with_suffix(".json"))
