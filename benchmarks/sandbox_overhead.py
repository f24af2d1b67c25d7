"""What the sandbox costs per submission: the service's compile step (static audit + one sandboxed
child compiling all ten test points) against compiling the same points in this process, as the trusting
local judger does. Printed, one after the other in one run (so on the same machine load):

- **first submission after a restart**: a fresh judge process (a new interpreter, as a worker's pool
  process after a start, a restart or the pool's recycling) starts its warm template as a worker does
  (``grader.judging.pipeline.prestart(..., wait=True)``: importing numpy, torch, kdt and the judger in the
  template is part of the process's start, printed as such), then compiles its first submission. This is
  the path every worker's first submission takes (the default, ``KDT_GRADE_COMPILE_WARM=1``);
- **at once**: the same, but the submission arrives while the template is still starting (as in
  ``kdt-grade local``, which starts the template and compiles at once): it waits for the imports;
- **warm**: a later submission of a running judge process (forked from its template);
- **cold**: a fresh interpreter that imports everything itself, for every compile
  (``KDT_GRADE_COMPILE_WARM=0``, or uncontained runs).

Each: seconds per submission (best of N; the fresh-process ones run N fresh processes), the difference
to in-process and the ratio. The CPU seconds the child's run used (its cgroup, where contained) for warm
and cold.

Measured on the 2-core machine shared with other jobs (load average 4-7, so the in-process figure itself
varies 0.47-0.71 s against 0.22 s on a quiet machine; compare within one run), ``--repeat 3``,
``optimized.py``: in-process 0.71 s; first submission after a restart 0.58 s (0.8x; the process's start,
its template included, 1.77 s); warm 0.72 s (1.0x); cold 1.95 s (2.7x); at once 1.79 s (2.5x). Before
the templates were started with their judge process, a worker's first submission waited for its
template's whole start, as "at once" or longer: in the run before this one 0.58 s first against 1.59 s at
once, 2.04 s cold, in-process 0.47 s.

Run: ``.venv/bin/python benchmarks/sandbox_overhead.py [FILE] [--repeat N]``
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def in_process(path: Path) -> None:
    from grader.judging.pipeline import ALL_POINTS
    from judger.grading import compile_point, kernel_for_task, load_submission
    from judger.tasks import get_point, get_task

    module = load_submission(path)
    kernels = {}
    for task_id, index in ALL_POINTS:
        if task_id not in kernels:
            kernels[task_id] = kernel_for_task(module, task_id)
        compile_point(kernels[task_id], get_task(task_id), get_point(task_id, index)).to_json()


def fresh(path: Path, wait: bool) -> None:
    """In a fresh process: start like a judge process (``prestart``, waiting for the template or not),
    then compile the first submission; prints ``{"start": s, "first": s}`` as JSON."""
    t0 = time.perf_counter()
    from grader.config import load_settings
    from grader.judging.pipeline import ALL_POINTS, prepare, prestart

    settings = load_settings()
    source = path.read_bytes()
    prestart(settings.sandbox_limits, wait=wait)
    t1 = time.perf_counter()
    compiled = prepare(source, ALL_POINTS, settings)
    t2 = time.perf_counter()
    assert all("ir" in c for c in compiled.values()), compiled
    print(json.dumps({"start": t1 - t0, "first": t2 - t1}))


def fresh_runs(path: Path, wait: bool, repeat: int) -> list:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, str(path), "--fresh", "wait" if wait else "at-once"],
                             capture_output=True, text=True, check=True, cwd=ROOT)
        runs.append(json.loads(out.stdout.splitlines()[-1]))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(ROOT / "submissions/examples/optimized.py"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fresh", choices=("wait", "at-once"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = Path(args.file)
    if args.fresh:
        return fresh(path, args.fresh == "wait")

    from grader.config import load_settings
    from grader.judging.compile import compile_submission
    from grader.judging.pipeline import ALL_POINTS, prepare
    from timing import best_time

    in_process(path)  # warm the imports, as a long-running worker has them
    local = best_time(lambda: in_process(path), args.repeat)
    local_cpu = best_time(lambda: in_process(path), args.repeat, clock=time.process_time)
    print(f"{path.name}: compile 10 test points in-process {local:.2f} s (CPU {local_cpu:.2f} s)")

    def line(mode, seconds, extra=""):
        print(f"  {mode}: audit + sandboxed child {seconds:.2f} s{extra}; sandbox overhead "
              f"{seconds - local:.2f} s per submission ({seconds / local:.1f}x)")

    first = fresh_runs(path, True, args.repeat)
    line("first submission after a restart", min(r["first"] for r in first),
         f" (the fresh process's start, its warm template included: {min(r['start'] for r in first):.2f} s)")
    source = path.read_bytes()
    prepare(source, ALL_POINTS, load_settings())  # this process's warm template starts (once per judge process)
    for mode, warm in (("warm", True), ("cold", False)):
        settings = load_settings(compile_warm=warm)
        sandboxed = best_time(lambda: prepare(source, ALL_POINTS, settings), args.repeat)
        cpu = compile_submission(source, ALL_POINTS, settings.sandbox_limits).run.cpu_seconds
        line(mode, sandboxed, f" (child CPU {'n/a' if cpu is None else f'{cpu:.2f} s'})")
    at_once = fresh_runs(path, False, args.repeat)
    line("at once (a fresh process whose template is still starting, as kdt-grade local)",
         min(r["first"] for r in at_once))


if __name__ == "__main__":
    main()
