"""``python -m tcca_core.reproduction``: REPRODUCTION.md again, without refitting.

From the committed results (``results/summary.json``, the investigations' outputs)
and the notes (``docs/investigations.md``): what the pipeline's ``reproduction`` rule
writes for the full configuration, where the fit files are not at hand
(:func:`tcca_core.pipeline.report_jobs.rewrite_reproduction`). With ``--check``
it writes nothing and fails when REPRODUCTION.md differs from that.
"""

from __future__ import annotations

import argparse


def main(argv=None) -> int:
    """Write REPRODUCTION.md (or check it); the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m tcca_core.reproduction", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--repo", default=".", help="the repository's top folder")
    ap.add_argument("--out", default=None, help="default: <repo>/REPRODUCTION.md")
    ap.add_argument(
        "--check",
        action="store_true",
        help="write nothing; fail when REPRODUCTION.md is not what they give",
    )
    args = ap.parse_args(argv)
    from ..pipeline.report_jobs import reproduction_difference, rewrite_reproduction

    if args.check:
        found = reproduction_difference(args.repo)
        if found:
            fix = "python -m tcca_core.reproduction"
            print(f"REPRODUCTION.md is stale: {found} ({fix})")
            return 1
        print("REPRODUCTION.md is what the committed results and notes give")
        return 0
    print(rewrite_reproduction(args.repo, out=args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
