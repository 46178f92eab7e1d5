"""Clean provenance: the published results come from a clean commit of this history.

The full configuration writes the published results (``results/``,
REPRODUCTION.md) only from a git checkout with no change outside what the run
itself writes (:func:`tcca_core.reporting.provenance.publish_problem`): the workflow
refuses before its first job, and again when it writes the summary, which then
records the commit with ``"dirty": false``. A dry run still shows the plan, and a
run into any other folder is never refused. See config/README.md, Clean provenance.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from _scripts import load_script
from _snakemake import snakemake
from tcca_core.reporting.provenance import (
    provenance,
    publish_problem,
    publishes,
    source_digest,
    tree_state,
)

REPO = Path(__file__).resolve().parents[1]
SUMMARY = REPO / "results" / "summary.json"
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(cwd, *args) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A committed checkout: code, an ignored folder, published outputs."""
    repo = tmp_path / "repo"
    (repo / "results" / "tables").mkdir(parents=True)
    (repo / "src").mkdir()
    files = {
        ".gitignore": "/data/\n/results/*\n!/results/summary.json\n",
        "src/code.py": "x = 1\n",
        "results/summary.json": "{}\n",
        "REPRODUCTION.md": "# R\n",
    }
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    return repo


# ------------------------------------------------------------ what is dirty


@needs_git
def test_a_clean_checkout_is_clean(checkout):
    state = tree_state(checkout)
    assert state == {
        "commit": git(checkout, "rev-parse", "HEAD"),
        "dirty": False,
        "changed": [],
        "error": None,
    }
    assert publish_problem(checkout, checkout / "results") is None


@needs_git
def test_what_the_run_writes_does_not_count(checkout):
    (checkout / "results" / "summary.json").write_text('{"new": 1}\n')
    (checkout / "results" / "tables" / "t.md").write_text("| a |\n")
    (checkout / "REPRODUCTION.md").write_text("# R again\n")
    (checkout / "investigations" / "results").mkdir(parents=True)
    (checkout / "investigations" / "results" / "x.md").write_text("an output\n")
    (checkout / "data").mkdir()
    (checkout / "data" / "big.npz").write_text("ignored")
    assert tree_state(checkout)["dirty"] is False
    assert tree_state(checkout / "results")["dirty"] is False  # from a subfolder


@needs_git
@pytest.mark.parametrize("change", ["edit", "staged", "untracked", "deleted"])
def test_changes_outside_the_outputs_make_it_dirty(checkout, change):
    code = checkout / "src" / "code.py"
    if change == "edit":
        code.write_text("x = 2\n")
        name = "src/code.py"
    elif change == "staged":
        code.write_text("x = 2\n")
        git(checkout, "add", "src/code.py")
        name = "src/code.py"
    elif change == "untracked":
        (checkout / "notes.txt").write_text("a new file\n")
        name = "notes.txt"
    else:
        code.unlink()
        name = "src/code.py"
    state = tree_state(checkout)
    assert state["dirty"] is True and state["changed"] == [name]
    problem = publish_problem(checkout, checkout / "results")
    assert "\n" not in problem and name in problem
    assert "commit" in problem and "results_dir=results/full" in problem


@needs_git
def test_a_refusal_names_the_first_paths_and_counts_the_rest(checkout):
    for i in range(8):
        (checkout / "src" / f"new{i}.py").write_text("")
    problem = publish_problem(checkout, checkout / "results", shown=3)
    assert "src/new0.py, src/new1.py, src/new2.py and 5 more" in problem


@needs_git
def test_a_rename_is_named_once(checkout):
    git(checkout, "mv", "src/code.py", "src/moved.py")
    assert tree_state(checkout)["changed"] == ["src/moved.py"]


@needs_git
def test_only_the_checkouts_own_results_are_published(checkout, tmp_path):
    (checkout / "notes.txt").write_text("dirty\n")
    assert publishes(checkout, checkout / "results")
    # another folder of the checkout, or another working directory's results/
    assert publish_problem(checkout, checkout / "results" / "full") is None
    assert publish_problem(checkout, tmp_path / "elsewhere" / "results") is None
    link = tmp_path / "link"
    link.symlink_to(checkout / "results")
    assert publishes(checkout, link)  # a link to results/ is results/


def test_without_a_checkout_nothing_is_published(tmp_path):
    (tmp_path / "results").mkdir()
    state = tree_state(tmp_path)
    assert state["commit"] is None and state["dirty"] is None and state["error"]
    problem = publish_problem(tmp_path, tmp_path / "results")
    assert "not a git checkout" in problem and "results_dir=results/full" in problem


def test_without_git_nothing_is_published(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert tree_state(REPO)["commit"] is None
    assert "not a git checkout" in publish_problem(REPO, REPO / "results")


@needs_git
def test_the_provenance_records_the_commit_and_the_source_digest(checkout):
    prov = provenance({"seed": 0}, repo=checkout)
    assert prov["git"] == {"commit": git(checkout, "rev-parse", "HEAD"), "dirty": False}
    assert prov["source_digest"] == source_digest()


# ------------------------------------------------- the workflow refuses early


@pytest.fixture(scope="module")
def workflow_checkout(tmp_path_factory) -> Path:
    """A clone-like checkout of the workflow whose full configuration is a one-table
    cut of the integration fixture (.test/), with the look-alike data in a mirror."""
    repo = tmp_path_factory.mktemp("published") / "repo"
    shutil.copytree(
        REPO / "workflow",
        repo / "workflow",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(REPO / "docs" / "investigations.md", repo / "docs.md")
    (repo / "docs").mkdir()
    shutil.move(repo / "docs.md", repo / "docs" / "investigations.md")
    # the published run's at-a-glance figure reads equal tuning's data (glance.smk)
    equal = Path("investigations") / "results" / "equal_tuning.json"
    (repo / equal.parent).mkdir(parents=True)
    shutil.copy(REPO / equal, repo / equal)
    config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    config["datasets"]["nuswide"]["settings"] = {
        "linear2": {
            **config["datasets"]["nuswide"]["settings"]["linear2"],
            "methods": {"bsf": {}},
        }
    }
    config["tables"] = {"nuswide_linear": config["tables"]["nuswide_linear"]}
    (repo / "config").mkdir()
    (repo / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    load_script(".test/make_fixture.py").write(repo / "mirror")
    (repo / ".gitignore").write_text(
        "/mirror/\n/data/\n/results/*\n/logs/\n.snakemake/\n__pycache__/\n"
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the workflow")
    return repo


def _run(repo, *args):
    res = snakemake("-s", str(repo / "workflow" / "Snakefile"), *args, cwd=repo)
    return res, res.stdout + res.stderr


@pytest.mark.slow  # three runs of the workflow, about 3.5 min (.ci/run runs it)
@needs_git
def test_the_full_configuration_publishes_only_from_a_clean_tree(workflow_checkout):
    """Dirty: the dry run shows the plan, the real run stops before any job; a run
    that skips that check (--no-hooks) stops at the summary; once committed, the
    summary names the commit, clean, with the library's digest. Then, dirty again:
    REPRODUCTION.md alone runs (it writes no number; tests/test_reproduction.py
    checks it against the committed summary), and another folder is not the
    published one.

    One test, not two: a second test reading this one's output skipped whenever
    pytest-xdist tore the module's checkout down between them (another module's
    test in between on the same worker)."""
    repo = workflow_checkout
    (repo / "notes.txt").write_text("not committed\n")

    res, out = _run(repo, "-n", "--cores", "1")
    assert res.returncode == 0, out[-3000:]
    assert "fit" in out and "refusing" not in out

    res, out = _run(repo, "--cores", "1")
    assert res.returncode != 0
    assert "refusing to write the published results" in out and "notes.txt" in out
    assert "results_dir=results/full" in out
    assert not (repo / "results").exists()  # no job ran

    res, out = _run(repo, "--cores", "2", "--no-hooks")
    assert res.returncode != 0
    assert "refusing to write the published results" in out, out[-3000:]
    assert (repo / "results" / "tables" / "nuswide_linear.json").is_file()
    assert not (repo / "results" / "summary.json").exists()

    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "the notes")
    res, out = _run(repo, "--cores", "2")
    assert res.returncode == 0, out[-3000:]
    prov = json.loads((repo / "results" / "summary.json").read_text())["provenance"]
    assert prov["git"] == {"commit": git(repo, "rev-parse", "HEAD"), "dirty": False}
    assert prov["source_digest"] == source_digest()
    assert prov["run"]["published"] is True

    (repo / "scratch.txt").write_text("dirty again\n")
    res, out = _run(repo, "--cores", "1", "reproduction")
    assert res.returncode == 0, out[-3000:]
    assert (repo / "REPRODUCTION.md").is_file()
    res, out = _run(repo, "-n", "--cores", "1", "--config", "results_dir=results/full")
    assert res.returncode == 0 and "refusing" not in out, out[-3000:]
    os.remove(repo / "scratch.txt")


# --------------------------------------------------- the committed summary


def test_published_summary_names_a_clean_commit_of_this_history():
    git_prov = json.loads(SUMMARY.read_text())["provenance"]["git"]
    assert git_prov["dirty"] is False, (
        f"results/summary.json was written from a dirty tree ({git_prov}): rerun "
        "the full grid from a clean commit"
    )
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    commit = git_prov["commit"]
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO, check=False
    )
    if known.returncode != 0 and git(REPO, "rev-parse", "--is-shallow-repository") == (
        "true"
    ):
        pytest.skip(f"a shallow clone: commit {commit} is not here")
    ancestor = subprocess.run(
        ["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=REPO, check=False
    )
    assert ancestor.returncode == 0, (
        f"results/summary.json names commit {commit}, which is not in this "
        "branch's history: rerun the full grid from a commit of it"
    )
