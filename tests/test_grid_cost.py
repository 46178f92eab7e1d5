"""benchmarks/grid_cost.py on small synthetic benchmark files (no real run needed)."""

import math
from pathlib import Path

import pandas as pd
import pytest

from _scripts import load_script

HEADER = (
    "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time"
)
EXTENDED = (
    HEADER + "\tjobid\trule_name\twildcards\tparams\tthreads\tcpu_usage\tresources"
    "\tinput_size_mb"
)


@pytest.fixture(scope="module")
def gc():
    return load_script("benchmarks/grid_cost.py")


def _row(s, cpu, rss=100.0):
    cpu = "NA" if cpu is None else f"{cpu:.2f}"
    return (
        f"{s:.4f}\t0:00:00\t{rss:.2f}\t200.00\t90.00\t95.00\t1.00\t0.50\t99.00\t{cpu}"
    )


def _write(folder: Path, rel: str, *rows, header=HEADER):
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *rows]) + "\n")


@pytest.fixture
def bench(tmp_path):
    b = tmp_path / "results" / "benchmarks"
    # Waited: wall 1000 s for 300 s of CPU (contention).
    _write(b, "fit/ads/l100/ssmvd/splitall.tsv", _row(1000.0, 300.0, rss=600.0))
    _write(b, "fit/ads/l100/dse/splitall.tsv", _row(100.0, 98.0))
    # Two split jobs, one benchmarked twice (repeat): the mean of its rows.
    _write(
        b,
        "fit/mfeat/kernel2000_4/kcca_bst/split0.tsv",
        _row(40.0, 39.0),
        _row(60.0, 59.0),
    )
    _write(b, "fit/mfeat/kernel2000_4/kcca_bst/split1.tsv", _row(80.0, 20.0))
    # No CPU time recorded (NA): never flagged.
    _write(b, "fit/mfeat/kernel2000_4/ktcca/splitall.tsv", _row(500.0, None))
    # Short jobs are not flagged whatever their ratio.
    _write(b, "prepare_data/ads.tsv", _row(5.0, 1.0))
    _write(b, "splits/ads/l100.tsv", _row(2.0, 1.5))
    # Extended format with threads: wall is compared with cpu / threads.
    _write(
        b,
        "fit/secstr/84k/tcca/splitall.tsv",
        _row(100.0, 190.0) + "\t1\tfit\t{}\t{}\t2\t190.0\t{}\t{}",
        header=EXTENDED,
    )
    _write(
        b,
        "fit/secstr/84k/cca_bst/splitall.tsv",
        _row(100.0, 100.0) + "\t2\tfit\t{}\t{}\t2\t100.0\t{}\t{}",
        header=EXTENDED,
    )
    (b / "table").mkdir()
    (b / "table" / "empty.tsv").write_text("")  # skipped, with a message
    return b


def test_reads_every_job_with_wall_cpu_and_fields(gc, bench):
    jobs = gc.read_benchmarks(bench).set_index("job")
    assert len(jobs) == 9
    j = jobs.loc["fit/ads/l100/ssmvd/splitall"]
    assert (j.rule, j.dataset, j.setting, j.method, j.split) == (
        "fit",
        "ads",
        "l100",
        "ssmvd",
        "all",
    )
    assert (j.wall_s, j.cpu_s, j.max_rss_mb) == (1000.0, 300.0, 600.0)
    k = jobs.loc["fit/mfeat/kernel2000_4/kcca_bst/split0"]
    assert (k.wall_s, k.cpu_s, k.repeats, k.split) == (50.0, 49.0, 2, "0")
    assert math.isnan(jobs.loc["fit/mfeat/kernel2000_4/ktcca/splitall"].cpu_s)
    p = jobs.loc["prepare_data/ads"]
    assert (p.rule, p.dataset, p.method) == ("prepare_data", "ads", "")
    assert jobs.loc["splits/ads/l100"].setting == "l100"
    assert jobs.loc["fit/secstr/84k/tcca/splitall"].threads == 2


def test_flags_jobs_whose_wall_is_far_above_cpu(gc, bench):
    jobs = gc.flag_contention(gc.read_benchmarks(bench), ratio=1.5, min_wall=30.0)
    flagged = set(jobs.loc[jobs.contention, "job"])
    assert flagged == {
        "fit/ads/l100/ssmvd/splitall",  # 1000 > 1.5 x 300
        "fit/mfeat/kernel2000_4/kcca_bst/split1",  # 80 > 1.5 x 20
        "fit/secstr/84k/cca_bst/splitall",  # 100 > 1.5 x 100 / 2 threads
    }
    # A stricter ratio flags fewer; a lower min_wall lets short jobs in.
    strict = gc.flag_contention(jobs, ratio=3.5, min_wall=30.0)
    assert set(strict.loc[strict.contention, "job"]) == {
        "fit/mfeat/kernel2000_4/kcca_bst/split1"  # 80 > 3.5 x 20
    }
    loose = gc.flag_contention(jobs, ratio=1.5, min_wall=1.0)
    assert "prepare_data/ads" in set(loose.loc[loose.contention, "job"])
    # More CPU than threads x wall: oversubscribed (190 s of CPU in 100 s is fine
    # with 2 recorded threads, not for a job assumed to have one).
    assert not jobs.oversubscribed.any()
    one = jobs.assign(threads=float("nan"))
    one = gc.flag_contention(one, threads=1.0)
    assert set(one.loc[one.oversubscribed, "job"]) == {"fit/secstr/84k/tcca/splitall"}


def test_sums_per_method_and_per_data_set(gc, bench):
    jobs = gc.flag_contention(gc.read_benchmarks(bench))
    fits = jobs[jobs.rule == "fit"]
    by_method = gc.summarize(fits, "method").set_index("method")
    assert list(by_method.index[:2]) == ["ssmvd", "ktcca"]  # largest wall first
    kcca = by_method.loc["kcca_bst"]
    assert (kcca.jobs, kcca.wall_s, kcca.cpu_s) == (2, 130.0, 69.0)
    assert kcca.flagged == 1 and kcca.waited_s == 60.0  # split1: 80 - 20
    assert math.isnan(by_method.loc["ktcca"].cpu_s)
    by_data = gc.summarize(fits, "dataset").set_index("dataset")
    assert by_data.loc["ads", "wall_s"] == 1100.0
    assert by_data.loc["ads", "waited_s"] == 700.0
    assert by_data["share"].sum() == pytest.approx(1.0)
    assert by_data.loc["secstr", "jobs"] == 2


def test_command_line_report_and_csv(gc, bench, tmp_path, capsys):
    out = tmp_path / "jobs.csv"
    assert gc.main(["--benchmarks", str(bench), "--csv", str(out), "--top", "0"]) == 0
    text = capsys.readouterr().out
    assert "9 jobs (7 fit jobs)" in text
    assert "3 jobs flagged '!'" in text
    line = next(s for s in text.splitlines() if "ads/l100/SSMVD" in s)
    assert line.startswith("!") and "1,000.0" in line and "0.30" in line
    assert "Per method" in text and "Per data set" in text and "Per rule" in text
    assert "--cores 2:" in text
    table = pd.read_csv(out)
    assert list(table.columns) == list(gc.JOB_COLUMNS)
    assert table["wall_s"].iloc[0] == 1000.0 and bool(table["contention"].iloc[0])


def test_falls_back_to_the_committed_cost_tables(gc, tmp_path, capsys):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "mfeat_kernel_cost.csv").write_text(
        "Setting,Method,r,fit time (s),peak memory (MB),job time (s),"
        "job max RSS (MB),threads,machine\n"
        '"N = 500, #labeled = 4",KCCA (BST),35/25,0.868 ± 0.035,24.8 ± 0.0,128.6,'
        '226,1,"AMD EPYC, 2 logical cores"\n'
        '"N = 500, #labeled = 4",KTCCA,15/15,0.872 ± 0.271,118.9 ± 0.0,'
        '306.3 ± 12.0,321,1,"AMD EPYC, 2 logical cores"\n'
    )
    (tables / "ads_cost.csv").write_text(
        "Setting,Method,r,fit time (s),peak memory (MB),job time (s),"
        "job max RSS (MB),threads,machine\n"
        "#labeled = 100,SSMVD,65,11.0,60.9,6233.4,629,1,x\n"
    )
    code = gc.main(
        [
            "--benchmarks",
            str(tmp_path / "none"),
            "--jobs",
            str(tmp_path / "no_grid_cost.csv"),
            "--tables",
            str(tables / "*_cost.csv"),
            "--config",
            str(tmp_path / "no.yaml"),
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "reading cost tables" in text
    assert "3 jobs (3 fit jobs)" in text and "no CPU times" in text
    jobs = gc.read_cost_tables(sorted(tables.glob("*_cost.csv")))
    assert sorted(jobs.dataset) == ["ads", "mfeat", "mfeat"]
    assert jobs.wall_s.sum() == pytest.approx(128.6 + 306.3 + 6233.4)
    assert not gc.flag_contention(jobs).contention.any()  # no CPU time to compare
    config = {"tables": {"mfeat_kernel": {"dataset": "uci_mfeat"}}}
    named = gc.read_cost_tables([tables / "mfeat_kernel_cost.csv"], config)
    assert set(named.dataset) == {"uci_mfeat"}


def test_nothing_to_read_is_an_error(gc, tmp_path, capsys):
    assert (
        gc.main(
            [
                "--benchmarks",
                str(tmp_path / "none"),
                "--jobs",
                str(tmp_path / "no_grid_cost.csv"),
                "--tables",
                str(tmp_path / "*.csv"),
            ]
        )
        == 1
    )
    assert "no benchmark files" in capsys.readouterr().err


def test_number_parsing(gc):
    assert gc._number("12.3 ± 0.4") == 12.3
    assert gc._number("1e3") == 1000.0
    assert math.isnan(gc._number("NA")) and math.isnan(gc._number("-"))
    assert gc._number(7) == 7.0


def test_before_after_maps_labels_to_keys(tmp_path, gc):
    """Old cost tables (labels) beside new benchmark files (keys), job by job."""
    bench = tmp_path / "benchmarks" / "fit" / "ads" / "l100"
    for method, s, cpu in (("tcca", 100.0, 95.0), ("ssmvd", 50.0, 48.0)):
        (bench / method).mkdir(parents=True)
        (bench / method / "splitall.tsv").write_text(
            HEADER + "\n" + _row(s, cpu) + "\n"
        )
    old = tmp_path / "ads_cost.csv"
    old.write_text(
        "Setting,Method,r,fit time (s),peak memory (MB),job time (s)\n"
        "#labeled = 100,TCCA,5,1,1,80.0\n"
        "#labeled = 100,SSMVD,5,1,1,6233.4\n"
        "#labeled = 100,TCCA (uncentered),5,1,1,891.8\n"
    )
    config = {
        "tables": {
            "ads": {
                "dataset": "ads",
                "columns": [{"setting": "l100", "label": "#labeled = 100"}],
            }
        }
    }
    jobs = gc.read_benchmarks(tmp_path / "benchmarks")
    both = gc.before_after(jobs, [old], config).set_index("method")
    assert both.loc["ssmvd", "setting"] == "l100"
    assert both.loc["ssmvd", "speedup"] == pytest.approx(6233.4 / 50.0)
    assert bool(both.loc["tcca", "slower"]) and not bool(both.loc["ssmvd", "slower"])
    # a job that no longer runs (post hoc) keeps its old time, with no new one
    assert math.isnan(both.loc["tcca_nc", "after_s"])


def test_reads_the_committed_per_job_table(gc, tmp_path, capsys):
    """A fresh checkout has no benchmark files: the full run's grid_cost.csv (with
    CPU times) is read, and its bounds printed."""
    bench = tmp_path / "benchmarks" / "fit" / "ads" / "l100" / "tcca"
    bench.mkdir(parents=True)
    (bench / "splitall.tsv").write_text(HEADER + "\n" + _row(100.0, 95.0) + "\n")
    table = tmp_path / "grid_cost.csv"
    assert (
        gc.main(["--benchmarks", str(tmp_path / "benchmarks"), "--csv", str(table)])
        == 0
    )
    capsys.readouterr()
    assert gc.main(["--benchmarks", str(tmp_path / "none"), "--jobs", str(table)]) == 0
    out = capsys.readouterr().out
    assert f"reading {table}" in out and "CPU 95.0 s" in out
    assert "--cores 2: 100 s" in out  # the longest job bounds it


def test_makespan_schedules_longest_chains_first_and_respects_order(gc):
    """Two cores, a 3 s job followed by a 2 s one, and a free 2 s job: the chain
    starts first, the free job fills the other core, the follower starts at 3."""
    cost = {"a": 3.0, "b": 2.0, "c": 2.0}
    after = {"c": "a"}
    assert gc.makespan(cost, after, 2) == 5.0
    assert gc.makespan(cost, after, 1) == 7.0
    assert gc.makespan(cost, after, None) == 5.0  # the longest chain
    # without the order, two cores finish at max(3, 2 + 2)
    assert gc.makespan(cost, {}, 2) == 4.0


def test_the_split_grain_cuts_only_split_dependent_fits(gc):
    fits = pd.DataFrame({"job": ["x", "y"], "wall_s": [10.0, 6.0]})
    cost, _ = gc.grain_costs(fits, {"x": True, "y": False}, 5, "split")
    assert sorted(cost.values()) == [2.0] * 5 + [6.0]
    cost, _ = gc.grain_costs(fits, {}, 5, "point", {"x": 2, "y": 3})
    assert sorted(cost.values()) == [2.0, 2.0, 2.0, 5.0, 5.0]


REPO = Path(__file__).resolve().parents[1]


def test_the_plan_orders_mfeats_shared_fits(gc):
    after, per_split, points = gc.plan_order(REPO / "config" / "config.yaml")
    job = "fit/mfeat/kernel2000_6/ktcca/splitall"
    assert after[job] == "fit/mfeat/kernel2000_4/ktcca/splitall"
    assert per_split["fit/ads/l100/tcca/splitall"]
    assert per_split["fit/secstr/84k/ssmvd/splitall"]  # 10K rows drawn per split
    assert not per_split[job]  # fitted on every row, whatever the split
    assert points[job] == 10
    assert points["fit/mfeat/linear4/ssmvd/splitall"] == 25  # the registry's pairs


def test_the_point_grains_jobs_follow_their_points(gc):
    jobs = gc.plan_jobs(REPO / "config" / "config.yaml", "point")
    job = jobs["fit/mfeat/kernel2000_6/ktcca/splitall.p03"]
    assert job.after == "fit/mfeat/kernel2000_4/ktcca/splitall.p03"
    assert job.whole == "fit/mfeat/kernel2000_6/ktcca/splitall"
    assert job.point == {"eps": 1e-4} and job.n_points == 10
    pairs = [n for n in jobs if n.startswith("fit/secstr/84k/ssmvd/")]
    assert len(pairs) == 25
    assert jobs["fit/secstr/84k/tcca/splitall"].point is None  # one point, one job


def test_a_point_jobs_benchmark_file_names_its_point(gc, tmp_path):
    b = tmp_path / "benchmarks"
    _write(b, "fit/mfeat/linear4/tcca/splitall.p03.tsv", _row(12.0, 11.0))
    _write(b, "fit/mfeat/linear4/bsf/splitall.tsv", _row(2.0, 2.0))
    jobs = gc.read_benchmarks(b).set_index("job")
    j = jobs.loc["fit/mfeat/linear4/tcca/splitall.p03"]
    assert (j.method, j.split, j.point) == ("tcca", "all", "p03")
    assert jobs.loc["fit/mfeat/linear4/bsf/splitall"].point == ""
    assert gc.run_grain(jobs.reset_index()) == "point"
    split = pd.DataFrame({"split": ["0", "1"], "point": ["", ""]})
    assert gc.run_grain(split) == "split"
    assert gc.run_grain(split.assign(split=["all", ""])) == "method"  # cost tables


def _fit_rows(points: dict[str, float], splits=(0, 1), rs=(2, 4), k=(1, 2)):
    """Fit rows of a method job: each grid point's (JSON params) fit time per r,
    the same on every split (a fit reused through the fit cache)."""
    return pd.DataFrame(
        [
            {"split": s, "r": r, "view": None, "pair": None, "k": kk,
             "params": params, "fit_s": seconds, "peak_mb": 1.0}
            for params, seconds in points.items()
            for s in splits for r in rs for kk in k
        ]
    )  # fmt: skip


def test_point_costs_share_a_method_job_by_its_fits(gc):
    points = [{"eps": 0.01}, {"eps": 1.0}]
    rows = _fit_rows({'{"eps": 0.01}': 3.0, '{"eps": 1.0}': 1.0})
    # each fit counted once, however many splits and learner values reuse it
    assert gc.fit_time(rows) == 8.0
    assert gc.point_fit_times(rows, points) == [6.0, 2.0]
    # 20 s job: 3 s its own, 8 s of fits, 9 s of the rest shared equally
    assert gc.point_costs(20.0, [6.0, 2.0], overhead=3.0) == [13.5, 9.5]
    # fits read from the fit cache (their time above the job's): in proportion
    assert gc.point_costs(11.0, [6.0, 2.0], overhead=3.0) == [9.0, 5.0]
    assert gc.point_costs(11.0, [0.0, 0.0], overhead=3.0) == [7.0, 7.0]
    # SSMVD's one fit per r serves every pair: shared out among them
    shared = pd.concat(
        [_fit_rows({p: 4.0}) for p in ('{"lambda1": 0, "lambda2": 1}',
                                       '{"lambda1": 1, "lambda2": 1}')]
    )  # fmt: skip
    pairs = [{"lambda1": 0, "lambda2": 1}, {"lambda1": 1, "lambda2": 1}]
    assert gc.point_fit_times(shared, pairs) == [4.0, 4.0]


def test_whole_costs_merge_a_methods_jobs(gc):
    fits = pd.DataFrame(
        {
            "job": ["fit/a/s/tcca/splitall.p00", "fit/a/s/tcca/splitall.p01",
                    "fit/a/s/bsf/splitall"],
            "dataset": ["a"] * 3, "setting": ["s"] * 3,
            "method": ["tcca", "tcca", "bsf"], "wall_s": [12.0, 8.0, 2.0],
        }
    )  # fmt: skip
    assert gc.whole_costs(fits, overhead=3.0) == {
        "fit/a/s/tcca/splitall": 17.0,  # one start instead of two
        "fit/a/s/bsf/splitall": 2.0,
    }


def _fixture_run(root: Path, grain: str) -> Path:
    """A run of the .test configuration's fit jobs at ``grain``: benchmark files
    and fit rows (TCCA's eps 0.01 fits take 3 s per r, eps 1.0 1 s)."""
    bench, fits = root / "benchmarks" / "fit" / "nuswide", root / "fits" / "nuswide"
    tcca = {'{"eps": 0.01}': 3.0, '{"eps": 1.0}': 1.0}
    jobs = {"linear2/bsf/splitall": (2.0, {'{"normalize": true}': 0.0}),
            "kernel2/ktcca/splitall": (5.0, {'{"eps": 0.01}': 1.0})}  # fmt: skip
    if grain == "point":
        jobs |= {
            "linear2/tcca/splitall.p00": (12.0, dict(list(tcca.items())[:1])),
            "linear2/tcca/splitall.p01": (8.0, dict(list(tcca.items())[1:])),
        }
    else:
        jobs["linear2/tcca/splitall"] = (20.0, tcca)
    for name, (wall, points) in jobs.items():
        _write(bench, f"{name}.tsv", _row(wall, wall))
        (fits / name).parent.mkdir(parents=True, exist_ok=True)
        _fit_rows(points).to_csv(fits / f"{name}.csv", index=False)
    return root


@pytest.mark.parametrize("grain", ["method", "point"])
def test_makespan_at_each_grain(gc, tmp_path, capsys, grain):
    """A run at the method grain estimates the point grain's jobs from its fit rows;
    a run at the point grain measures them, and its per-job overhead."""
    run = _fixture_run(tmp_path / "results", grain)
    config = str(REPO / ".test" / "config" / "config.yaml")
    args = ["--benchmarks", str(run / "benchmarks"), "--config", config]
    assert gc.main([*args, "--makespan", "1", "2", "--overhead", "3"]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split(" (")[0].strip("| "): line.split(") |")[0].split(" (", 1)[1]
        for line in out.splitlines()
        if line.startswith("| ") and "jobs, longest" in line
    }
    if grain == "method":
        assert rows == {
            "method": "measured: 3 jobs, longest 20 s",
            "split": "estimate: 3 jobs, longest 20 s",  # no fit depends on the split
            "point": "estimate: 4 jobs, longest 14 s",  # TCCA: 13.5 s and 9.5 s
        }
        assert "Per-job overhead" not in out
    else:
        assert rows == {
            "method": "estimate: 3 jobs, longest 17 s",  # 12 + 8 s, one start less
            "split": "estimate: 3 jobs, longest 17 s",
            "point": "measured: 4 jobs, longest 12 s",
        }
        # wall less fits: BSF 2 - 0, KTCCA 5 - 2, TCCA 12 - 6 and 8 - 2 s
        assert "Per-job overhead of this run: 4.5 s (median over 4 fit jobs" in out
