"""``results_dir``, ``data_root`` and ``fit_cache`` must each be a folder of its own.

Each refused value is tried one by one, in a git repository laid out like this one:
the working directory or anything above it, the repository's ``.git``, a folder git
tracks files in (sources, configuration, the workflow, benchmarks), a system folder,
and symbolic links to them. The run's own folders, and the quick and ``.test``
configurations of the real repository, still pass.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tcca_core.pipeline.config import ConfigError, check_paths, load_yaml
from tcca_core.pipeline.locations import path_problems

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["results_dir", "data_root", "fit_cache"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A git repository with tracked config/, src/, workflow/, benchmarks/, docs/
    and results/README.md, and links to its root and to src/."""
    work = tmp_path_factory.mktemp("repo") / "repo"
    for name in (
        "config/config.yaml", "src/pkg/a.py", "workflow/Snakefile",
        "benchmarks/b.py", "docs/index.md", "results/README.md", "README.md",
    ):  # fmt: skip
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text("x\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "."], check=True)
    (work / "to_root").symlink_to(work)
    (work / "to_src").symlink_to(work / "src")
    return work


def _problem(key, given, work):
    return dict(path_problems({key: given}, workdir=work, home=work / "home")).get(key)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(
    ("given", "why"),
    [
        (".", "the working directory itself"),
        ("./", "the working directory itself"),
        ("..", "above the working directory"),
        ("../..", "above the working directory"),
        ("to_root", "the working directory itself"),
        ("to_root/..", "above the working directory"),
        (".git", "inside the repository's .git"),
        (".git/x", "inside the repository's .git"),
        ("config", "inside config/"),
        ("config/out", "inside config/"),
        ("src", "inside src/"),
        ("src/pkg", "inside src/"),
        ("to_src", "inside src/"),
        ("workflow", "inside workflow/"),
        ("benchmarks", "inside benchmarks/"),  # tracked, though not a source folder
        ("docs/x", "inside docs/"),
        ("/etc", "in /etc, a folder of the system"),
        ("/etc/tcca", "in /etc, a folder of the system"),
        ("/usr/local/share/x", "in /usr, a folder of the system"),
        ("/var", "a folder of the system"),
        ("/tmp", "a folder of the system"),
        ("/home", "a folder of the system"),
    ],
)
def test_a_folder_that_is_not_its_own_is_refused(repo, key, given, why):
    problem = _problem(key, given, repo)
    assert problem is not None and why in problem, (given, problem)
    assert "choose a folder of its own" in problem


@pytest.mark.parametrize("key", KEYS)
def test_refusals_are_one_line_each(repo, key):
    with pytest.raises(ConfigError) as err:
        check_paths({key: "."}, workdir=repo, home=repo / "home")
    first, hint = str(err.value).splitlines()
    assert first.startswith(f"invalid config: {key}: '.' is the working directory")
    assert hint == "(see config/README.md)"


def test_a_link_says_where_it_leads(repo):
    problem = _problem("results_dir", "to_root", repo)
    assert f"(a link to {repo})" in problem


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(
    "given",
    ["results/quick", "results/x/y", "data", "data/x", ".cache/fits", "out", "logs/x"],
)
def test_the_runs_own_folders_are_accepted(repo, key, given):
    assert _problem(key, given, repo) is None


def test_a_folder_outside_the_repository_is_accepted(repo, tmp_path):
    for key in KEYS:
        assert _problem(key, str(tmp_path / "elsewhere"), repo) is None


def test_the_published_folder_is_still_the_full_runs_results_dir(repo):
    assert _problem("results_dir", "results", repo) is None


@pytest.mark.parametrize(
    ("workdir", "files"),
    [
        (ROOT, ["config/config.yaml"]),
        (ROOT, ["config/config.yaml", "config/quick.yaml"]),
        (ROOT / ".test", [".test/config/config.yaml"]),
    ],
)
def test_the_repositorys_configurations_pass(workdir, files):
    cfg: dict = {}
    for name in files:
        cfg.update(load_yaml(ROOT / name))
    cfg.setdefault("results_dir", "results/quick")
    cfg.pop("mirror", None)  # a folder of the machine that ran the tests
    assert path_problems(cfg, workdir=workdir, home=ROOT / "no-home") == []
