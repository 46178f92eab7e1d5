"""The committed per-fit rows of a run: one gzip-compressed CSV per setting.

A run's fit jobs write one CSV each (``fits/<dataset>/<setting>/<method>/
split<label>.csv``, :func:`~.fit_jobs.run_fit_job`; the label ``all``, a split's
number, or ``all.p03`` for a grid point's job at ``fit_grain: point``) and Snakemake
a benchmark file each (``benchmarks/fit/...tsv``); neither is committed. The ``rows``
rule bundles them per setting into what is:

- ``rows/<dataset>/<setting>.csv.gz``: every row of every fit file of the setting,
  **the fit file's cells exactly as written** (floats as Python's shortest repr,
  which reads back to the same double), after one column ``fit_file`` naming the
  file relative to the setting's folder (``tcca/splitall.csv``,
  ``tcca/splitall.p03.csv``); files in the order of ``fit_file`` (method, then file
  name: a method's point jobs in the grid's order), each file's rows in its own
  order (the grid's order, the selection's last tie-break). Gzip with mtime 0 and no
  file name in its header: the same rows give the same bytes (with the same zlib);
- ``rows/<dataset>/<setting>.benchmarks.csv``: one line per line of each fit job's
  benchmark file, ``fit_file`` then the benchmark's columns, as written (``s``:
  wall seconds, ``max_rss``: MB, ...): the cost tables' whole-job time and RSS.

:func:`write_rows` writes the two files of one setting (the pipeline's ``rows``
rule), :func:`bundle_run` those of every setting of a run folder that has fit files
(the investigation runs, which run fit jobs only: ``python -m
tcca_core.pipeline.published --bundle results/<run>``), :func:`unbundle` writes the
fit and benchmark files back, byte for byte up to line ends, :func:`read_cell`
returns one cell's rows as the investigations' ``read_fits`` reads them from the fit
files, and :func:`row_cells` lists the cells that have rows. A file that is not
such a bundle is refused with one line (:class:`RowsError`). Described for readers
in ``results/README.md``. Standard library only where the rules import it (pandas
inside the readers).
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import atomic_write, atomic_write_text, csv_cell

if TYPE_CHECKING:  # pandas is imported where used: the rules import the names here
    import pandas as pd

__all__ = [
    "BENCHMARKS",
    "FIT_FILE",
    "INVESTIGATIONS",
    "RUNS",
    "ROWS",
    "RowsError",
    "bundle_run",
    "read_benchmarks",
    "read_bundle",
    "read_cell",
    "read_rows",
    "row_cells",
    "row_files",
    "unbundle",
    "write_rows",
]

PathLike = str | os.PathLike

#: A setting's rows and its fit jobs' benchmarks, relative to the run's folder.
ROWS = "rows/{dataset}/{setting}.csv.gz"
BENCHMARKS = "rows/{dataset}/{setting}.benchmarks.csv"
#: The bundle's first column: the fit file of the row, relative to the setting.
FIT_FILE = "fit_file"
#: What a fit file's name must look like in a bundle (it is written back to disk).
_FIT_NAME = re.compile(r"[A-Za-z0-9_]+/[A-Za-z0-9_.-]+\.csv")
#: Columns every fit file has (tcca_core.protocol.RESULT_COLUMNS and the job's).
_REQUIRED = ("method", "split", "r", "val_acc", "test_acc")


class RowsError(ValueError):
    """A rows bundle that cannot be read, or fit files that cannot be bundled."""


#: The investigation runs (``investigations/configs/<run>.yaml``, a reduced run in
#: ``results/<run>/``) whose rows are committed (``results/<run>/rows/``, kept by
#: .gitignore): those the investigations below read.
RUNS = (
    "equal_tuning",
    "draws30",
    "equal_tuning_draws30",
    "more_starts",
    "warm_start",
    "other_grid",
    "grid_edges",
    "grid_edges_eps",
)
#: Investigation outputs made from the rows of pipeline runs: the output's stem in
#: ``investigations/results/`` -> (its script in ``investigations/``, the runs it
#: needs besides the published one). Every run of :data:`RUNS` with committed rows
#: is there for it to read (one it reads where run, such as equal_tuning's
#: ``equal_tuning_draws30``, is not needed). Each script takes ``--published`` and
#: ``--out``.
INVESTIGATIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "equal_tuning": ("equal_tuning.py", ("equal_tuning",)),
    "variance": ("variance.py", ("draws30",)),
    "optimizer_robustness": (
        "optimizer_robustness.py",
        ("warm_start", "more_starts", "other_grid"),
    ),
    "grid_edges": ("grid_edges.py", ("grid_edges", "equal_tuning")),
}


def _fit_name(path: PathLike) -> str:
    """``<method>/<file>.csv`` of a fit file (relative to its setting's folder)."""
    p = Path(path)
    name = f"{p.parent.name}/{p.name}"
    if not _FIT_NAME.fullmatch(name):
        raise RowsError(f"{p}: not a fit file (<method>/<name>.csv)")
    return name


def _read_table(path: PathLike, delimiter: str = ",") -> tuple[list[str], list[list]]:
    """Header and rows of a CSV (or TSV) file, every cell as the text written."""
    with open(path, encoding="utf-8", newline="") as fh:
        table = list(csv.reader(fh, delimiter=delimiter))
    if not table or not table[0]:
        raise RowsError(f"{path}: empty file, no header")
    header, rows = table[0], [r for r in table[1:] if r]
    for i, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise RowsError(
                f"{path}: line {i} has {len(row)} fields, the header {len(header)}"
            )
    return header, rows


def _csv_text(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _union(headers: Iterable[Sequence[str]]) -> list[str]:
    out: list[str] = []
    for header in headers:
        out += [c for c in header if c not in out]
    return out


def _joined(parts: Sequence[tuple[str, list[str], list[list]]]) -> str:
    """One CSV: ``fit_file`` and the union of the parts' columns (missing: empty)."""
    columns = _union(header for _, header, _ in parts)
    lines = []
    for name, header, rows in parts:
        where = [header.index(c) if c in header else None for c in columns]
        lines += [[name, *("" if i is None else r[i] for i in where)] for r in rows]
    return _csv_text([FIT_FILE, *columns], lines)


def write_rows(
    fits: Sequence[PathLike],
    out: PathLike,
    *,
    benchmarks: Sequence[PathLike] = (),
    benchmarks_out: PathLike | None = None,
) -> int:
    """Bundle one setting's fit files into ``out`` (gzip CSV); return the row count.

    Parameters
    ----------
    fits : sequence of path-like
        The setting's fit files, ``.../<method>/<name>.csv`` (any order: the bundle
        is ordered by ``<method>/<name>``).
    out : path-like
        The bundle, ``rows/<dataset>/<setting>.csv.gz``; written atomically.
    benchmarks : sequence of path-like
        The fit jobs' Snakemake benchmark files, ``.../<method>/<name>.tsv``.
    benchmarks_out : path-like, optional
        Where their lines go (``rows/<dataset>/<setting>.benchmarks.csv``).
    """
    parts = []
    for path in sorted(fits, key=_fit_name):
        header, rows = _read_table(path)
        missing = [c for c in _REQUIRED if c not in header]
        if missing:
            raise RowsError(f"{path}: not a fit file, no column(s) {missing}")
        parts.append((_fit_name(path), header, rows))
    names = [name for name, _, _ in parts]
    if len(set(names)) != len(names):
        raise RowsError(f"{out}: two fit files of the same name among {names}")
    with atomic_write(out) as fh:
        # no file name and mtime 0 in the header: the same rows, the same bytes
        with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
            gz.write(_joined(parts).encode("utf-8"))
    if benchmarks_out is not None:
        bench = []
        for path in sorted(benchmarks, key=_fit_name_of_benchmark):
            header, rows = _read_table(path, delimiter="\t")
            bench.append((_fit_name_of_benchmark(path), header, rows))
        atomic_write_text(benchmarks_out, _joined(bench))
    return sum(len(rows) for _, _, rows in parts)


def _fit_name_of_benchmark(path: PathLike) -> str:
    return _fit_name(Path(path).with_suffix(".csv"))


def row_files(folder: PathLike) -> list[tuple[str, str]]:
    """(dataset, setting) of every rows bundle of a run folder, sorted."""
    root = Path(folder) / "rows"
    return sorted(
        (p.parent.name, p.name.removesuffix(".csv.gz")) for p in root.glob("*/*.csv.gz")
    )


def row_cells(folder: PathLike, methods: Iterable[str] | None = None) -> list[str]:
    """Every cell (``dataset/setting/method``) with committed rows in a run folder.

    ``methods``: only those methods' cells. What the fit files' folders
    ``fits/<dataset>/<setting>/<method>/`` name, for a folder without them.
    """
    wanted = None if methods is None else set(methods)
    cells = set()
    for dataset, setting in row_files(folder):
        path = Path(folder) / ROWS.format(dataset=dataset, setting=setting)
        _, rows = read_bundle(path)
        for method in {row[0].split("/")[0] for row in rows}:
            if wanted is None or method in wanted:
                cells.add(f"{dataset}/{setting}/{method}")
    return sorted(cells)


def bundle_run(folder: PathLike) -> list[Path]:
    """Write the rows of every setting of ``folder`` that has fit files.

    ``folder`` is a run's folder (``results/equal_tuning``): its
    ``fits/<dataset>/<setting>/<method>/*.csv`` and, where present, the matching
    ``benchmarks/fit/...tsv`` go to ``rows/<dataset>/<setting>.csv.gz`` and
    ``.benchmarks.csv``. Returns the bundles written.
    """
    folder = Path(folder)
    written = []
    for setting_dir in sorted((folder / "fits").glob("*/*")):
        fits = sorted(setting_dir.glob("*/*.csv"))
        if not setting_dir.is_dir() or not fits:
            continue
        dataset, setting = setting_dir.parent.name, setting_dir.name
        bench_dir = folder / "benchmarks" / "fit" / dataset / setting
        benchmarks = [
            b
            for f in fits
            for b in [bench_dir / f.parent.name / f.with_suffix(".tsv").name]
            if b.is_file()
        ]
        where = {"dataset": dataset, "setting": setting}
        out = folder / ROWS.format(**where)
        write_rows(
            fits,
            out,
            benchmarks=benchmarks,
            benchmarks_out=folder / BENCHMARKS.format(**where),
        )
        written.append(out)
    return written


#: Most bytes a rows bundle may inflate to (the largest committed one: about 20 MB).
MAX_INFLATED = 256 << 20


def _inflate(path: PathLike) -> bytes:
    """Return the inflated bytes of a gzip file, read 1 MiB at a time, bounded."""
    parts, total = [], 0
    with gzip.open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
            if total > MAX_INFLATED:
                raise RowsError(
                    f"{path}: inflates to more than {MAX_INFLATED >> 20} MiB (from "
                    f"{os.path.getsize(path)} bytes): not a rows bundle"
                )
            parts.append(chunk)
    return b"".join(parts)


def read_bundle(path: PathLike) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a rows bundle, every cell as text; RowsError if not one.

    At most :data:`MAX_INFLATED` bytes are inflated.
    """
    try:
        data = _inflate(path)
    except FileNotFoundError:
        raise
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise RowsError(f"{path}: not a gzip-compressed CSV ({exc})") from None
    try:
        table = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise RowsError(f"{path}: not a UTF-8 CSV inside the gzip ({exc})") from None
    return _checked(path, table, required=(FIT_FILE, *_REQUIRED))


def _checked(path, table, required) -> tuple[list[str], list[list[str]]]:
    if not table or not table[0]:
        raise RowsError(f"{path}: empty, no header")
    header, rows = table[0], [r for r in table[1:] if r]
    missing = [c for c in required if c not in header]
    if missing:
        raise RowsError(f"{path}: not a rows bundle, no column(s) {missing}")
    for i, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise RowsError(
                f"{path}: line {i} has {len(row)} fields, the header {len(header)}"
            )
        if not _FIT_NAME.fullmatch(row[0]):
            raise RowsError(f"{path}: line {i}: {row[0]!r} is not <method>/<name>.csv")
    for i, row in enumerate([header, *rows], start=1):
        for cell in row:
            if csv_cell(cell) != cell:
                raise RowsError(
                    f"{path}: line {i}: {cell[:40]!r} is not a value a fit file "
                    "writes (a spreadsheet would read it as a formula)"
                )
    return header, rows


def read_benchmarks(path: PathLike) -> tuple[list[str], list[list[str]]]:
    """Header and lines of a setting's ``.benchmarks.csv``, cells as text."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            table = list(csv.reader(fh))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise RowsError(f"{path}: not a UTF-8 CSV ({exc})") from None
    return _checked(path, table, required=(FIT_FILE,))


def _groups(header, rows) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Split a bundle by fit file: name -> (the bundle's columns, that file's rows).

    In the bundle's order. A file bundled beside others with more columns gets
    theirs too, empty.
    """
    out: dict[str, list[list[str]]] = {}
    for row in rows:
        out.setdefault(row[0], []).append(row[1:])
    return {name: (header[1:], part) for name, part in out.items()}


def read_rows(path: PathLike) -> pd.DataFrame:
    """Read a rows bundle as the pipeline reads a gathered run: one DataFrame.

    The cells are parsed by :func:`pandas.read_csv`, as
    :func:`~.report_jobs.build_table` parses ``runs/<dataset>/<setting>.csv``;
    ``fit_file`` is dropped.
    """
    import pandas as pd

    header, rows = read_bundle(path)
    # one pass over the whole file, as build_table reads it: in chunks, a column
    # that is empty in some (``pair``) gets mixed types and a DtypeWarning
    frame = pd.read_csv(io.StringIO(_csv_text(header, rows)), low_memory=False)
    return frame.drop(columns=FIT_FILE)


def unbundle(
    folder: PathLike, dataset: str, setting: str, target: PathLike
) -> list[Path]:
    """Write the fit (and benchmark) files of one setting's bundle under ``target``.

    ``folder``'s ``rows/<dataset>/<setting>.csv.gz`` (and ``.benchmarks.csv``, if
    committed) become ``target/fits/<dataset>/<setting>/<method>/<name>.csv`` (and
    ``target/benchmarks/fit/.../<name>.tsv``): the cells as bundled, so that a
    reader of the fit files gets what it got from the originals. Returns the fit
    files written.
    """
    where = {"dataset": dataset, "setting": setting}
    target = Path(target)
    header, rows = read_bundle(Path(folder) / ROWS.format(**where))
    written = []
    for name, (columns, part) in _groups(header, rows).items():
        path = target / "fits" / dataset / setting / name
        atomic_write_text(path, _csv_text(columns, part))
        written.append(path)
    bench = Path(folder) / BENCHMARKS.format(**where)
    if bench.is_file():
        header, rows = read_benchmarks(bench)
        for name, (columns, part) in _groups(header, rows).items():
            tsv = target / "benchmarks" / "fit" / dataset / setting / name
            text = "".join("\t".join(r) + "\n" for r in [columns, *part])
            atomic_write_text(tsv.with_suffix(".tsv"), text)
    return written


def read_cell(folder: PathLike, cell: str) -> pd.DataFrame | None:
    """One cell's committed rows (``cell``: ``dataset/setting/method``), or None.

    What the investigations' ``read_fits(folder, cell)`` returns from the fit
    files ``folder/fits/<cell>/*.csv``, read from ``folder/rows/`` instead: each
    file parsed on its own, in the order of their names, then concatenated.
    """
    import pandas as pd

    dataset, setting, method = cell.split("/")
    path = Path(folder) / ROWS.format(dataset=dataset, setting=setting)
    if not path.is_file():
        return None
    header, rows = read_bundle(path)
    frames = [
        pd.read_csv(io.StringIO(_csv_text(columns, part)))
        for name, (columns, part) in sorted(_groups(header, rows).items())
        if name.split("/")[0] == method
    ]
    return pd.concat(frames, ignore_index=True) if frames else None
