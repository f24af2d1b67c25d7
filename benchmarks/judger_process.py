"""The whole-process time of the handout-compatible ``judger/judger.py`` on one file, this checkout against
another one (an earlier commit checked out beside it: ``git worktree add ../before COMMIT``), in one run.

The two are run alternately (``--repeat`` times each, default 3), each as a fresh process with its tree's
own ``.venv`` interpreter (this one where a tree has none), and the median wall time and the children's CPU (user + system) are printed. The outputs
must be identical: the judger prints the per-point results and the total, which are the same numbers in
both, else the benchmark fails. ``--jobs`` is passed to this checkout's judger only (the earlier one
may not have it); by default it uses its own default (every CPU).

Run: ``.venv/bin/python benchmarks/judger_process.py --before ../before [--file F] [--repeat 3]``
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILE = ROOT / "submissions" / "examples" / "optimized.py"


def python_of(tree: Path) -> str:
    """The tree's own virtual environment's interpreter if it has one (its editable install points at
    it), else this one."""
    own = tree / ".venv" / "bin" / "python"
    return str(own) if own.exists() else sys.executable


def run_once(tree: Path, file: Path, extra: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and its children, its stdout) of one judger run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([python_of(tree), str(tree / "judger" / "judger.py"), "--kernel-impl-path", str(file),
                           *extra], capture_output=True, text=True, cwd=tree, timeout=900)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: judger.py exited {proc.returncode}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def comparable(stdout: str) -> str:
    """The output without timing lines (none are expected; kept so that a future one does not break this)."""
    return "\n".join(line for line in stdout.splitlines() if not re.search(r"\b\d+(\.\d+)? ?s\b", line))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (the 'before')")
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=None, help="this checkout's --jobs (default: its default)")
    args = parser.parse_args()
    extra_after = ["--jobs", str(args.jobs)] if args.jobs else []
    figures: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    outputs: dict[str, set[str]] = {"before": set(), "after": set()}
    for _ in range(args.repeat):
        for name, tree, extra in (("before", args.before.resolve(), []), ("after", ROOT, extra_after)):
            wall, cpu, out = run_once(tree, args.file.resolve(), extra)
            figures[name].append((wall, cpu))
            outputs[name].add(comparable(out))
    print(f"judger/judger.py --kernel-impl-path {args.file.name} ({os.cpu_count()} CPUs, {args.repeat} runs each, "
          f"alternating)")
    medians = {}
    for name in ("before", "after"):
        wall = statistics.median(w for w, _ in figures[name])
        cpu = statistics.median(c for _, c in figures[name])
        medians[name] = wall
        print(f"  {name:6}: {wall:6.2f} s wall (median; runs {', '.join(f'{w:.2f}' for w, _ in figures[name])}), "
              f"{cpu:6.2f} s CPU")
    print(f"  after/before wall: {medians['after'] / medians['before']:.2f}")
    same = len(outputs["before"]) == 1 and outputs["before"] == outputs["after"]
    print(f"  identical output: {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit("the outputs differ")


if __name__ == "__main__":
    main()
