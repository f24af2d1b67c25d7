"""What the sandbox costs per submission: the service's compile step (static audit + one sandboxed
child compiling all ten test points) against compiling the same points in this process, as the trusting
local judger does; the sandboxed child both warm (forked from the judge process's template, which has
imported numpy, torch, kdt and the judger: the default) and cold (a fresh interpreter importing them:
``KDT_GRADE_COMPILE_WARM=0``), one after the other in one run. Prints seconds per submission (best of N), the
difference, and the CPU seconds the child's run used (its cgroup, where contained).

Run: ``.venv/bin/python benchmarks/sandbox_overhead.py [FILE] [--repeat N]``
"""
import argparse
from pathlib import Path

from grader.config import load_settings
from grader.judging.compile import compile_submission
from grader.judging.pipeline import ALL_POINTS, prepare
from judger.grading import compile_point, kernel_for_task, load_submission
from judger.tasks import get_point, get_task
from timing import best_time

ROOT = Path(__file__).resolve().parents[1]


def in_process(path: Path) -> None:
    module = load_submission(path)
    kernels = {}
    for task_id, index in ALL_POINTS:
        if task_id not in kernels:
            kernels[task_id] = kernel_for_task(module, task_id)
        compile_point(kernels[task_id], get_task(task_id), get_point(task_id, index)).to_json()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(ROOT / "submissions/examples/optimized.py"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path = Path(args.file)
    in_process(path)  # warm the imports, as a long-running worker has them
    local = best_time(lambda: in_process(path), args.repeat)
    print(f"{path.name}: compile 10 test points in-process {local:.2f} s")
    source = path.read_bytes()
    prepare(source, ALL_POINTS, load_settings())  # the warm template starts (once per judge process)
    for mode, warm in (("warm", True), ("cold", False)):
        settings = load_settings(compile_warm=warm)
        sandboxed = best_time(lambda: prepare(source, ALL_POINTS, settings), args.repeat)
        cpu = compile_submission(source, ALL_POINTS, settings.sandbox_limits).run.cpu_seconds
        print(f"  {mode}: audit + sandboxed child {sandboxed:.2f} s (child CPU "
              f"{'n/a' if cpu is None else f'{cpu:.2f} s'}); sandbox overhead {sandboxed - local:.2f} s per "
              f"submission ({sandboxed / local:.1f}x)")


if __name__ == "__main__":
    main()
