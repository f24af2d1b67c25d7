"""The example submissions judged end to end, with their exact cycles and scores (judging.md)."""
import io

import pytest

from judger.judger import run
from judger.scoring import point_score
from judger.tasks import TASKS
from judger.verdicts import Verdict
from judger_testlib import BASELINE

# (task, point): cycles, recorded from the simulator and checked by hand for tasks 1 and 2 (see
# baseline.py's comments: task 1 = jobs * 166; task 2 = (1 + (K / 256) * 3049 + 1000) * jobs per SM).
BASELINE_CYCLES = {
    (1, 0): 332, (1, 1): 21248,
    (2, 0): 31491, (2, 1): 75178,
    (3, 0): 36611, (3, 1): 87466,
    (4, 0): 4822, (4, 1): 58297, (4, 2): 115337, (4, 3): 230674,
}
BASELINE_SCORES = {
    (1, 0): 100.0, (1, 1): 16.464590494810544,
    (2, 0): 36.84302987319042, (2, 1): 35.064761341250616,
    (3, 0): 24.693693502553735, (3, 1): 23.679479773784177,
    (4, 0): 100.0, (4, 1): 23.691309068369385, (4, 2): 23.095353717930557, (4, 3): 23.095721393242776,
}
BASELINE_OUTPUT = """\
Running tests for Task 1...
Testcase 0 passed, num_cycles: 332, score: 100.0
Testcase 1 passed, num_cycles: 21248, score: 16.5
Task 1 (vector add) score: 5.8 / 10.0
Running tests for Task 2...
Testcase 0 passed, num_cycles: 31491 (65.0% of MXM's peak), score: 36.8
Testcase 1 passed, num_cycles: 75178 (65.4% of MXM's peak), score: 35.1
Task 2 (matmul) score: 7.2 / 20.0
Running tests for Task 3...
Testcase 0 passed, num_cycles: 36611 (55.9% of MXM's peak), score: 24.7
Testcase 1 passed, num_cycles: 87466 (56.2% of MXM's peak), score: 23.7
Task 3 (matmul w/ fine grain scale) score: 7.3 / 30.0
Running tests for Task 4...
Testcase 0 passed, num_cycles: 4822 (42.5% of MXM's peak), score: 100.0
Testcase 1 passed, num_cycles: 58297 (56.2% of MXM's peak), score: 23.7
Testcase 2 passed, num_cycles: 115337 (56.8% of MXM's peak), score: 23.1
Testcase 3 passed, num_cycles: 230674 (56.8% of MXM's peak), score: 23.1
Task 4 (flash attention) score: 17.0 / 40.0
Total score: 37.3 / 100.0
"""


def test_baseline_hand_computed_cycles():
    assert BASELINE_CYCLES[(1, 1)] == (1048576 // 8192) * (52 + 8192 // 128 + 50)
    assert BASELINE_CYCLES[(2, 0)] == 1 + (2560 // 256) * 3049 + 1000            # 32 jobs, one per SM
    assert BASELINE_CYCLES[(2, 1)] == 2 * (1 + (3072 // 256) * 3049 + 1000)      # 64 jobs, two per SM
    for key, cycles in BASELINE_CYCLES.items():
        assert BASELINE_SCORES[key] == point_score(cycles, TASKS[key[0]].points[key[1]].threshold)


@pytest.mark.slow
def test_baseline_end_to_end():
    out = io.StringIO()
    results = run(BASELINE, out=out, kernel_out=io.StringIO())
    assert out.getvalue() == BASELINE_OUTPUT
    assert [(r.task, r.point) for r in results] == list(BASELINE_CYCLES)
    for r in results:
        key = (r.task, r.point)
        assert (r.verdict, r.cycles, r.score, r.message) == (Verdict.AC, BASELINE_CYCLES[key], BASELINE_SCORES[key],
                                                            ""), key
        task = TASKS[r.task]
        if task.id == 1:
            assert r.utilisation is None
        else:
            work = task.mxm_work(task.points[r.point])
            assert r.utilisation == (work / r.cycles) / (2048 * task.num_sms)


# optimized.py (written with issue 3 by another engineer): every point at or below its threshold.
OPTIMIZED = BASELINE.parent / "optimized.py"
OPTIMIZED_CYCLES = {
    (1, 0): 230, (1, 1): 8294,
    (2, 0): 22482, (2, 1): 51154,
    (3, 0): 22611, (3, 1): 51347,
    (4, 0): 4696, (4, 1): 34898, (4, 2): 67666, (4, 3): 135332,
}


@pytest.mark.slow
def test_optimized_end_to_end():
    out = io.StringIO()
    results = run(OPTIMIZED, out=out, kernel_out=io.StringIO())
    assert {(r.task, r.point): (r.verdict, r.cycles, r.score) for r in results} == {
        key: (Verdict.AC, cycles, 100.0) for key, cycles in OPTIMIZED_CYCLES.items()}
    lines = out.getvalue().splitlines()
    # judging.md's example line is this file's task 2, test point 0
    assert "Testcase 0 passed, num_cycles: 22482 (91.1% of MXM's peak), score: 100.0" in lines
    assert lines[-1] == "Total score: 100.0 / 100.0"
