"""The local judger: `python judger/judger.py` through a real subprocess (script and module mode, the
handout's output format, a failing task not stopping the others), and its options in-process through
`judger.judger.main` (same code, without a Python start-up per case)."""
import json
import os
import re
import subprocess
import sys

import pytest

from judger.judger import main
from judger.scoring import point_score
from judger_testlib import ROOT, fixture_path, python_without_torch

SCRIPT = ROOT / "judger" / "judger.py"


def run_main(capsys, *args):
    assert main([str(a) for a in args]) == 0
    return capsys.readouterr().out


def judge(*args, cwd=ROOT, script=("judger/judger.py",)):
    proc = subprocess.run([sys.executable, *script, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_script_runs_from_the_repo_root_and_resolves_the_judger_package():
    # sys.path[0] is judger/, where `judger` would be judger.py itself: the script must not import itself
    out = judge("--kernel-impl-path", fixture_path("vadd_only"), "--task", "1")
    assert out.splitlines() == [
        "Running tests for Task 1...",
        "Testcase 0 passed, num_cycles: 536, score: 100.0",
        f"Testcase 1 passed, num_cycles: 34304, score: {point_score(34304, 11000):.1f}",
        f"Task 1 (vector add) score: {(100 + point_score(34304, 11000)) / 2 * 10 / 100:.1f} / 10.0",
    ]  # --task: the task's score line ends it, no "Total score" as if the other tasks scored 0
    assert out.splitlines()[2] == "Testcase 1 passed, num_cycles: 34304, score: 11.0"


def test_script_runs_from_another_directory_and_as_a_module(tmp_path):
    expected = judge("--kernel-impl-path", fixture_path("vadd_only"), "--task", "1")
    assert judge("--kernel-impl-path", fixture_path("vadd_only"), "--task", "1", cwd=tmp_path,
                 script=(str(SCRIPT),)) == expected
    assert judge("--kernel-impl-path", fixture_path("vadd_only"), "--task", "1",
                 script=("-m", "judger.judger")) == expected


def test_a_failing_task_does_not_stop_the_others():
    out = judge("--kernel-impl-path", fixture_path("mixed_failures"))
    assert out.splitlines() == [
        "Running tests for Task 1...",
        "Testcase 0 passed, num_cycles: 332, score: 100.0",
        "Testcase 1 passed, num_cycles: 21248, score: 16.5",
        "Task 1 (vector add) score: 5.8 / 10.0",
        "Running tests for Task 2...",
        "Testcase 0 failed with CE (compile error): get_kernel(2) raised KeyError: 2 (line 19 of "
        "mixed_failures.py)",
        "      19 |     return table[task_id]",
        "Testcase 1 failed with CE (compile error): get_kernel(2) raised KeyError: 2 (line 19 of "
        "mixed_failures.py)",
        "      19 |     return table[task_id]",
        "Task 2 (matmul) score: 0.0 / 20.0",
        "Running tests for Task 3...",
        "Testcase 0 failed with CE (compile error): SymbolError: Line 26, Col 15, name 'c_tile' is not defined",
        "      26 |     kdt.store(c_tile, io_tensors['C'][0:128, 0:128])",
        "         |               ^",
        "Testcase 1 failed with CE (compile error): SymbolError: Line 26, Col 15, name 'c_tile' is not defined",
        "      26 |     kdt.store(c_tile, io_tensors['C'][0:128, 0:128])",
        "         |               ^",
        "Task 3 (matmul w/ fine grain scale) score: 0.0 / 30.0",
        "Running tests for Task 4...",
        *[f"Testcase {i} failed with CE (compile error): this file does not solve task 4 (get_kernel returned "
          "None)" for i in range(4)],
        "Task 4 (flash attention) score: 0.0 / 40.0",
        "Total score: 5.8 / 100.0",
    ]


def test_wrong_result_runtime_error_and_timeout_lines(capsys):
    wa = run_main(capsys, "--kernel-impl-path", fixture_path("wrong_result"), "--task", "1").splitlines()
    assert wa[0] == "Running tests for Task 1..."
    assert wa[1].startswith("[c] max abs error ") and wa[2] == "Incorrect result"
    assert wa[3].startswith("[c] max abs error ") and wa[4] == "Incorrect result"
    assert wa[5:] == ["Task 1 (vector add) score: 0.0 / 10.0"]
    re_ = run_main(capsys, "--kernel-impl-path", fixture_path("out_of_bounds"), "--task", "1").splitlines()
    assert re_[1].startswith("Testcase 0 failed with RE (runtime error): OutOfBoundsError: Line 11, kdt.load: "
                             "view of 'b'")
    # testcase 1 has 8192 jobs: far past 0.01 s; testcase 0 takes about that long, so it may pass or not
    tle = run_main(capsys, "--kernel-impl-path", fixture_path("slow"), "--task", "1", "--timeout", "0.01").splitlines()
    first = re.fullmatch(r"Testcase 0 passed, num_cycles: \d+( \([\d.]+% of MXM's peak\))?, score: ([\d.]+)", tle[1])
    assert first is not None or (tle[1].startswith(("simulation passed its wall-clock limit before job ",
                                                    "simulation passed its wall-clock limit while preparing"))
                                 and tle[2] == "Simulation timeout"), tle  # (on a busy machine, even building it)
    task_score = float(first.group(2)) / 2 * 10 / 100 if first else 0.0  # the mean of 2 points, weight 10
    assert tle[-2] == "Simulation timeout" and tle[-1] == f"Task 1 (vector add) score: {task_score:.1f} / 10.0"
    assert tle[-3].startswith("simulation passed its wall-clock limit")
    assert tle[-3].endswith("(0.01 s per launch, trial 1 of 3)")


def test_file_that_does_not_import(capsys):
    out = run_main(capsys, "--kernel-impl-path", fixture_path("python_syntax_error"), "--task", "2").splitlines()
    assert out[1].startswith("Testcase 0 failed with CE (compile error): importing the submission failed: "
                             "SyntaxError: expected ':'")
    assert out[-3:] == ["       4 | def get_kernel(task_id)", "         |                        ^",
                        "Task 2 (matmul) score: 0.0 / 20.0"]  # --task: no "Total score" line


def test_print_ir_and_kernel_prints(capsys):
    out = run_main(capsys, "--kernel-impl-path", fixture_path("prints"), "--task", "1", "--print-ir")
    assert "IR of task 1, testcase 0:\nkernel vector_add: 2 job(s)" in out
    assert "IR of task 1, testcase 1:\nkernel vector_add: 128 job(s)" in out
    assert out.count("[Job 0] block start: []") == 6
    assert out.splitlines()[-1] == "Task 1 (vector add) score: 5.8 / 10.0"


def test_json_output_is_not_broken_by_the_submissions_prints(capsys):
    assert main(["--kernel-impl-path", str(fixture_path("prints")), "--json", "--print-ir", "--task", "1"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [r["verdict"] for r in doc["results"]] == ["AC", "AC"]
    assert "hello from the submission" in captured.err and "get_kernel(1)" in captured.err
    assert "[Job 0] block start: []" in captured.err and "IR of task 1, testcase 0:" in captured.err


def test_json_output_and_profiles(tmp_path, capsys):
    out = run_main(capsys, "--kernel-impl-path", fixture_path("wrong_result"), "--json", "--profile-path", tmp_path)
    doc = json.loads(out)
    assert doc["submission"] == str(fixture_path("wrong_result"))
    verdicts = [(r["task"], r["point"], r["verdict"]) for r in doc["results"]]
    assert verdicts == [(1, 0, "WA"), (1, 1, "WA"), (2, 0, "CE"), (2, 1, "CE"), (3, 0, "CE"), (3, 1, "CE"),
                        (4, 0, "WA"), (4, 1, "WA"), (4, 2, "WA"), (4, 3, "WA")]
    assert doc["results"][0]["cycles"] == 536 and doc["results"][0]["message"].endswith("Incorrect result")
    assert doc["tasks"] == {"1": {"name": "vector add", "weight": 10, "score": 0.0},
                            "2": {"name": "matmul", "weight": 20, "score": 0.0},
                            "3": {"name": "matmul w/ fine grain scale", "weight": 30, "score": 0.0},
                            "4": {"name": "flash attention", "weight": 40, "score": 0.0}}
    assert doc["total"] == 0.0 and doc["max_total"] == 100.0
    # one trace and one summary per test point that launched (CE points never did)
    names = sorted(p.name for p in tmp_path.iterdir())
    launched = [(1, 0), (1, 1), (4, 0), (4, 1), (4, 2), (4, 3)]
    assert names == sorted(f"task{t}_point{p}.{kind}.json" for t, p in launched for kind in ("perfetto", "summary"))
    summary = json.loads((tmp_path / "task1_point1.summary.json").read_text())
    assert summary["cycles"] == 34304 and summary["verdict"] == "WA" and summary["traced_jobs"] == list(range(8))
    assert summary["profile"]["jobs"] == 256 and summary["profile"]["traced_jobs"] == 8
    trace = json.loads((tmp_path / "task1_point1.perfetto.json").read_text())
    ops = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("tid", 0) != 0}
    assert ops == {"fill", "load", "sub", "store"}
    jobs = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("tid") == 0]
    assert len(jobs) == 256  # the placement is complete; only jobs 0-7 carry instruction events


def test_bad_arguments(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--kernel-impl-path", "x.py", "--task", "5"])
    assert info.value.code == 2 and "invalid choice: 5" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2 and "--kernel-impl-path" in capsys.readouterr().err
    for jobs, says in (("0", "0 processes: at least 1"), ("-3", "-3 processes: at least 1"),
                       ("two", "'two' is not a whole number")):
        with pytest.raises(SystemExit) as info:
            main(["--kernel-impl-path", "x.py", "--jobs", jobs])
        assert info.value.code == 2 and says in capsys.readouterr().err


def test_a_missing_submission_file_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--kernel-impl-path", "no/such/file.py"])
    assert info.value.code == 2
    assert "no such file: no/such/file.py" in capsys.readouterr().err


def test_explain_says_why_each_point_takes_its_cycles(capsys):
    """baseline task 1, point 0 (N=16384, 2 jobs on 1 SM, L_mem 50): 332 cycles against a VXM bound of
    2 x 64; job 0's 166 cycles are the path load (line 28) -> add (29) -> store (30); the add waits for the
    second load (raw 49 per job) and the store for the add (raw 63 per job)."""
    base = ROOT / "submissions/examples/baseline.py"
    lines = run_main(capsys, "--kernel-impl-path", base, "--task", "1", "--explain").splitlines()
    assert lines[1:7] == [
        "Testcase 0 passed, num_cycles: 332, score: 100.0",
        "    why: 332 cycles; bound 128 (VXM busy cycles on the busiest SM) = 2.59x the bound; utilisation "
        "MEM 60.8%, VXM 38.6%, ISU 2.4%, MXM 0.0%",
        "    critical path of job 0 (166 of the launch's 332 cycles: an SM runs its jobs one after another): "
        "line 29 add 38.6%, line 28 load 30.1%, line 30 store 30.1%",
        "    stall cycles of the issue unit, summed over the 2 jobs: raw 224",
        "    line 29 (add) holds up others 126 cycles, summed over the 2 jobs: line 30 waits for its input to be "
        "written (raw 126)",
        "    line 28 (load) holds up others 98 cycles, summed over the 2 jobs: line 29 waits for its input to be "
        "written (raw 98)"]
    doc = json.loads(run_main(capsys, "--kernel-impl-path", base, "--task", "1", "--explain", "--json"))
    expl = doc["explain"]["1.0"]
    assert expl["kernel_cycles"] == 332 and expl["bound"]["cycles"] == 128 and expl["job_cycles"] == 166
    assert sum(link["cycles"] for link in expl["critical_path"]) == 166
    assert expl["stall_cycles"] == {"raw": 224, "waw": 0, "war": 0, "unit": 0} and expl["traced_jobs"] == 2
    assert set(doc["explain"]) == {"1.0", "1.1"}


@pytest.mark.parametrize("fixture", ["prints", "mixed_failures"])
def test_parallel_points_print_the_same_output_in_the_same_order(capsys, fixture):
    """--jobs 2 forks workers after the imports; the lines (kernel prints and IR included) and the JSON
    results equal --jobs 1's."""
    path = fixture_path(fixture)
    one = run_main(capsys, "--kernel-impl-path", path, "--print-ir", "--jobs", "1")
    two = run_main(capsys, "--kernel-impl-path", path, "--print-ir", "--jobs", "2")
    assert one == two and "Total score:" in one
    one = json.loads(run_main(capsys, "--kernel-impl-path", path, "--json", "--jobs", "1"))
    two = json.loads(run_main(capsys, "--kernel-impl-path", path, "--json", "--jobs", "2"))
    strip = lambda doc: [{k: v for k, v in r.items() if k != "timings"} for r in doc["results"]]  # noqa: E731
    assert strip(one) == strip(two) and one["total"] == two["total"]


def test_one_task_json_counts_that_task_only(capsys):
    doc = json.loads(run_main(capsys, "--kernel-impl-path", fixture_path("vadd_only"), "--task", "1", "--json"))
    assert list(doc["tasks"]) == ["1"] and doc["max_total"] == 10.0
    assert doc["total"] == doc["tasks"]["1"]["score"] == pytest.approx((100 + point_score(34304, 11000)) / 2 * 10 / 100)


@pytest.mark.parametrize("script", [("judger/judger.py", "--help"), ("-m", "judger.judger", "--help"),
                                    ("judger/judger.py", "--kernel-impl-path", "submissions/examples/baseline.py")])
def test_a_python_without_torch_is_told_the_install_command_in_one_line(script):
    python = python_without_torch()
    proc = subprocess.run([python, *script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")})
    assert proc.returncode == 1 and proc.stdout == ""
    assert re.fullmatch(
        rf"judger/judger.py: this Python \({re.escape(python)}\) has no module '[\w.]+'; the judge needs torch and "
        r"the other dependencies: install them in the repository with `python3 -m venv .venv && "
        r"\.venv/bin/pip install -q -e '\.\[test\]' torch==2\.13\.0`, then run "
        r"`\.venv/bin/python judger/judger.py --kernel-impl-path FILE`\n", proc.stderr), proc.stderr
    readme = (ROOT / "README.md").read_text()
    assert "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' torch==2.13.0" in readme


def test_parallel_points_are_handed_out_largest_first():
    """With several processes the points start largest first (their MXM work, task 1 by its N), so that
    no process is left judging the largest point alone at the end; a failed entry costs nothing."""
    from judger.judger import _largest_first
    from judger.tasks import TASKS

    plan = [(task, point, object(), None) for task in TASKS.values() for point in task.points]
    order = [(plan[i][0].id, plan[i][1].index) for i in _largest_first(plan)]
    assert order == [(2, 1), (3, 1), (4, 3), (2, 0), (3, 0), (4, 2), (4, 1), (4, 0), (1, 1), (1, 0)]
    plan[3] = (plan[3][0], plan[3][1], None, RuntimeError("compile failed"))  # task 2 point 1
    assert _largest_first(plan)[-1] == 3


def test_the_script_exits_at_once_with_everything_written_and_a_closed_pipe_is_status_one():
    """The script ends without the interpreter's teardown (judger.judger.exit_now): what it printed is all
    there (the JSON document is whole), the status is main's; a reader that closes the pipe early gets
    exit status 1 and no traceback."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--kernel-impl-path", str(fixture_path("vadd_only")),
                           "--task", "1", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["max_total"] == 10.0
    reader = subprocess.Popen([sys.executable, str(SCRIPT), "--kernel-impl-path", str(fixture_path("vadd_only")),
                               "--task", "1", "--print-ir"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    reader.stdout.close()  # like `| head -0`, long before the script's first line (it imports torch first)
    assert reader.wait(timeout=300) == 1
    assert b"Traceback" not in reader.stderr.read()
