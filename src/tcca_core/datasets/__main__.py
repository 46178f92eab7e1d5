"""Command line of the data sets.

Usage: ``python -m tcca_core.datasets prepare NAME [--root data] [--mirror DIR]``.

Sub-commands:

- ``prepare NAME``: fetch, verify and prepare a data set; prints the manifest path.
- ``list``: the available data sets and their options.
- ``show NAME``: prepare if needed, then print a short summary (shapes, counts).

Options of a data set are passed as ``-o key=value`` (values are parsed as JSON
when possible: ``-o include_local=false``, ``-o split_seed=3``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from . import DATASETS, load, prepare
from ._download import (
    ChecksumError,
    DataUnavailableError,
    DownloadError,
    UnsafeArchiveError,
    WriteError,
)


def _parse_option(text: str):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"options are key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tcca_core.datasets",
        description="Download, verify and prepare the data sets of the TCCA study.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd, help_ in (
        ("prepare", "fetch, verify and prepare a data set"),
        ("show", "prepare if needed and print a summary"),
    ):
        p = sub.add_parser(cmd, help=help_)
        p.add_argument("name", choices=sorted(DATASETS))
        p.add_argument("--root", default="data", help="data folder (default: data)")
        p.add_argument(
            "--mirror",
            default=None,
            help="local folder with <mirror>/<dataset>/<file>[.gz], the first source "
            "(what it lacks is downloaded unless --offline)",
        )
        p.add_argument("--offline", action="store_true", help="download nothing")
        p.add_argument(
            "--force", action="store_true", help="prepare even if up to date"
        )
        p.add_argument(
            "--verify",
            action="store_true",
            help="check the prepared views against their sha256 (prepare again if "
            "corrupted)",
        )
        p.add_argument(
            "-o",
            "--option",
            action="append",
            default=[],
            type=_parse_option,
            metavar="KEY=VALUE",
            help="data-set option (repeatable)",
        )
        p.add_argument("-q", "--quiet", action="store_true", help="log warnings only")
    sub.add_parser("list", help="list the data sets and their options")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name, spec in DATASETS.items():
            opts = {**spec.prepare_options, **spec.load_options}
            print(f"{name:14s} {spec.title}" + (f"  options: {opts}" if opts else ""))
        return 0

    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    options = dict(args.option)
    try:
        if args.command == "prepare":
            print(
                prepare(
                    args.name,
                    args.root,
                    args.mirror,
                    force=args.force,
                    verify=args.verify,
                    offline=args.offline,
                    **options,
                )
            )
        else:
            ds = load(
                args.name,
                root=args.root,
                mirror=args.mirror,
                force=args.force,
                verify=args.verify,
                offline=args.offline,
                **options,
            )
            print(ds)
            for key in ("view_names", "view_dims", "classes", "label_counts"):
                print(f"  {key}: {ds.info.get(key)}")
            for key, idx in ds.splits.items():
                print(f"  split {key}: {len(idx)}")
    except (
        ChecksumError,
        DataUnavailableError,
        DownloadError,
        UnsafeArchiveError,
        ValueError,
        WriteError,
    ) as exc:
        logging.getLogger("tcca_core.datasets").error("%s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
