"""Packaging metadata: LICENSE, CITATION.cff, py.typed and an
environment.yml that matches pyproject.toml; the `tcca` import alias and the pinned
environment: lock file, conda environment, Dockerfile, lock digest in the summary."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The extras environment.yml installs (bench, dev and lint are left to pip).
ENV_EXTRAS = ("test", "pipeline", "docs")


def _norm(requirement: str) -> tuple[str, str]:
    """(PEP 503 name, specifier without spaces) of 'name>=1.0' or 'name >=1.0'."""
    m = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*?)\s*", requirement)
    assert m, requirement
    name = re.sub(r"[-_.]+", "-", m.group(1)).lower()
    return name, m.group(2).replace(" ", "")


def test_environment_yml_is_the_lock_and_pyproject():
    """environment.yml pins what the lock pins (the package's dependencies, its
    test, pipeline and docs extras) at the lock's versions and Python at the
    published one."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    project = PYPROJECT["project"]
    pins = _lock_pins()
    expected = {}
    for extra in ENV_EXTRAS:
        expected.update(_norm(r) for r in project["optional-dependencies"][extra])
    expected.update(_norm(r) for r in project["dependencies"])
    for name in expected:
        if name in pins:
            expected[name] = "==" + pins[name]
    assert {k for k, v in expected.items() if not v.startswith("==")} == set()
    got = dict(_norm(d) for d in conda)
    summary = json.loads((ROOT / "results" / "summary.json").read_text())
    assert got.pop("python") == "=" + summary["provenance"]["machine"]["python"]
    assert got.pop("pip") == ""
    missing = {k: v for k, v in expected.items() if got.get(k) != v}
    extra = {k: v for k, v in got.items() if k not in expected}
    assert not missing, f"environment.yml lacks or differs for {missing}"
    assert not extra, f"environment.yml has {extra}, which pyproject.toml lacks"
    assert pip == ["-e ."]
    # snakemake and its plugins come from bioconda, over conda-forge
    assert env["channels"][:2] == ["conda-forge", "bioconda"]


def test_license_and_citation():
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in license_text
    assert PYPROJECT["project"]["license"] == "BSD-3-Clause"
    assert "LICENSE" in PYPROJECT["project"]["license-files"]

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    from packaging.version import Version

    changelog = (ROOT / "CHANGELOG.md").read_text()
    # the citation names the latest release (CHANGELOG.md's latest released heading);
    # the package may be a development version after it
    released = re.findall(r"^## (\d+\.\d+\.\d+)(?!.*unreleased)", changelog, re.M)
    assert cff["version"] == released[0], (cff["version"], released)
    assert str(cff["date-released"]) in changelog
    assert Version(PYPROJECT["project"]["version"]) >= Version(cff["version"])
    assert cff["license"] == PYPROJECT["project"]["license"]
    paper = cff["preferred-citation"]
    assert paper["doi"] == "10.1109/TKDE.2015.2445757"
    assert [a["family-names"] for a in paper["authors"]] == [
        "Luo",
        "Tao",
        "Wen",
        "Ramamohanarao",
        "Xu",
    ]
    assert (paper["volume"], paper["issue"], paper["year"]) == (27, 11, 2015)


def test_py_typed_ships():
    assert (ROOT / "src" / "tcca_core" / "py.typed").is_file()
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["tcca_core"]


# -------------------------------------------------------------- the import names
# These three need neither the repository's files nor Snakemake: CI runs them against
# the installed wheel too (.ci/run).


def test_tcca_is_an_alias_of_tcca_core():
    import tcca
    import tcca_core

    assert tcca.TCCA is tcca_core.TCCA and tcca.KTCCA is tcca_core.KTCCA
    assert tcca.tcca is tcca_core.tcca
    assert tcca.model_selection is tcca_core.model_selection
    assert (
        tcca.__all__ == tcca_core.__all__ and tcca.__version__ == tcca_core.__version__
    )
    assert set(tcca_core.__all__) <= set(dir(tcca))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tcca.nope  # noqa: B018


def _public_modules(package) -> list[str]:
    """Dotted names of a package's modules with no component starting with "_"."""
    import pkgutil

    found = pkgutil.walk_packages(package.__path__, package.__name__ + ".")
    return sorted(
        m.name
        for m in found
        if not any(part.startswith("_") for part in m.name.split(".")[1:])
    )


def test_tcca_mirrors_every_public_module_of_tcca_core():
    import importlib

    import tcca
    import tcca_core

    names = _public_modules(tcca_core)
    # the walk itself could fail quietly (an empty or truncated list)
    assert {
        "tcca_core.datasets",
        "tcca_core.compose",
        "tcca_core.pipeline.plan",
    } <= set(names)
    for name in names:
        alias = "tcca" + name[len("tcca_core") :]
        try:
            real = importlib.import_module(name)
        except ImportError as exc:  # an optional dependency: the alias says the same
            with pytest.raises(ImportError, match=re.escape(str(exc))):
                importlib.import_module(alias)
            continue
        parent, _, leaf = name.rpartition(".")
        seen = getattr(sys.modules[parent], leaf)
        if seen is not real:  # the package re-exports a function of the same name
            with pytest.raises(ModuleNotFoundError, match="is not mirrored"):
                importlib.import_module(alias)
        else:
            assert importlib.import_module(alias) is real, alias
        # either way the package seen through tcca holds what tcca_core's holds,
        # and mirroring changed nothing there
        assert getattr(sys.modules[parent], leaf) is seen, name
        assert getattr(sys.modules["tcca" + parent[len("tcca_core") :]], leaf) is seen
    # the documented import paths (docs/install.md)
    from tcca.compose import ViewSplitter
    from tcca.datasets import load

    assert ViewSplitter is tcca_core.compose.ViewSplitter
    assert load is tcca_core.datasets.load
    assert tcca.datasets is tcca_core.datasets
    # private modules are not part of the mirror
    with pytest.raises(ImportError):
        importlib.import_module("tcca._validation")


def test_both_packages_ship_their_type_marker():
    from importlib import resources

    for package in ("tcca_core", "tcca"):
        assert (resources.files(package) / "py.typed").is_file(), package


def test_datasets_command_line_answers_help():
    res = subprocess.run(
        [sys.executable, "-m", "tcca_core.datasets", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert "usage:" in res.stdout


# -------------------------------------------------------- the pinned environment

LOCK = ROOT / "requirements" / "lock.txt"


def _lock_pins() -> dict[str, str]:
    """{PEP 503 name: version} of requirements/lock.txt for the published Python
    (a pin with an environment marker counts where the marker holds there); every
    pin has its hashes."""
    from packaging.markers import Marker

    python = json.loads((ROOT / "results" / "summary.json").read_text())["provenance"][
        "machine"
    ]["python"]
    env = {"python_full_version": python, "python_version": python.rsplit(".", 1)[0]}
    pins = {}
    text = LOCK.read_text()
    for block in re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2]):
        m = re.match(
            r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;([^\\\n]*))?", block
        )
        assert m, block[:200]
        assert "--hash=sha256:" in block, f"{m.group(1)} has no hash"
        if m.group(3) and not Marker(m.group(3).strip()).evaluate(env):
            continue
        pins[_norm(m.group(1))[0]] = m.group(2)
    return pins


def test_lock_pins_the_published_environment():
    """The lock meets pyproject's requirements (the package, its test and pipeline
    extras) and pins the versions that produced the published results/summary.json."""
    from packaging.requirements import Requirement

    pins = _lock_pins()
    project = PYPROJECT["project"]
    wanted = [*project["dependencies"]]
    for extra in ("pipeline", "test"):
        wanted += project["optional-dependencies"][extra]
    for line in wanted:
        req = Requirement(line)
        name = _norm(req.name)[0]
        assert name in pins, f"the lock lacks {name}"
        assert req.specifier.contains(pins[name]), (line, pins[name])
    summary = json.loads((ROOT / "results" / "summary.json").read_text())
    published = summary["provenance"]["versions"]
    for name, version in published.items():
        if name != "tcca" and version is not None:
            assert pins[_norm(name)[0]] == version, (name, version)


def test_conda_environment_of_the_rules_is_pinned_to_the_lock():
    env = yaml.safe_load((ROOT / "workflow" / "envs" / "tcca.yaml").read_text())
    pins = _lock_pins()
    summary = json.loads((ROOT / "results" / "summary.json").read_text())
    conda_names = {"matplotlib-base": "matplotlib"}
    pinned = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            assert dep == {"pip": ["-e ../.."]}  # the project itself, from the checkout
            continue
        name, _, spec = dep.partition(" ")
        if name == "python":
            assert spec == "=" + summary["provenance"]["machine"]["python"]
        elif name not in ("pip", "libblas"):
            assert spec == "==" + pins[conda_names.get(name, name)], dep
            pinned.add(conda_names.get(name, name))
    # every requirement of the package is pinned there
    required = {_norm(r)[0] for r in PYPROJECT["project"]["dependencies"]}
    assert required <= pinned, required - pinned


def test_dockerfile_installs_the_lock_with_its_hashes():
    text = (ROOT / "Dockerfile").read_text()
    summary = json.loads((ROOT / "results" / "summary.json").read_text())
    python = summary["provenance"]["machine"]["python"]
    assert f"FROM python:{python}-" in text
    assert "pip install --require-hashes -r requirements/lock.txt" in text
    assert "pip install --no-build-isolation --no-deps . && python -m pip check" in text


def test_lock_pins_the_build_backend_and_every_extra_ci_installs():
    """Everything CI installs from pyproject.toml (.ci/run's ``-e ".[...]"`` extras)
    and the build backend (``[build-system] requires``, which the Dockerfile builds
    with, without build isolation) is pinned, with hashes, and meets pyproject."""
    from packaging.requirements import Requirement

    pins = _lock_pins()
    run = (ROOT / ".ci" / "run").read_text()
    extras = set()
    for group in re.findall(r'-e "\.\[([a-z,]+)\]"', run):
        extras |= set(group.split(","))
    assert {"test", "pipeline", "dask", "docs", "lint", "packaging"} <= extras
    project = PYPROJECT["project"]
    wanted = list(PYPROJECT["build-system"]["requires"])
    for extra in sorted(extras):
        wanted += project["optional-dependencies"][extra]
    build_in = (ROOT / "requirements" / "build.in").read_text().split()
    assert set(PYPROJECT["build-system"]["requires"]) <= set(build_in)
    for line in wanted:
        req = Requirement(line)
        name = _norm(req.name)[0]
        assert name in pins, f"the lock lacks {name}"
        assert req.specifier.contains(pins[name]), (line, pins[name])
    header = LOCK.read_text().splitlines()[1]
    assert "requirements/build.in" in header
    for extra in extras:
        assert f"--extra {extra}" in header, extra


def test_summary_provenance_records_the_lock_digest(tmp_path):
    from tcca_core.reporting import provenance

    # a checkout with a lock: found from the workflow's folder (workflow.basedir)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "lock.txt").write_bytes(b"numpy==2\n")
    (tmp_path / "workflow").mkdir()
    prov = provenance({"seed": 1}, repo=tmp_path / "workflow")
    assert prov["lock_sha256"] == hashlib.sha256(b"numpy==2\n").hexdigest()
    # none: null, and the search stops at the checkout's top
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "pyproject.toml").write_text("")
    assert provenance({}, repo=tmp_path / "inner")["lock_sha256"] is None
    # this checkout's
    digest = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    assert provenance({}, repo=ROOT / "workflow")["lock_sha256"] == digest


def test_the_wheel_says_who_what_where_and_has_the_data_command():
    """Authors (as CITATION.cff), classifiers, the paper's URL and the console
    script ``tcca-datasets``, which is the data command's own entry point."""
    import importlib

    project = PYPROJECT["project"]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert [a["name"] for a in project["authors"]] == [
        a["name"] for a in cff["authors"]
    ]
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    assert "Typing :: Typed" in project["classifiers"]  # py.typed ships
    # PEP 639: the license is the SPDX expression, never also a classifier
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    doi = cff["preferred-citation"]["doi"]
    assert project["urls"]["Paper"] == f"https://doi.org/{doi}"
    module, _, attr = project["scripts"]["tcca-datasets"].partition(":")
    main = getattr(importlib.import_module(module), attr)
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0


def test_the_mirror_leaves_each_module_its_own_spec():
    """Importing through ``tcca`` keeps every tcca_core module's own __spec__, so
    the relative imports inside its functions raise no ImportWarning."""
    import subprocess

    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import tcca_core.compose, tcca.compose, tcca.datasets\n"
        "assert tcca_core.compose.__spec__.name == 'tcca_core.compose'\n"
        "assert tcca.datasets.__spec__.name == 'tcca_core.datasets'\n"
        "import numpy as np; from tcca_core import TCCA\n"
        "v = [np.random.default_rng(p).standard_normal((40, 3)) for p in range(3)]\n"
        "TCCA(2, random_state=0, max_iter=3, tol=0).fit(v)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
