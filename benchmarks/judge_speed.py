"""Where the time of judging one submission goes, per test point, against a measured floor.

Per test point of the chosen files (default ``submissions/examples/optimized.py`` and ``baseline.py``):

- ``data``: the three trials' inputs and references, as ``judge_compiled`` obtains them;
- ``compile``: ``compile_point`` (what the sandboxed child does per point), and ``ir``: the IR's JSON round
  trip (``to_json`` in the child, ``from_json`` in the trusted judge);
- ``sim``: the three launches, as ``judge_compiled`` runs them (trial 1 timed and recorded, trials 2 and 3
  replayed from the recording);
- ``cmp``: the three comparisons (``kdt.utils.check_is_allclose``);
- ``floor``: the kernel's functional numpy/BLAS operations of one trial, recorded from one run (every
  executed instruction's operand views, scalars evaluated) and replayed directly, in order, on the same
  arrays, with no simulator around them; ``sim/floor`` divides ``sim`` by three replays;
- ``judge``: ``judge_compiled`` itself (the real thing: data, launches, comparisons, scoring).

Then the whole file: in-process (``judger.judger.run``, the first run of this process = cold caches, then
the best of ``--repeat`` warm runs) and as processes (``judger/judger.py`` and ``kdt-grade local``, the
best of ``--repeat`` runs each, wall clock including the interpreter start).

Every figure is the best of ``--repeat`` runs in CPU seconds of this process (``time.process_time``;
torch and BLAS run on one thread), which a machine shared with other jobs disturbs far less than the
wall clock; the whole-file lines give both (CPU of the children for the processes).

Run: ``.venv/bin/python benchmarks/judge_speed.py [FILE ...] [--repeat N] [--no-process] [--points 2.1 4.3]``
"""
import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import kdt  # noqa: E402
from judger import grading  # noqa: E402
from judger.grading import compile_point, judge_compiled, kernel_for_task, load_submission  # noqa: E402
from judger.judger import run as judge_file  # noqa: E402
from judger.tasks import COS_DIFF_TOL, TRIALS, all_points  # noqa: E402
from judger.totals import summarize  # noqa: E402
from kdt.ir.ops import OPS  # noqa: E402
from kdt.simulator import host as sim_host  # noqa: E402
from kdt.simulator import launch as sim_launch  # noqa: E402
from kdt.simulator.exprs import compile_expr  # noqa: E402
from kdt.simulator.memory import new_storage  # noqa: E402
from kdt.simulator.program import JobState, ProgramBuilder  # noqa: E402
from kdt.simulator.semantics import _BINARY_UFUNCS, _REDUCE_UFUNCS  # noqa: E402


def best_time(fn, repeat: int) -> float:
    """The least CPU time (seconds, this process) of ``repeat`` runs of ``fn()``."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def best_wall_and_cpu(fn, repeat: int, children: bool = False) -> tuple:
    """(best wall seconds, best CPU seconds) of ``repeat`` runs; CPU of the waited-for children if asked."""
    walls, cpus = [], []
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    for _ in range(repeat):
        r0, t0 = resource.getrusage(who), time.perf_counter()
        fn()
        r1 = resource.getrusage(who)
        walls.append(time.perf_counter() - t0)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return min(walls), min(cpus)

EXAMPLES = ROOT / "submissions" / "examples"
_F32 = np.float32


# ---- the floor: record the executed instructions of one launch, replay their numpy work ------------

class _Recorder(ProgramBuilder):
    """A ProgramBuilder whose tile instructions only resolve, compute and record ``(op, inputs' data,
    output RV, scalar values, args)``: no timing at all (the benchmark's own, not the judge's)."""

    records: list

    def timed(self, s, spec, in_res, out_res, compute, check, latency, where):
        records, op, args = self.records, s.op, s.args
        scalars = {p.name: compile_expr(args[p.name], self.slot_types) for p in spec.params
                   if p.kind == "scalar"}
        only_job0 = op == "print" and args["print_only_if_job0"]

        def run(env):
            if only_job0 and env[0] != 0:
                return
            ins = [r(env) for r in in_res]
            out = out_res(env) if out_res is not None else None
            compute(ins, out, env)
            records.append((op, [rv.data for rv in ins], out, {n: f(env) for n, f in scalars.items()}, args))
        return run


def record_launch(compiled, io, spec) -> list:
    """The executed tile instructions of one launch of ``compiled`` on ``io`` (outputs written)."""
    kernel = compiled.ir
    arrays, _ = sim_host.io_arrays(kernel, io)
    storages = [new_storage(st, arrays.get(st.id)) for st in kernel.storages]
    state = JobState(time.monotonic() + 600)
    builder = _Recorder(kernel, storages, spec, state, lambda: open(os.devnull, "w"))
    builder.records = []
    body = builder.build()
    with np.errstate(all="ignore"):
        sim_launch._run_jobs(kernel, body, state, None, storages)
    return builder.records


def _step(op, ins, out, sc, args):
    """One instruction as a minimal numpy call on the recorded views (a closure)."""
    o = out.data if out is not None else None
    if op in _BINARY_UFUNCS:
        uf, a, b = _BINARY_UFUNCS[op], ins[0], ins[1]
        return lambda: uf(a, b, out=o, casting="unsafe")
    if op in ("copy", "load", "store"):
        src = ins[0]
        return lambda: np.copyto(o, src, casting="unsafe")
    if op == "matmul":
        a, b = ins
        if sc["accumulate"]:
            return lambda: np.add(o, np.matmul(a, b), out=o)
        return lambda: np.matmul(a, b, out=o)
    if op == "exp":
        x, y = ins[0], _F32(sc["y"])
        return lambda: np.power(y, x, out=o, dtype=_F32)
    if op == "pow":
        x, y = ins[0], _F32(sc["y"])
        return lambda: np.power(x, y, out=o, dtype=_F32)
    if op == "log":
        x, ly = ins[0], np.log(_F32(sc["y"]))
        return lambda: np.divide(np.log(x, dtype=_F32), ly, out=o, casting="unsafe")
    if op == "fma":
        a, b, c = ins
        return lambda: np.add(np.multiply(a, b), c, out=o)
    if op == "reduce":
        uf, x, dim = _REDUCE_UFUNCS[args["op"]], ins[0], args["dim"]
        return lambda: uf.reduce(x, axis=dim, out=o)
    if op == "where":
        c, a, b = ins
        return lambda: np.copyto(o, np.where(c, a, b), casting="unsafe")
    if op == "fill":
        v = args["value"]
        return lambda: o.fill(v)
    return None  # print: output, not arithmetic


def floor_steps(records) -> list:
    """Broadcast outputs (rare) cannot take ``out=``: they are left out, as are prints."""
    steps = []
    for op, ins, out, sc, args in records:
        if out is not None and out.widx is not None:
            continue
        f = _step(op, ins, out, sc, args)
        if f is not None:
            steps.append(f)
    return steps


def replay(steps) -> None:
    with np.errstate(all="ignore"), threadpool_limits(1, user_api="blas"):  # as the simulator runs BLAS
        for f in steps:
            f()


# ---- one test point ----------------------------------------------------------------------------------

def trial_data(task, point) -> list:
    """The three trials' ``(io_tensors, reference)`` as ``judge_compiled`` obtains them."""
    if hasattr(grading, "point_trials"):  # cached test-point data, fresh copies per trial
        return list(grading.point_trials(task, point))
    return [(io, task.expected(io)) for io in grading.trial_inputs(task, point)]


def launch_all(compiled, task, trials) -> int:
    spec = task.tpu_spec()
    cycles = None
    recording = kdt.simulator.Recording() if hasattr(kdt.simulator, "Recording") else None
    for trial, (io, _) in enumerate(trials, 1):
        c = launch_trial(compiled, io, spec, trial, recording)
        cycles = c if c is not None else cycles
    return cycles


def launch_trial(compiled, io, spec, trial, recording):
    if recording is not None:  # trial 1 records, trials 2 and 3 replay it
        return grading.launch_trial(compiled, io, spec, trial, recording=recording)
    if hasattr(grading, "launch_trial"):  # timing in one trial only
        return grading.launch_trial(compiled, io, spec, trial)
    return kdt.launch_kernel(compiled, io, spec)


def compare_all(task, trials) -> None:
    abs_tol, rel_tol = task.tolerances
    for io, ref in trials:
        kdt.utils.check_is_allclose(task.output, io[task.output], ref, abs_tol, rel_tol, COS_DIFF_TOL,
                                    out=lambda s: None)


def measure_point(kernel_obj, task, point, repeat: int) -> dict:
    row = {}
    grading.limit_threads()
    compiled = compile_point(kernel_obj, task, point)
    row["compile"] = best_time(lambda: compile_point(kernel_obj, task, point), repeat)
    text = compiled.to_json()
    row["ir"] = best_time(lambda: kdt.CompiledKernel.from_json(compiled.to_json()), repeat)
    row["ir_bytes"] = len(text)
    holder = {}

    def data():
        holder["trials"] = trial_data(task, point)
    row["data"] = best_time(data, repeat)
    trials = holder["trials"]

    def sim():
        for io, _ in trials:  # fresh outputs, as each trial gets
            out = io[task.output]
            out.fill_(float("nan") if task.id == 4 else 0.0)
        holder["cycles"] = launch_all(compiled, task, trials)
    row["sim"] = best_time(sim, repeat)
    row["cycles"] = holder["cycles"]
    row["cmp"] = best_time(lambda: compare_all(task, trials), repeat)
    io0 = trials[0][0]
    steps = floor_steps(record_launch(compiled, io0, task.tpu_spec()))
    row["floor"] = best_time(lambda: replay(steps), repeat)
    row["steps"] = len(steps)
    res = {}

    def judge():
        res["r"] = judge_compiled(compiled, task, point)
    row["judge"] = best_time(judge, repeat)
    r = res["r"]
    if r.cycles != row["cycles"]:
        raise SystemExit(f"task {task.id} point {point.index}: judge_compiled gave {r.cycles} cycles, the "
                         f"benchmark's launches {row['cycles']}")
    row["verdict"] = r.verdict.value
    return row


def per_point(path: Path, repeat: int, only) -> list:
    module = load_submission(path)
    kernels = {}
    rows = []
    for task, point in all_points():
        if only and f"{task.id}.{point.index}" not in only:
            continue
        if task.id not in kernels:
            kernels[task.id] = kernel_for_task(module, task.id, source_path=path)
        row = measure_point(kernels[task.id], task, point, repeat)
        row["point"] = f"{task.id}.{point.index}"
        rows.append(row)
    return rows


def print_rows(name: str, rows: list) -> None:
    print(f"\n{name}: CPU seconds per test point (best of the repeats; data/sim/cmp/judge cover the {TRIALS} "
          "trials, floor is one trial's numpy work, sim/3fl = sim / (3 x floor))")
    head = f"{'point':>5} {'cycles':>7} {'verdict':>7} {'data':>7} {'compile':>7} {'ir':>7} {'sim':>7} {'cmp':>7} " \
           f"{'floor':>7} {'sim/3fl':>7} {'judge':>7} {'instrs':>7}"
    print(head)
    tot = dict.fromkeys(("data", "compile", "ir", "sim", "cmp", "floor", "judge"), 0.0)
    for r in rows:
        for k in tot:
            tot[k] += r[k]
        print(f"{r['point']:>5} {r['cycles']:>7} {r['verdict']:>7} {r['data']:7.3f} {r['compile']:7.3f} "
              f"{r['ir']:7.3f} {r['sim']:7.3f} {r['cmp']:7.3f} {r['floor']:7.3f} "
              f"{r['sim'] / (TRIALS * r['floor']):7.2f} {r['judge']:7.3f} {r['steps']:>7}")
    print(f"{'sum':>5} {'':>7} {'':>7} {tot['data']:7.3f} {tot['compile']:7.3f} {tot['ir']:7.3f} {tot['sim']:7.3f} "
          f"{tot['cmp']:7.3f} {tot['floor']:7.3f} {tot['sim'] / (TRIALS * tot['floor']):7.2f} {tot['judge']:7.3f}")


# ---- the whole file ------------------------------------------------------------------------------

def whole_file(path: Path, repeat: int, processes: bool) -> None:
    sink = open(os.devnull, "w")
    holder = {}

    def once():
        holder["results"] = judge_file(path, out=None, kernel_out=sink)
    cold = best_wall_and_cpu(once, 1)
    warm = best_wall_and_cpu(once, repeat)
    total = summarize(holder["results"])["total"]
    print(f"{path.name}: whole file in-process: first run of this process {cold[0]:.2f} s wall / {cold[1]:.2f} s "
          f"CPU, warm {warm[0]:.2f} s wall / {warm[1]:.2f} s CPU (total {total:.1f})")
    if not processes:
        return
    commands = {
        "judger/judger.py": [sys.executable, str(ROOT / "judger" / "judger.py"), "--kernel-impl-path", str(path)],
        "kdt-grade local": [sys.executable, "-m", "grader.cli", "local", "--json", str(path)],
    }
    for label, cmd in commands.items():
        def run_process():
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        wall, cpu = best_wall_and_cpu(run_process, repeat, children=True)
        print(f"{path.name}: {label} as a process: {wall:.2f} s wall, {cpu:.2f} s CPU (all its processes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=[EXAMPLES / "optimized.py", EXAMPLES / "baseline.py"])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (the best is printed)")
    parser.add_argument("--points", nargs="*", help="only these points, as TASK.POINT (e.g. 2.1 4.3)")
    parser.add_argument("--no-process", action="store_true", help="skip the whole-file process runs")
    parser.add_argument("--no-whole", action="store_true", help="skip the whole-file runs")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    for path in args.files:
        path = path.resolve()
        if not args.no_whole:
            whole_file(path, args.repeat, not args.no_process)
        print_rows(path.name, per_point(path, args.repeat, args.points))


if __name__ == "__main__":
    main()
