"""The configuration's files and folders, checked before any job.

- a key given twice in a YAML file is refused, naming the file, the key and the line
  (PyYAML, and so Snakemake, keeps the last one without a word);
- folders are compared with symbolic links resolved: a reduced run's ``results_dir``
  that is a link to the published folder is refused like the folder itself;
- ``/`` and the home folder are refused as ``results_dir``, ``data_root`` and
  ``fit_cache``; ``data_root`` and ``fit_cache`` may not lie in the published results;
- a ``mirror`` that does not exist is an error, not a run that skips every data set.

Unit tests of :mod:`tcca_core.pipeline.config_schema` and
:mod:`tcca_core.pipeline.locations`; the same checks run by Snakemake are in
tests/test_pipeline_faults.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tcca_core.pipeline.config_schema import ConfigError, check_config_files, load_yaml
from tcca_core.pipeline.locations import check_paths, path_problems, run_location

BASE = {"seed": 0, "n_splits": 5, "r_grid": "paper", "data_root": "data"}
QUICK = {**BASE, "n_splits": 2}


# ------------------------------------------------------------------ duplicate keys


def test_a_key_given_twice_is_refused_naming_file_key_and_line(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(
        "n_splits: 2\n"
        "datasets:\n"
        "  ads:\n"
        "    settings:\n"
        "      l100: {learner: rls, n_labeled: 10, learner: knn}\n"
        "n_splits: 5\n"
    )
    with pytest.raises(ConfigError) as err:
        load_yaml(f)
    lines = str(err.value).splitlines()
    assert lines == [
        f"invalid config: {f}, line 5: duplicate key "
        "'datasets.ads.settings.l100.learner' (first at line 5); give each key once "
        "(YAML would silently keep the last)",
        f"invalid config: {f}, line 6: duplicate key 'n_splits' (first at line 1); "
        "give each key once (YAML would silently keep the last)",
    ]


def test_keys_given_once_load_as_yaml_does(tmp_path):
    f = tmp_path / "ok.yaml"
    text = "a: 1\nb: {a: 2, c: [ {a: 3}, {a: 4} ]}\nbase: &x {k: 1}\nmore: {<<: *x, k: 2}\n"
    f.write_text(text)
    assert load_yaml(f) == {
        "a": 1,
        "b": {"a": 2, "c": [{"a": 3}, {"a": 4}]},
        "base": {"k": 1},
        "more": {"k": 2},  # a merge key's values may be overridden
    }


def test_every_config_file_is_checked(tmp_path):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text("n_splits: 2\n")
    bad.write_text("seed: 1\nseed: 2\n")
    check_config_files([good])
    with pytest.raises(ConfigError, match=r"bad.yaml, line 2: duplicate key 'seed'"):
        check_config_files([good, bad])


def test_the_repository_configs_have_no_duplicate_keys():
    repo = Path(__file__).resolve().parents[1]
    files = [*(repo / "config").glob("*.yaml"), repo / ".test/config/config.yaml"]
    check_config_files(files)
    load_yaml(repo / "workflow/schemas/config.schema.yaml")


# ------------------------------------------------------------------ folders


def _problems(cfg, work, home=None):
    return dict(path_problems(cfg, workdir=work, home=home or work / "home"))


@pytest.mark.parametrize("key", ["results_dir", "data_root", "fit_cache"])
def test_the_file_system_root_is_refused(tmp_path, key):
    (tmp_path / "root").symlink_to("/")
    for given in ("/", "root", "root/."):
        problems = _problems({**BASE, key: given}, tmp_path)
        assert "is the file system's root" in problems[key], (given, problems)
    assert "a link to /" in _problems({**BASE, key: "root"}, tmp_path)[key]


@pytest.mark.parametrize("key", ["results_dir", "data_root", "fit_cache"])
def test_the_home_folder_itself_is_refused(tmp_path, key):
    home = tmp_path / "home"
    home.mkdir()
    problems = _problems({**BASE, key: str(home)}, tmp_path, home)
    assert problems[key].endswith(
        "is your home folder: the run would write straight into it; choose a "
        "folder of its own"
    )
    # a folder in it is fine
    assert key not in _problems({**BASE, key: str(home / "x")}, tmp_path, home)


@pytest.mark.parametrize("key", ["data_root", "fit_cache"])
@pytest.mark.parametrize(
    ("given", "part"),
    [
        ("results", "results"),
        ("results/tables", "results/tables"),
        ("results/tables/cache", "results/tables"),
        ("./results/figures/x", "results/figures"),
        ("results/fits", "results/fits"),
        ("link", "results/tables"),  # a link to results/tables
    ],
)
def test_data_and_cache_may_not_lie_in_the_published_results(
    tmp_path, key, given, part
):
    (tmp_path / "results" / "tables").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "results" / "tables")
    problems = _problems({**BASE, key: given}, tmp_path)
    assert f"is inside {part}, the published results" in problems[key], problems


def test_ordinary_folders_pass(tmp_path):
    (tmp_path / "mirror").mkdir()
    cfg = {
        **BASE,
        "data_root": "data",
        "fit_cache": ".cache/fits",
        "results_dir": "results/quick",
        "mirror": "mirror",
    }
    assert _problems(cfg, tmp_path) == {}
    # a reduced run's own folder beside the published parts is not published
    assert _problems({**cfg, "data_root": "results/quick/data"}, tmp_path) == {}


def test_a_mirror_that_does_not_exist_is_refused(tmp_path):
    problems = _problems({**BASE, "mirror": "no/such"}, tmp_path)
    assert problems["mirror"] == (
        "'no/such' does not exist: give the folder that holds <dataset>/<file>, or "
        "leave `mirror` out (null)"
    )
    (tmp_path / "a_file").write_text("")
    assert (
        "is not a folder" in _problems({**BASE, "mirror": "a_file"}, tmp_path)["mirror"]
    )
    # a dangling link does not exist either
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    assert "does not exist" in _problems({**BASE, "mirror": "gone"}, tmp_path)["mirror"]


def test_every_folder_problem_is_reported_at_once(tmp_path):
    cfg = {**BASE, "data_root": "/", "fit_cache": "results/tables", "mirror": "nope"}
    with pytest.raises(ConfigError) as err:
        check_paths(cfg, workdir=tmp_path, home=tmp_path / "home")
    lines = str(err.value).splitlines()
    assert [line.split(":")[1].strip() for line in lines[:-1]] == [
        "data_root",
        "fit_cache",
        "mirror",
    ]


# -------------------------------------------------------- the published folder, resolved


@pytest.mark.parametrize("link_to", ["results", "results/tables", "results/figures"])
def test_a_reduced_run_may_not_write_the_published_folder_through_a_link(
    tmp_path, link_to
):
    (tmp_path / "results" / "tables").mkdir(parents=True)
    (tmp_path / "results" / "figures").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / link_to)
    cfg = {**QUICK, "results_dir": "out"}
    with pytest.raises(ConfigError) as err:
        run_location(cfg, BASE, ["config/quick.yaml"], workdir=tmp_path)
    message = str(err.value)
    assert message.startswith(
        f"invalid config: results_dir: 'out' (a link to {os.path.realpath(tmp_path)}"
    )
    assert "holds the published results" in message
    # a link somewhere else is fine
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "ok").symlink_to(tmp_path / "elsewhere")
    ok = run_location({**QUICK, "results_dir": "ok"}, BASE, [], workdir=tmp_path)
    assert ok["results"] == "ok" and not ok["published"]


def test_a_reduced_run_default_folder_is_checked_too(tmp_path):
    # results/quick, the reduced run's own folder, made a link to the tables
    (tmp_path / "results" / "tables").mkdir(parents=True)
    (tmp_path / "results" / "quick").symlink_to(tmp_path / "results" / "tables")
    with pytest.raises(ConfigError, match="results_dir: 'results/quick' .* published"):
        run_location(QUICK, BASE, ["config/quick.yaml"], workdir=tmp_path)


def test_the_full_configuration_through_a_link_is_the_published_run(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "results")
    run = run_location({**BASE, "results_dir": "out"}, BASE, [], workdir=tmp_path)
    assert run["published"] and run["reproduction"] == "REPRODUCTION.md"
