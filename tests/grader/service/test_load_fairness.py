"""Time limits that do not depend on load (issue 33): the simulation's limit is CPU time of the grading
process, so a kernel that needs about 70 % of it stays AC while two other gradings and a CPU burner share
the machine's cores (with a wall-clock limit it would pass the limit: the test checks the load really
slowed it down). The real path: ``kdt-grade local`` subprocesses, the limit set as an organiser sets it
(``KDT_GRADE_SIM_TIMEOUT_SECONDS``)."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest

import kdt
from judger.grading import compile_point, kernel_for_task, load_submission, point_trials
from judger.tasks import get_point, get_task
from service_testlib import FIXTURES, KDT_GRADE, SLOW, clean_env

pytestmark = pytest.mark.slow
SHARE = 0.7  # of the limit the kernel needs
QUICK = FIXTURES / "quick_vadd.py"  # task 1 only: the other gradings, graded again and again


def _timed_launch_cpu(path, task_id: int, index: int) -> float:
    """CPU seconds of the point's timed launch (its longest), measured here, unloaded (best of two)."""
    task, point = get_task(task_id), get_point(task_id, index)
    compiled = compile_point(kernel_for_task(load_submission(path), task_id), task, point)
    best = float("inf")
    for _ in range(2):
        io, _ref = next(point_trials(task, point))
        t0 = time.process_time()
        kdt.launch_kernel(compiled, io, task.tpu_spec())
        best = min(best, time.process_time() - t0)
    return best


def test_a_kernel_needing_70_percent_of_the_cpu_limit_stays_ac_under_load(tmp_path):
    kernel = SLOW  # about a second of CPU a launch: start-up costs of a fresh process do not count
    need = _timed_launch_cpu(kernel, 1, 1)
    limit = need / SHARE
    env = {**clean_env(), "KDT_GRADE_CACHE_DIR": str(tmp_path / "cache"), "KDT_GRADE_WORKERS": "1"}
    other = " ".join(KDT_GRADE + ["local", str(QUICK), "--task", "1", "--json", "--no-reuse"])
    # a CPU burner, as nice as the grading processes (KDT_GRADE_GRADE_NICE): one more equal contender
    load = [subprocess.Popen([sys.executable, "-c", "import os; os.nice(10)\nwhile True: pass"])]
    load += [subprocess.Popen(["sh", "-c", f"while true; do {other} >/dev/null 2>&1; done"], env=env,
                              start_new_session=True) for _ in range(2)]  # two other gradings, again and again
    try:
        time.sleep(1.0)  # the other gradings are under way
        proc = subprocess.run(KDT_GRADE + ["local", str(kernel), "--task", "1", "--json", "--no-reuse"],
                              env={**env, "KDT_GRADE_SIM_TIMEOUT_SECONDS": f"{limit:.3f}"}, capture_output=True,
                              text=True, timeout=600)
        still_loaded = all(p.poll() is None for p in load)
    finally:
        for p in load:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL) if p.args[0] == "sh" else p.kill()
            p.wait()
    report = json.loads(proc.stdout)
    point = report["points"][1]
    print(f"\nlimit {limit:.2f} s of CPU per launch; the timed launch needs {need:.3f} s; point 1.1's three "
          f"launches took {point['timings']['simulate_s']:.2f} s of wall-clock time under load")
    assert [p["verdict"] for p in report["points"]] == ["AC", "AC"], report["points"]
    assert proc.returncode == 0 and still_loaded
    # the load was real: the three launches (the timed one alone needs 70 % of a limit) took longer on the
    # wall clock than one launch's limit, so a wall-clock limit would have ended one of them as TLE
    assert point["timings"]["simulate_s"] > limit
