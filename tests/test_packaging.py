"""Packaging metadata (issue #17, B): LICENSE, CITATION.cff, py.typed and an
environment.yml that matches pyproject.toml."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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


def test_environment_yml_matches_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    project = PYPROJECT["project"]
    expected = dict(_norm(r) for r in project["dependencies"])
    for extra in ENV_EXTRAS:
        expected.update(_norm(r) for r in project["optional-dependencies"][extra])
    got = dict(_norm(d) for d in conda)
    assert got.pop("python") == project["requires-python"]
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
    assert cff["version"] == PYPROJECT["project"]["version"]
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
