"""Write the data of every committed output of investigations/results/ beside it.

The scripts write <stem>.json with their Markdown (_common.save); this rewrites it
from the Markdown already there, for outputs written before the scripts did, or by
another script (grid_rerun.md: benchmarks/compare_runs.py), without rerunning them:

    python investigations/hand_over.py
"""

from _common import RESULTS, hand_over

NOTES = "_notes"  # the hand-written notes beside some outputs: no data

for path in sorted(RESULTS.glob("*.md")):
    if not path.stem.endswith(NOTES):
        hand_over(path.read_text(), path)
        print(path.with_suffix(".json"))
