"""What result reuse saves in a contestant's realistic session (issue 33): ten submissions, each changing one
task's kernel (between the baseline's and the optimized example's) of the one before, then five identical
copies of the public optimized.py from other users, graded in full by the service (embedded mode:
audit, sandboxed compile, the simulations in a pool of --workers processes, SQLite) once with reuse off
(KDT_GRADE_REUSE_RESULTS=0: every point simulated, every file compiled) and once with reuse on, one after
the other in one run, each on a new database.

Every session file holds optimized.py as it is (its kernels keep their names and lines, so the public
copies share their results), the baseline's kernels renamed below it, and a last `get_kernel` choosing each
task's kernel; a submission changes one task's choice. Before timing, `kdt-grade local --json --fresh`
grades each distinct file (this also fills the test point cache both runs read); afterwards every point of
every submission, in both runs, must have that verdict, cycles, score and message.

Prints per run the seconds and the points simulated and reused; the last line is
`reuse speedup: N.NNx` (seconds without reuse / seconds with reuse).

Run: `.venv/bin/python benchmarks/resubmission.py [--workers 2]`
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.config import load_settings  # noqa: E402
from grader.service import Service  # noqa: E402

EXAMPLES = ROOT / "submissions" / "examples"
KDT_GRADE = [sys.executable, "-m", "grader.cli"]
# Each submission's kernel per task (O: optimized, B: baseline); each differs from the one before in one
# task, as a contestant works on one task at a time (some changes are taken back).
SESSION = ["BBBB", "OBBB", "OOBB", "OOOB", "OOOO", "OOOB", "OOBB", "BOBB", "BOBO", "BOOO"]
COPIES = 5
BASELINE_NAMES = ("VADD_BLOCK", "vadd_jobs", "vector_add", "matmul_jobs", "matmul", "scaled_matmul",
                  "attention_jobs", "attention", "KERNELS", "get_kernel")


def session_file(choice: str) -> bytes:
    """optimized.py, the baseline renamed (``b_``), and a ``get_kernel`` taking task t's kernel from
    ``choice[t - 1]``."""
    baseline = (EXAMPLES / "baseline.py").read_text()
    for name in BASELINE_NAMES:  # not attributes: kdt.matmul stays
        baseline = re.sub(rf"(?<![.\w]){name}\b", f"b_{name}", baseline)
    tail = (f"\n\nCHOICE = {choice!r}\n\n\ndef get_kernel(task_id):\n"
            f"    return (_KERNELS if CHOICE[task_id - 1] == 'O' else b_KERNELS).get(task_id)\n")
    return ((EXAMPLES / "optimized.py").read_text() + "\n\n" + baseline + tail).encode()


def check_file(data: bytes, tmp: Path) -> list:
    """``(task, point, verdict, cycles, score, message)`` per point, by ``kdt-grade local --json --fresh``."""
    path = tmp / "check.py"
    path.write_bytes(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KDT_GRADE_")}
    proc = subprocess.run(KDT_GRADE + ["local", str(path), "--json", "--fresh"], capture_output=True, text=True,
                          cwd=ROOT, env=env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kdt-grade local failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return [_outcome(p) for p in json.loads(proc.stdout)["points"]]


def _outcome(point: dict) -> tuple:
    return (point["task"], point["point"], point["verdict"], point["cycles"], point["score"], point["message"])


def grade_all(files: list[tuple[str, bytes]], reuse: bool, workers: int, tmp: Path) -> tuple[float, list]:
    """Grade ``files`` (``(user, data)``) one after the other on a new database; (seconds, status documents)."""
    data_dir = tmp / ("reuse" if reuse else "no-reuse")
    settings = load_settings(data_dir=data_dir, database_url=f"sqlite:///{data_dir / 'kdt-grade.sqlite3'}",
                             workers=workers, reuse_results=reuse)
    data_dir.mkdir(parents=True)
    with Service(settings) as service:
        service.init_db()
        t0 = time.perf_counter()
        ids = []
        for n, (user, data) in enumerate(files, 1):
            ids.append(service.accept(data, f"kernels_{n}.py", user))
            service.grade_embedded(ids[-1])
        seconds = time.perf_counter() - t0
        return seconds, [service.status(i) for i in ids]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="grading processes")
    args = parser.parse_args()
    public = (EXAMPLES / "optimized.py").read_bytes()
    files = [("alice", session_file(c)) for c in SESSION] + [(f"user{i}", public) for i in range(1, COPIES + 1)]
    with tempfile.TemporaryDirectory(prefix="kdt-resubmission-") as tmp:
        tmp = Path(tmp)
        expected = {}
        for _, data in files:
            if data not in expected:
                expected[data] = check_file(data, tmp)
        print(f"{len(files)} submissions ({len(SESSION)} of one contestant, {COPIES} copies of optimized.py), "
              f"{len(expected)} distinct files checked with kdt-grade local --json --fresh")
        timings = {}
        for reuse in (False, True):
            seconds, states = grade_all(files, reuse, args.workers, tmp)
            for (_, data), state in zip(files, states):
                got = [_outcome(p) for p in state["points"]]
                if got != expected[data]:
                    raise SystemExit(f"submission {state['id']} ({'reuse' if reuse else 'no reuse'}) differs from "
                                     f"kdt-grade local --fresh:\n{got}\n{expected[data]}")
            points = [p for s in states for p in s["points"]]
            simulated = sum(1 for p in points if not p["reused"] and p["cycles"] is not None)
            reused = sum(1 for p in points if p["reused"])
            timings[reuse] = seconds
            print(f"{'with' if reuse else 'without'} reuse: {seconds:.1f} s, {simulated} points simulated, "
                  f"{reused} reused; every point equal to kdt-grade local --fresh")
    print(f"reuse speedup: {timings[False] / timings[True]:.2f}x")


if __name__ == "__main__":
    main()
