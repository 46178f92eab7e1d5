"""investigations/nuswide_cost.py: the scaling and the packing behind REPRODUCTION.md's
NUS-WIDE estimate, and its report from measured jobs."""

import json

import pytest

from _scripts import load_script


@pytest.fixture(scope="module")
def cost():
    return load_script("investigations/nuswide_cost.py")


def test_longest_first_packing(cost):
    assert cost.lpt([3, 3, 2, 2, 2], cores=2) == 7  # (3 + 2 + 2 | 3 + 2)
    assert cost.lpt([10, 1, 1], cores=2) == 10  # the longest job bounds it
    assert cost.lpt([], cores=2) == 0


def test_affine_fit(cost):
    a, b = cost.fit_affine([1000, 2000, 4000], [12.0, 22.0, 42.0])
    assert a == pytest.approx(2.0) and b == pytest.approx(0.01)
    assert cost.fit_affine([1000], [5.0]) == (0.0, 0.005)  # one size: through 0
    a, b = cost.fit_affine([1000, 2000], [5.0, 4.0])  # timing noise: no growth
    assert (a, b) == (4.5, 0.0)


def _job(table, method, n_rows, cpu_s):
    return {"table": table, "method": method, "n_rows": n_rows, "cpu_s": cpu_s,
            "import_s": 0.5}  # fmt: skip


def test_report_scales_linear_jobs_and_keeps_kernel_jobs(cost, tmp_path):
    jobs = [
        _job("nuswide_linear", "tcca", 1000, 100.0),
        _job("nuswide_linear", "tcca", 2000, 200.0),
        _job("nuswide_kernel", "ktcca", 500, 900.0),
    ]
    out = tmp_path / "cost.md"
    cost.report(jobs, {"lines": 24_099, "cpu_s": 0.3}, ["cmd"], str(out))
    text = out.read_text()
    # TCCA: 0.1 s per row, at the paper's 11,189 rows: 1,118.9 s, 3 jobs; KTCCA 3 x 900
    # s. Longest first on 2 cores: 1119 + 1119 + 900 | 1119 + 900 + 900 -> 3,138 s.
    assert (
        "| nuswide_linear | TCCA | 1,000: 100.0; 2,000: 200.0 | 0.0 + 100 N / 1000 | "
        "19 min | 19 min (predicted) | 3 |"
    ) in text
    assert "| nuswide_kernel | KTCCA | 500: 900.0 |  |  | 15 min | 3 |" in text
    assert "Estimated time on 2 cores: **0.9 h**" in text
    assert "then 6 fit jobs packed on 2 cores 0.9 h" in text
    assert "evaluated at the paper's N = 11,189." in text
    assert "`snakemake --cores 2 nuswide`" in text
    json.dumps(jobs)  # what main() stores beside the report


def test_report_uses_the_real_size_when_it_was_run(cost, tmp_path):
    jobs = [
        _job("nuswide_linear", "cca_ls", 1000, 10.0),
        _job("nuswide_linear", "cca_ls", 2000, 20.0),
        _job("nuswide_linear", "cca_ls", 11_190, 100.0),
    ]
    out = tmp_path / "cost.md"
    cost.report(jobs, {"lines": 269_649, "cpu_s": 3.0}, ["cmd"], str(out))
    text = out.read_text()
    # measured 100 s at the real size; the fit over 1,000 and 2,000 predicts 111.9 s
    assert "| CCA-LS | 1,000: 10.0; 2,000: 20.0; 11,190: 100.0 |" in text
    assert "| 2 min | 2 min | 3 |" in text  # 111.9 s predicted, 100 s measured
    assert "The linear table's jobs ran at N = 11,190, the real size" in text
    assert "predicted 2 min for them against 2 min measured (+12 %)." in text
    # with two methods, the one the fits missed most is named, and left out
    jobs += [
        _job("nuswide_linear", "tcca", 1000, 400.0),
        _job("nuswide_linear", "tcca", 2000, 400.0),
        _job("nuswide_linear", "tcca", 11_190, 2400.0),
    ]
    cost.report(jobs, {"lines": 269_649, "cpu_s": 3.0}, ["cmd"], str(out))
    text = out.read_text()
    assert (
        "predicted 9 min for them against 42 min measured (-80 %); without TCCA, "
        "2 min against 2 min (+12 %)."
    ) in text


def test_report_mode_keeps_the_data_of_the_report(cost, tmp_path):
    """--report writes the data beside the report once, with its tables, facts and
    provenance as well as the jobs (it once rewrote the .json after hand_over and
    dropped them); the data it writes can be reported again."""
    jobs = [
        _job("nuswide_linear", "tcca", 1000, 100.0),
        _job("nuswide_linear", "tcca", 2000, 200.0),
    ]
    runs = []
    for i, job in enumerate(jobs):
        run = tmp_path / f"run{i}.json"
        prep = {"lines": 24_099 + i, "cpu_s": 0.3}
        run.write_text(json.dumps({"commands": [f"cmd {i}"], "prepare": prep,
                                   "jobs": [job]}))  # fmt: skip
        runs.append(str(run))
    out = tmp_path / "nuswide_cost.md"  # its stem names the facts (_common.FACTS)
    assert cost.main(["--report", *runs, "--out", str(out)]) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    assert data["jobs"] == jobs
    assert data["prepare"] == {"lines": 24_100, "cpu_s": 0.3}  # the most lines
    assert data["commands"][:2] == ["cmd 0", "cmd 1"]
    assert data["commands"][2].startswith("python investigations/nuswide_cost.py")
    # what hand_over adds: the tables and facts of the text, and where it comes from
    assert data["facts"]["fit_jobs"] == "3"  # 3 linear columns, one method
    assert data["tables"] and data["tables"][0]["rows"]
    assert set(data["provenance"]) >= {"commit", "dirty", "source_digest"}
    text = out.read_text()
    assert "then 3 fit jobs" in text
    # the data of a report are a run of --report again: the same jobs, one more command
    again = tmp_path / "again" / "nuswide_cost.md"
    assert (
        cost.main(["--report", str(out.with_suffix(".json")), "--out", str(again)]) == 0
    )
    redone = json.loads(again.with_suffix(".json").read_text())
    assert redone["jobs"] == jobs and redone["commands"][:3] == data["commands"]
    assert redone["facts"] == data["facts"]


def test_main_runs_a_fit_job_through_the_pipeline(cost, tmp_path):
    # the script builds the job parameters the pipeline's jobs read back
    # (SplitJob/FitJob.from_params): a field they lose or gain breaks it here first
    out = tmp_path / "cost.md"
    argv = ["--sizes", "300", "--quick", "--tables", "nuswide_linear"]
    assert cost.main([*argv, "--methods", "bsf", "--out", str(out)]) == 0
    data = json.loads(out.with_suffix(".json").read_text())
    jobs = data["jobs"]
    assert [(j["method"], j["size"]) for j in jobs] == [("bsf", 300)]
    # one list of the commands behind the data, the run's own (no second key that a
    # later --report would leave standing beside its own list)
    assert "command" not in data
    assert data["commands"] == [f"python investigations/nuswide_cost.py {' '.join(argv)} "
                                "--methods bsf --out cost.md"]  # fmt: skip
    assert jobs[0]["cpu_s"] > 0
    assert "| nuswide_linear | BSF | 300: " in out.read_text()
