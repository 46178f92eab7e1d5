"""Every included output records the code it came from: the release's.

Each investigation output (``investigations/results/<stem>.md`` and its data
``<stem>.json``) records the commit and the digest of the library's code it was made
with (:func:`tcca_core.reporting.provenance.source_digest`, written by
``investigations/_common.hand_over``); ``results/summary.json`` records it in its
provenance. The published outputs belong to a release
(``release/manifest.json``): each must record the release's library, so
that no output describes other code than the one the release names. Whether the
library at HEAD still computes the same numbers is the sentinel's question
(tests/test_release.py), not this file's: a change to the library stales no test.
The unit tests check the mechanism on synthetic packages and outputs.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest

from _scripts import load_script
from tcca_core.pipeline.release import read_manifest
from tcca_core.reporting.provenance import (
    DIGEST_EXCLUDE,
    read_stamp,
    source_digest,
    source_files,
    stale_reason,
    stamp_text,
)

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "tcca_core"
DOCS = REPO / "docs" / "investigations.md"
SUMMARY = REPO / "results" / "summary.json"
#: Every output docs/investigations.md includes into REPRODUCTION.md.
INCLUDED = re.findall(r"^<!-- include: (\S+) -->$", DOCS.read_text(), re.MULTILINE)


#: Outputs written by a script that does not stamp them, and that script's command.
OTHER_WRITERS = {
    "grid_rerun": "python benchmarks/compare_runs.py BEFORE results "
    "--out investigations/results/grid_rerun.md",
}


def _command(output: str) -> str:
    """The command that writes an output (when the output does not name its own)."""
    stem = Path(output).stem
    if stem in OTHER_WRITERS:
        writer = OTHER_WRITERS[stem]
        return (
            f"{writer} && python investigations/hand_over.py --stamp {stem} "
            f"--command '{writer}'"
        )
    return f"python investigations/{stem}.py"


# ------------------------------------------------------------ the real outputs


def test_every_included_output_has_a_known_writer():
    assert len(INCLUDED) >= 10
    for output in INCLUDED:
        stem = Path(output).stem
        assert output.startswith("investigations/results/"), output
        assert (
            stem in OTHER_WRITERS or (REPO / "investigations" / f"{stem}.py").is_file()
        )


RELEASE = read_manifest(REPO)


@pytest.mark.parametrize("output", INCLUDED)
def test_included_output_was_made_at_the_release(output):
    problem = stale_reason(
        REPO / output, RELEASE["library_digest"], command=_command(output)
    )
    assert problem is None, problem


def test_published_summary_was_made_at_the_release():
    prov = json.loads(SUMMARY.read_text())["provenance"]
    assert prov.get("source_digest") == RELEASE["library_digest"], (
        f"results/summary.json: made with tcca_core source "
        f"{str(prov.get('source_digest'))[:12]}, release {RELEASE['version']} names "
        f"{RELEASE['library_digest'][:12]}: a new grid needs a new release "
        "(docs/release.md)"
    )


# ------------------------------------------------------------------ the digest


def _package(root: Path) -> Path:
    """A small package: two modules, a subpackage, and a presentational part."""
    pkg = root / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "reporting").mkdir()
    (pkg / "__init__.py").write_text('"""The package."""\n')
    (pkg / "core.py").write_text(
        '"""Core."""\n\n'
        "SCALE = 2  # why: the paper's\n"
        '"""An attribute docstring."""\n\n\n'
        "def f(x, y=1):\n"
        '    """Return the scaled sum."""\n'
        "    return SCALE * (x + y)\n"
    )
    (pkg / "sub" / "b.py").write_text(
        "class B:\n    '''A class.'''\n\n    def g(self):\n        return 'b'\n"
    )
    (pkg / "reporting" / "show.py").write_text("def show(x):\n    return f'{x}'\n")
    return pkg


def test_digest_ignores_comments_docstrings_and_layout(tmp_path):
    pkg = _package(tmp_path)
    before = source_digest(pkg)
    (pkg / "core.py").write_text(
        "# a new comment\n"
        "SCALE = (\n    2\n)\n\n"
        "def f(x,\n      y=1):\n"
        '    """Return the scaled sum (a reworded docstring)."""\n'
        "    # a comment inside\n"
        "    return SCALE*(x+y)\n"
    )
    (pkg / "sub" / "b.py").write_text(
        'class B:\n    """Another docstring."""\n    def g(self):\n        return "b"\n'
    )
    assert source_digest(pkg) == before


def test_digest_changes_with_the_code(tmp_path):
    pkg = _package(tmp_path)
    before = source_digest(pkg)
    core = pkg / "core.py"
    text = core.read_text()
    core.write_text(text.replace("SCALE = 2", "SCALE = 3"))
    assert source_digest(pkg) != before
    core.write_text(text.replace("(x + y)", "(y + x)"))  # same number, other code
    assert source_digest(pkg) != before
    core.write_text(text)
    assert source_digest(pkg) == before
    (pkg / "sub" / "b.py").rename(pkg / "sub" / "c.py")  # the path counts
    assert source_digest(pkg) != before


def test_digest_leaves_out_the_presentation(tmp_path):
    pkg = _package(tmp_path)
    before = source_digest(pkg)
    (pkg / "reporting" / "show.py").write_text("def show(x):\n    return repr(x)\n")
    assert source_digest(pkg) == before
    assert "reporting/" in DIGEST_EXCLUDE and "reproduction/" in DIGEST_EXCLUDE
    names = {p.relative_to(SRC).as_posix() for p in source_files()}
    assert {"_tcca.py", "protocol/run.py", "pipeline/fit_jobs.py"} <= names
    assert not any(n.startswith(("reporting/", "reproduction/")) for n in names)
    assert "pipeline/plan.py" not in names


class _NoDocstrings(ast.NodeTransformer):
    """Drop every bare string statement (what the digest ignores); a body left
    empty gets a ``pass`` (``inserted``), which the digest would see as code."""

    inserted = False

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body:
                kept = [
                    s
                    for s in body
                    if not (
                        isinstance(s, ast.Expr)
                        and isinstance(s.value, ast.Constant)
                        and isinstance(s.value.value, str)
                    )
                ]
                if not kept and not isinstance(node, ast.Module):
                    kept, self.inserted = [ast.Pass()], True
                elif not kept:  # a module of a docstring only: left as it is too
                    self.inserted = True
                setattr(node, name, kept)
        return node


def test_digest_of_the_library_survives_a_rewrite_without_comments(tmp_path):
    """The library rewritten by Python's own unparser (no comment, no docstring,
    another layout throughout) has the same digest. A module where dropping a
    docstring leaves a body empty is left as it is (the rewrite needs a ``pass``)."""
    copy = tmp_path / "tcca_core"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    rewritten = 0
    for path in source_files(copy):
        strip = _NoDocstrings()
        bare = strip.visit(ast.parse(path.read_text()))
        if not strip.inserted:
            path.write_text(ast.unparse(bare) + "\n")
            rewritten += 1
    assert rewritten > 40
    assert source_digest(copy) == source_digest(SRC)
    path = source_files(copy)[-1]
    path.write_text(path.read_text() + "\n_ONE_MORE = 1\n")
    assert source_digest(copy) != source_digest(SRC)


# ------------------------------------------------------------ the checker


def _output(folder: Path, digest: str, *, data: bool = True) -> Path:
    md = folder / "inv.md"
    stamp = {"commit": "c0ffee", "dirty": False, "source_digest": digest}
    stamp["command"] = "python investigations/inv.py --splits 5"
    md.write_text(stamp_text("#### A table\n\n| x |\n|---|\n| 1 |\n", stamp))
    if data:
        md.with_suffix(".json").write_text(json.dumps({"provenance": stamp}))
    return md


def test_checker_passes_an_output_of_the_current_code(tmp_path):
    pkg = _package(tmp_path)
    md = _output(tmp_path, source_digest(pkg))
    assert stale_reason(md, source_digest(pkg)) is None


def test_checker_flags_an_output_older_than_the_code(tmp_path):
    pkg = _package(tmp_path)
    md = _output(tmp_path, source_digest(pkg))
    core = pkg / "core.py"
    core.write_text(core.read_text().replace("SCALE = 2", "SCALE = 3"))
    problem = stale_reason(md, source_digest(pkg))
    assert problem is not None and str(md) in problem
    assert "python investigations/inv.py --splits 5" in problem  # how to make it


def test_checker_flags_a_missing_digest(tmp_path):
    md = tmp_path / "old.md"
    md.write_text("#### Made before stamps\n\n| x |\n|---|\n| 1 |\n")
    problem = stale_reason(md, "0" * 64, command="python investigations/old.py")
    assert "records no source digest" in problem
    assert "python investigations/old.py" in problem
    missing = stale_reason(tmp_path / "none.md", "0" * 64, command="make it")
    assert "missing" in missing


def test_checker_flags_data_not_handed_over_with_the_output(tmp_path):
    digest = "a" * 64
    md = _output(tmp_path, digest, data=False)
    assert "hand_over.py" in stale_reason(md, digest)
    md.with_suffix(".json").write_text(json.dumps({"provenance": {"commit": "x"}}))
    assert "hand_over.py" in stale_reason(md, digest)


# ------------------------------------------------- the investigations' hand-over


@pytest.fixture(scope="module")
def common():
    return load_script("investigations/_common.py")


def test_hand_over_stamps_the_output_and_its_data(tmp_path, common):
    md = tmp_path / "variance.md"
    text = "#### Spread\n\n| cell | std |\n|---|---|\n| a | 1.5 |\n"
    common.hand_over(text, md)
    written = md.read_text()
    stamp = read_stamp(written)
    assert stamp["source_digest"] == source_digest()
    assert set(stamp) == {"commit", "dirty", "source_digest", "command"}
    assert written.startswith(text.rstrip("\n"))  # the text itself is unchanged
    data = json.loads(md.with_suffix(".json").read_text())
    assert data["provenance"] == stamp
    assert data["tables"][0]["rows"] == [["a", "1.5"]]  # the stamp is no table
    assert stale_reason(md, source_digest()) is None


def test_an_output_written_in_parts_keeps_one_stamp(tmp_path, common):
    """graph_baselines writes each section through save() and joins them."""
    md = tmp_path / "parts.md"
    texts = []
    for i in range(3):
        common.hand_over(f"#### Part {i}\n\n| x |\n|---|\n| {i} |\n", md)
        texts.append(md.read_text())
    common.hand_over("\n".join(texts), md)
    written = md.read_text()
    assert written.count("<!-- provenance:") == 1
    assert written.rstrip().endswith("-->")
    assert len(json.loads(md.with_suffix(".json").read_text())["tables"]) == 3


def test_rewriting_the_data_keeps_the_recorded_provenance(tmp_path, common):
    """hand_over.py rewrites the data of outputs already there: it must not make a
    stale output look fresh."""
    md = tmp_path / "old.md"
    stamp = {"commit": "c0ffee", "dirty": True, "source_digest": "b" * 64}
    md.write_text(stamp_text("#### Old\n\n| x |\n|---|\n| 1 |\n", stamp))
    common.hand_over(md.read_text(), md, stamp=False)
    assert json.loads(md.with_suffix(".json").read_text())["provenance"] == stamp
    assert read_stamp(md.read_text()) == stamp
    assert "made with tcca_core source bbbbbbbbbbbb" in stale_reason(md, "c" * 64)
    unstamped = tmp_path / "none.md"
    unstamped.write_text("#### None\n")
    unstamped.with_suffix(".json").write_text(json.dumps({"provenance": stamp}))
    common.hand_over(unstamped.read_text(), unstamped, stamp=False)
    assert "provenance" not in json.loads(unstamped.with_suffix(".json").read_text())
