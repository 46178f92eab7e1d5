"""tcca_core._io.atomic_write: temporary files written only through their descriptor.

Why: a name handed out to be reopened lets anyone who can write the
folder swap the temporary file for a symbolic link in between, and the write then
lands outside the folder.
"""

import os

import pandas as pd
import pytest

import tcca_core._io as io_mod
from _swapper import Swapper, snapshot
from tcca_core._io import atomic_write, atomic_write_text, write_csv


def test_yields_an_open_file_never_a_name(tmp_path):
    out = tmp_path / "sub" / "fit.csv"
    with atomic_write(out) as fh:
        assert not isinstance(fh, (str, os.PathLike))
        fh.write(b"a,b\n1,2\n")
        assert not out.exists()
        (part,) = (tmp_path / "sub").iterdir()
        assert part.name.startswith(".fit.csv.") and part.name.endswith(".part")
    assert out.read_bytes() == b"a,b\n1,2\n"
    assert [p.name for p in out.parent.iterdir()] == ["fit.csv"]


def test_failure_keeps_the_old_file_and_removes_the_temporary_one(tmp_path):
    out = tmp_path / "fit.csv"
    out.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_write(out) as fh:
        fh.write(b"half")
        raise RuntimeError("boom")
    assert out.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["fit.csv"]


def test_writer_may_close_the_file(tmp_path):
    out = tmp_path / "m.json"
    with atomic_write(out) as fh:
        fh.write(b"{}\n")
        fh.close()
    assert out.read_bytes() == b"{}\n"


def test_unique_prefix_names(tmp_path):
    out = tmp_path / "e.npz"
    names = set()
    for _ in range(3):
        with atomic_write(out, unique_prefix=".part-1~") as fh:
            (part,) = (p for p in tmp_path.iterdir() if p.name != "e.npz")
            assert part.name.startswith(".part-1~") and part.suffix == ".npz"
            names.add(part.name)
            fh.write(b"x")
    assert len(names) == 3  # unpredictable: a new name each time


def test_a_planted_link_at_the_temporary_name_is_not_followed(tmp_path, monkeypatch):
    """Someone who guessed (here: was told) the next temporary name and put a link
    there: the creation refuses it and draws another name."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    folder = tmp_path / "shared"
    folder.mkdir()
    tokens = iter(["guessed", "fresh"])
    monkeypatch.setattr(io_mod.secrets, "token_hex", lambda n: next(tokens))
    (folder / ".out.txt.guessed.part").symlink_to(outside)
    atomic_write_text(folder / "out.txt", "new\n")
    assert outside.read_text() == "precious\n"
    assert (folder / "out.txt").read_text() == "new\n"
    assert (folder / ".out.txt.guessed.part").is_symlink()  # left alone


def test_a_link_swapped_in_while_writing_receives_nothing(tmp_path):
    """The temporary file replaced by a link after it was created: the data go to
    the file created (through its descriptor), never through the link."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    before = snapshot(outside)
    folder = tmp_path / "shared"
    with atomic_write(folder / "out.txt") as fh:
        (part,) = folder.iterdir()
        part.unlink()
        part.symlink_to(outside)
        fh.write(b"data\n")
    assert snapshot(outside) == before


def test_a_link_at_a_predictable_name_is_not_followed(tmp_path):
    """Links planted at the names a writer could be expected to use (the fixed
    ``<name>.part`` of old): none is written through."""
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    before = snapshot(outside)
    folder = tmp_path / "shared"
    folder.mkdir()
    for name in ("out.txt.part", ".out.txt.part", "out.txt.tmp"):
        (folder / name).symlink_to(outside)
    atomic_write_text(folder / "out.txt", "new\n")
    write_csv(pd.DataFrame({"a": [1]}), folder / "out.txt")
    assert snapshot(outside) == before
    assert (folder / "out.txt").read_text() == "a\n1\n"


def test_text_and_csv_writers(tmp_path):
    atomic_write_text(tmp_path / "t.md", "é\n")
    assert (tmp_path / "t.md").read_bytes() == "é\n".encode()
    write_csv(pd.DataFrame({"a": [1, 2], "b": ["x", "é"]}), tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_bytes() == "a,b\n1,x\n2,é\n".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.md"]


def test_racing_swapper_never_gets_a_write_outside_the_folder(tmp_path):
    """A second process keeps replacing the folder's temporary files by links to a
    file outside it while 300 files are written: that file is never modified."""
    outside = tmp_path / "outside" / "precious.txt"
    outside.parent.mkdir()
    outside.write_text("precious\n")
    before = snapshot(outside)
    folder = tmp_path / "shared"
    folder.mkdir()
    failed = 0
    # every name but the final one: the temporary files, whatever their names
    with Swapper(folder, r"(?!out\.txt$)", outside) as swapper:
        for i in range(300):
            try:
                atomic_write_text(folder / "out.txt", f"{i}\n" * 100)
            except FileNotFoundError:
                failed += 1  # unlinked before the rename: a failed write, no more
    assert swapper.swaps > 0, "the swapper never raced (the test tested nothing)"
    assert snapshot(outside) == before, "a write landed outside the folder"
    assert [p.name for p in outside.parent.iterdir()] == ["precious.txt"]
    assert failed < 300
    out = folder / "out.txt"
    if out.exists() and not out.is_symlink():  # one whole write, not a mix
        lines = out.read_text().splitlines()
        assert len(lines) == 100 and len(set(lines)) == 1
