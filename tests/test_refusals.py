"""Inputs refused with one clear line, not a traceback nor a silent wrong answer.

- a rows bundle with a formula cell (``=HYPERLINK(...)`` as ``params``) is not a
  bundle: ``check_published`` and ``unbundle`` refuse it before any fit file is
  written;
- a gzip bomb of rows is refused after a bounded read;
- a job whose outputs meet a full disk ends with one line naming the file;
- masked arrays are refused (their mask would be dropped);
- ``l2_normalize_rows`` on a 1-D array says what shape it needs;
- a title with ``$`` draws as text (the schema refuses it too).
"""

from __future__ import annotations

import csv
import gzip
import io
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tcca_core import TCCA
from tcca_core.baselines import _single
from tcca_core.pipeline import rows
from tcca_core.pipeline.rows import RowsError, read_bundle, unbundle

ROOT = Path(__file__).resolve().parents[1]


def _bundle(path: Path, params: str) -> Path:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        ["fit_file", "method", "split", "r", "val_acc", "test_acc", "params"]
    )
    writer.writerow(["bsf/splitall.csv", "bsf", "0", "", "0.5", "0.4", params])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(buf.getvalue().encode(), mtime=0))
    return path


@pytest.mark.parametrize(
    "cell",
    ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "@SUM(1)", "-1+2", "\t=1"],
)
def test_a_formula_in_a_bundle_is_refused_before_a_fit_file_is_written(tmp_path, cell):
    path = _bundle(tmp_path / "run" / "rows" / "d" / "s.csv.gz", cell)
    with pytest.raises(RowsError, match="would read it as a formula") as err:
        read_bundle(path)
    assert "\n" not in str(err.value)
    with pytest.raises(RowsError):
        unbundle(tmp_path / "run", "d", "s", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_bundle_of_plain_values_still_reads(tmp_path):
    path = _bundle(tmp_path / "rows" / "d" / "s.csv.gz", '{"eps": -0.5}')
    header, body = read_bundle(path)
    assert body[0][-1] == '{"eps": -0.5}'


def test_a_gzip_bomb_of_rows_is_refused_after_a_bounded_read(tmp_path, monkeypatch):
    """A few kB that inflate past the bound: refused with one line, the memory used
    bounded by it (here 4 MiB, from 40 MiB inflated)."""
    monkeypatch.setattr(rows, "MAX_INFLATED", 4 << 20)
    line = b"bsf/splitall.csv,bsf,0,,0.5,0.4\n"
    head = b"fit_file,method,split,r,val_acc,test_acc\n"
    path = tmp_path / "bomb.csv.gz"
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(head)
        for _ in range(40):
            fh.write(line * ((1 << 20) // len(line)))
    assert path.stat().st_size < 1 << 20
    tracemalloc.start()
    with pytest.raises(RowsError, match="inflates to more than 4 MiB") as err:
        read_bundle(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert "\n" not in str(err.value)
    assert peak < 16 << 20, peak


def test_a_full_disk_ends_a_job_with_one_line(tmp_path):
    """The job's log is on the full disk (/dev/full) and its output cannot be
    written: one line names the file, no traceback, nothing partial left."""
    out = tmp_path / "tables" / "t.csv"
    code = f"""
import errno, os
from tcca_core.pipeline import start_logging
from tcca_core._io import atomic_write
start_logging("/dev/full", "table")
import logging; logging.getLogger("workflow.table").info("a line the log cannot take")
with atomic_write({str(out)!r}) as fh:
    fh.write(b"partial")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
"""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"table: cannot write {out}: No space left on device (the disk is full); "
        "nothing partial was left: free space and rerun"
    ], done.stderr
    assert list(out.parent.iterdir()) == []


def test_masked_arrays_are_refused():
    rng = np.random.default_rng(0)
    views = [rng.standard_normal((50, d)) for d in (3, 4, 5)]
    masked = np.ma.masked_greater(views[1], 1.5)
    with pytest.raises(ValueError, match=r"view 1 is a masked array \(\d+ masked"):
        TCCA(2).fit([views[0], masked, views[2]])


def test_l2_normalize_rows_on_one_dimension_says_what_it_needs():
    with pytest.raises(ValueError, match=r"needs a 2-D array .* got shape \(3,\)"):
        _single.l2_normalize_rows(np.array([3.0, 4.0, 0.0]))
    np.testing.assert_allclose(
        _single.l2_normalize_rows(np.array([[3.0, 4.0]])), [[0.6, 0.8]]
    )


def test_a_dollar_in_a_title_draws_as_text(tmp_path):
    """Past the schema (a library caller): mathtext never parses a title."""
    from tcca_core import reporting

    curves = pd.DataFrame(
        {
            "setting": ["a"] * 2,
            "method": ["tcca"] * 2,
            "r": [5, 10],
            "mean": [50.0, 60.0],
            "std": [1.0, 1.0],
            "n_splits": [3, 3],
        }
    )
    columns = [{"setting": "a", "label": "cost $5 \\frac{$"}]
    paths = [tmp_path / "a.png", tmp_path / "a.pdf"]
    reporting.plot_accuracy(curves, columns, paths, title="Accuracy $\\frac{a}{$ x")
    assert all(p.stat().st_size > 0 for p in paths)
