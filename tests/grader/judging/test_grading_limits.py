"""The grading process's memory limit (issue 5: ``MLE``), through ``grader.judging.pipeline.judge`` in a real
subprocess whose address space is capped with the pool's own ``limit_memory``."""
import json
import subprocess
import sys
from pathlib import Path

from grader.config import load_settings
from grader.judging.pipeline import prepare

FIXTURE = Path(__file__).parent / "fixtures" / "limits" / "big_temporary.py"

CHILD = r"""
import importlib, json, sys
from grader.config import load_settings
from grader.judging.pipeline import judge
from grader.runtime.pool import PRELOAD, limit_memory

for name in PRELOAD:  # what a pool process has imported (its fork server preloads it) before its limit
    importlib.import_module(name)

compiled_point = json.loads(sys.stdin.read())
vm_kib = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize:")).split()[1])
limit_memory(vm_kib // 1024 + int(sys.argv[1]))  # what is mapped now plus a margin in MiB
r = judge(1, 0, compiled_point, load_settings())
print(json.dumps(r.to_dict()))
"""


def judge_with_margin(compiled_point: dict, margin_mb: int) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(margin_mb)], input=json.dumps(compiled_point),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_running_out_of_grading_memory_is_mle_and_enough_memory_is_ac_or_wa():
    compiled = prepare(FIXTURE.read_bytes(), [(1, 0)], load_settings())[(1, 0)]
    assert "ir" in compiled, compiled
    tight = judge_with_margin(compiled, 64)
    assert tight["verdict"] == "MLE" and tight["score"] == 0
    assert "more than" in tight["message"] and "MiB of memory" in tight["message"]
    roomy = judge_with_margin(compiled, 2048)  # the same kernel with room: it runs (wrong output: WA)
    assert roomy["verdict"] == "WA" and roomy["cycles"] is not None


def test_a_kernel_that_launches_itself_while_compiling_is_graded_like_the_judger_grades_it():
    """Autotuning: `.compile` calls the public `kdt.launch_kernel`. The simulator's own library loads
    (threadpoolctl's ctypes) happen before the sandbox's audit hook, so this is AC, as in `judger.py`."""
    from grader.judging.pipeline import grade_source

    source = (Path(__file__).parent / "fixtures" / "autotune_launch.py").read_bytes()
    results = grade_source(source, load_settings(), points=[(1, 0), (1, 1)])
    assert [(r.verdict.value, r.cycles) for r in results] == [("AC", 1760), ("AC", 112640)], \
        [r.message for r in results]
