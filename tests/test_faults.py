"""Faults of the library and of the workflow scripts.

- a fit that would need an explicit moment tensor larger than allowed refuses before
  allocating anything large, naming the size and the cheaper (implicit) route;
- prepared data are never unpickled: a views.npz with an object array (a pickle, which
  could run code) is refused by the loader with a clear error, and the code in it
  never runs;
- a workflow script killed mid-write leaves no partial file under the output's name.
"""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tcca_core.solver.dense as T
from tcca_core import KTCCA, TCCA, datasets
from tcca_core.datasets import _prepared, mfeat

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"


# ------------------------------------------------------------------ memory refusal


@pytest.fixture
def no_dense_tensor(monkeypatch):
    """Make building a dense moment tensor an error: the refusal must come first."""

    def forbidden(*args, **kwargs):
        raise AssertionError("the dense tensor was built")

    monkeypatch.setattr(T, "dense_moment", forbidden)


@pytest.mark.usefixtures("no_dense_tensor", "single_blas_thread")
@pytest.mark.parametrize(
    ("make", "dims", "gib"),
    [
        # 4 views of 150, 150, 150, 100 features: a 2.5 GiB covariance tensor
        (lambda: TCCA(2, algorithm="dense"), (150, 150, 150, 100), "2.5 GiB"),
        (lambda: TCCA(2, algorithm="tensorly"), (150, 150, 150, 100), "2.5 GiB"),
        # KTCCA's tensor is N^m: 4 views of 170 samples, 6.2 GiB
        (lambda: KTCCA(2, algorithm="dense"), (3, 3, 3, 3), "6.2 GiB"),
    ],
    ids=["tcca-dense", "tcca-tensorly", "ktcca-dense"],
)
def test_explicit_tensor_too_large_refuses_before_allocating(make, dims, gib):
    rng = np.random.default_rng(0)
    views = [rng.standard_normal((170, d)) for d in dims]
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as err:
            make().fit(views)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(err.value)
    assert gib in msg and "more than the 2 GiB allowed" in msg, msg
    assert "algorithm='implicit'" in msg, msg  # the cheaper route
    assert " x ".join(map(str, [170] * 4 if dims[0] == 3 else dims)) in msg
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB allocated before refusing"
    # the same fit through the implicit engine works (and allocates little)
    est = make().set_params(algorithm="auto").fit(views)
    assert est.algorithm_ == "implicit"


# ------------------------------------------------------------------------ pickles


class _Payload:
    """Unpickling it creates a file: proof that code in a pickle runs on load."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _fake_prepared_mfeat(root: Path, arrays: dict) -> Path:
    """A prepared-mfeat cache the loader accepts as up to date, with our views.npz."""
    pdir = root / "prepared" / "mfeat"
    pdir.mkdir(parents=True)
    npz = pdir / _prepared.VIEWS_FILE
    np.savez(npz, **arrays)  # savez pickles object arrays (allow_pickle=True)
    manifest = {
        "format_version": _prepared.FORMAT_VERSION,
        "dataset": "mfeat",
        "options": {},
        "inputs": {
            name: {"sha256": sha, "pinned": True}
            for name, sha in mfeat.SPEC.pinned().items()
        },
        "n_samples": 1,
        "view_names": ["a", "b"],
        "view_dims": [1, 1],
        "view_formats": ["dense", "dense"],
        "extra": [],
        "files": {_prepared.VIEWS_FILE: {"size": npz.stat().st_size}},
    }
    (pdir / _prepared.MANIFEST).write_text(json.dumps(manifest))
    return npz


@pytest.mark.parametrize("member", ["view0", "y"])
def test_loader_refuses_pickled_arrays(tmp_path, member):
    marker = tmp_path / "pwned"
    evil = np.array([_Payload(marker)], dtype=object)
    arrays = {"view0": np.zeros((1, 1)), "view1": np.zeros((1, 1)), member: evil}
    npz = _fake_prepared_mfeat(tmp_path / "data", arrays)
    with pytest.raises(_prepared.UnsafeFileError) as err:
        datasets.load("mfeat", root=tmp_path / "data")
    msg = str(err.value)
    assert str(npz) in msg and "pickled object array" in msg, msg
    assert "allow_pickle=False" in msg and "prepare the data set again" in msg
    assert isinstance(err.value, ValueError)
    assert not marker.exists()  # the payload never ran
    # control: the payload is live, unpickling it would have run it
    with np.load(npz, allow_pickle=True) as z:
        z[member]
    assert marker.exists()


_PICKLERS = frozenset(
    {"pickle", "_pickle", "cPickle", "joblib", "dill", "cloudpickle", "shelve"}
)


def _pickle_uses(tree: ast.AST) -> list[str]:
    """What in a parsed module could unpickle: imports of a pickling library (any
    use, loading or not), ``read_pickle``/``Unpickler``/``__reduce__`` names,
    ``np.load`` without ``allow_pickle=False``, and ``allow_pickle=True``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in _PICKLERS]
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in _PICKLERS:
                found.append(f"from {node.module} import")
        elif isinstance(node, ast.Attribute | ast.Name):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name in {"read_pickle", "Unpickler", "loads_pickle"} | _PICKLERS:
                found.append(name)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.split(".")[0] in _PICKLERS:  # __import__("pickle")
                found.append(repr(node.value))
        if isinstance(node, ast.keyword) and node.arg == "allow_pickle":
            if not (isinstance(node.value, ast.Constant) and node.value.value is False):
                found.append("allow_pickle not False")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "load" and getattr(node.func.value, "id", "") in (
                "np",
                "numpy",
            ):
                if not any(k.arg == "allow_pickle" for k in node.keywords):
                    found.append("np.load without allow_pickle=False")
    return found


def test_no_unpickling_anywhere_in_the_code():
    """Nothing is ever unpickled, without exceptions: no module of src/
    or workflow/ imports pickle, joblib, dill, cloudpickle or shelve, and every
    np.load passes allow_pickle=False. The fit cache stores .npz + JSON."""
    files = [*(REPO / "src").rglob("*.py"), *(REPO / "workflow").rglob("*.py")]
    assert len(files) > 20
    for path in files:
        assert not _pickle_uses(ast.parse(path.read_text())), path
    # Snakemake files are not plain Python: search their text
    bad = re.compile(
        r"^\s*(import|from)\s+(" + "|".join(sorted(_PICKLERS)) + r")\b"
        r"|read_pickle|Unpickler|allow_pickle\s*=\s*True"
    )
    for path in [*(REPO / "workflow").rglob("*.smk"), REPO / "workflow" / "Snakefile"]:
        for line in path.read_text().splitlines():
            assert not bad.search(line), f"{path}: {line.strip()}"
            if "np.load(" in line:
                assert "allow_pickle=False" in line, f"{path}: {line.strip()}"


@pytest.mark.parametrize(
    "source",
    [
        "import pickle",
        "import joblib as jl",
        "from dill import loads",
        "import cloudpickle.cloudpickle",
        "x = pd.read_pickle(path)",
        "u = __import__('pickle')",
        "a = np.load(path)",
        "a = np.load(path, allow_pickle=True)",
        "a = numpy.load(path, allow_pickle=flag)",
    ],
)
def test_pickle_rule_catches(source):
    """Control for the rule above: each of these is caught."""
    assert _pickle_uses(ast.parse(source))
    assert not _pickle_uses(ast.parse("a = np.load(path, allow_pickle=False)"))


# ------------------------------------------------------------------- atomic writes


def test_atomic_write(tmp_path):
    from tcca_core._io import atomic_write

    out = tmp_path / "sub" / "fit.csv"
    with atomic_write(out) as part:  # an open file, written through its descriptor
        part.write(b"a,b\n1,2\n")
        assert not out.exists()
    assert out.read_text() == "a,b\n1,2\n"
    with pytest.raises(RuntimeError), atomic_write(out) as part:
        part.write(b"half")
        raise RuntimeError("boom")
    assert out.read_text() == "a,b\n1,2\n"  # old one kept
    with atomic_write(out, unique_prefix=".part-1~") as part:  # concurrent writers
        (tmp,) = (p for p in out.parent.iterdir() if p != out)
        assert tmp.name.startswith(".part-1~") and tmp.suffix == ".csv"
        part.write(b"c\n")
    assert out.read_text() == "c\n"
    assert [p.name for p in out.parent.iterdir()] == ["fit.csv"]  # no leftovers


def test_script_killed_mid_write_leaves_no_partial_output(tmp_path):
    """SIGKILL in the middle of writing: nothing under the final name."""
    code = textwrap.dedent(
        f"""
        import os, signal
        from tcca_core._io import atomic_write
        with atomic_write({str(tmp_path / "fit.csv")!r}) as part:
            part.write(b"dataset,setting,method\\n" * 1000)
            part.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    res = subprocess.run([sys.executable, "-c", code], check=False, timeout=120)
    assert res.returncode == -signal.SIGKILL
    assert not (tmp_path / "fit.csv").exists()
    (left,) = tmp_path.glob(".fit.csv.*.part")  # what the killed writer wrote
    assert left.stat().st_size > 0


# Files that may write or rename outside atomic_write: the helper itself, the raw
# files' writes (datasets/_files.py: a download's .part persists between attempts on
# purpose; datasets/_archive.py moves extracted entries into place) and NUS-WIDE's
# archive extraction (moves whole extracted folders into place).
_OWN_WRITERS = {
    "_io.py",
    "datasets/_files.py",
    "datasets/_archive.py",
    "datasets/nuswide.py",
}
_PART_NAMES = {"part", "tmp"}


def _unsafe_writes(tree: ast.AST) -> list[str]:
    """Writes that do not go through atomic_write's temporary path."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        first = node.args[0] if node.args else None
        target = first.id if isinstance(first, ast.Name) else None
        if name in ("write_text", "write_bytes", "replace", "rename") and (
            name in ("write_text", "write_bytes")
            or (isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "os")
        ):
            found.append(f"{name} (line {node.lineno})")
        elif name in ("to_csv", "savefig", "to_json") and first is not None:
            if target in _PART_NAMES:  # to a path, not to a string
                continue
            found.append(f"{name} (line {node.lineno})")
        elif name == "open" and isinstance(f, ast.Name) and len(node.args) > 1:
            mode = node.args[1]
            writes = isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wa")
            if writes and target not in (*_PART_NAMES, "log"):
                found.append(f"open for writing (line {node.lineno})")
    return found


def test_every_writer_is_atomic():
    """Rule: the library and the workflow write files only through
    tcca_core._io.atomic_write (a job killed mid-write leaves no partial output)."""
    src = REPO / "src" / "tcca_core"
    files = [*src.rglob("*.py"), *(REPO / "workflow").rglob("*.py")]
    bad = {}
    for path in files:
        rel = path.relative_to(src).as_posix() if src in path.parents else str(path)
        if rel in _OWN_WRITERS:
            continue
        found = _unsafe_writes(ast.parse(path.read_text()))
        if found:
            bad[rel] = found
    assert not bad, bad


@pytest.mark.parametrize(
    "source",
    [
        "Path(p).write_text(s)",
        "os.replace(a, b)",
        "df.to_csv(out.fit)",
        "fig.savefig(path)",
        "f = open(path, 'w')",
    ],
)
def test_atomic_rule_catches(source):
    """Control for the rule above: each of these is caught."""
    assert _unsafe_writes(ast.parse(source))
    assert not _unsafe_writes(ast.parse("df.to_csv(part)\nopen(part, 'w')"))


# --------------------------------------------------------------- callable kernels


def _kernel_bad_at_transform(bad):
    """A linear kernel that misbehaves (``bad(K)``) between new and training rows."""

    def kernel(A, B):
        K = A @ B.T
        return K if A is B or np.array_equal(A, B) else bad(K)

    return kernel


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (lambda K: K[:, :-1], r"kernel function returned an array of shape \(7, 29\)"),
        (lambda K: K.T, r"returned an array of shape \(30, 7\) for 7 and 30 samples"),
        (lambda K: K[0], r"must have shape \(7, 30\)"),
        (lambda K: K * np.nan, "contains NaN or infinity"),
    ],
    ids=["columns", "transposed", "1-D", "nan"],
)
@pytest.mark.parametrize("estimator", ["ktcca", "kcca"])
def test_callable_kernel_output_is_checked_at_transform(bad, match, estimator):
    """A callable kernel's output is checked at transform as at fit: a wrong shape
    or NaN is named (it used to give NaN outputs or a bare matmul error)."""
    from tcca_core.baselines import KCCA

    rng = np.random.default_rng(0)
    views = [rng.standard_normal((30, d)) for d in (3, 4, 3)]
    new = [rng.standard_normal((7, d)) for d in (3, 4, 3)]
    kernel = _kernel_bad_at_transform(bad)
    if estimator == "ktcca":
        est = KTCCA(2, kernel=[kernel, "linear", "linear"], random_state=0)
    else:
        est = KCCA(2, kernel=[kernel, "linear"])
        views, new = views[:2], new[:2]
    est.fit(views)
    with pytest.raises(ValueError, match=match):
        est.transform(new)
    good = KTCCA if estimator == "ktcca" else KCCA
    good = good(2, kernel="linear", **({"random_state": 0} if good is KTCCA else {}))
    assert np.all(np.isfinite(good.fit(views).transform(new)))  # control


def test_callable_kernel_output_is_checked_at_fit():
    from tcca_core.kernels import ViewKernel

    X = np.random.default_rng(0).standard_normal((10, 3))
    with pytest.raises(ValueError, match=r"returned an array of shape \(10, 9\)"):
        ViewKernel(lambda A, B: (A @ B.T)[:, 1:]).fit(X)
