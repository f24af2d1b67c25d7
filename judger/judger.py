"""The local judger, compatible with the contest handout (spec judging.md, "The local judger").

    python judger/judger.py --kernel-impl-path FILE [--task N] [--print-ir] [--json] [--profile-path DIR] [--explain]
                            [--jobs N]

Prints, per task, ``Running tests for Task N...``, one line per test point, ``Task N (name) score:
X.X / W`` and finally ``Total score: X.X / 100.0`` (with ``--task N`` the task's score line is the last:
the other tasks were not judged, so there is no total). ``--json`` prints one JSON document instead
(``results``: PointResult dicts, ``tasks``, ``total`` and ``max_total``: 100.0, with ``--task`` that task's
weight). ``--profile-path DIR`` writes, per test point,
``task{N}_point{P}.perfetto.json`` (open it in ui.perfetto.dev) and ``task{N}_point{P}.summary.json``;
only jobs 0-7 are traced (the job -> SM placement is complete; with ``--explain`` every job), so the summary's ``profile`` part
(``kdt.Profile.summary()``: per-unit busy cycles and utilisation) counts those traced jobs only, while its
``mxm_utilisation`` is the judge's whole-kernel figure. The submission file is imported as it is
(no sandbox): judge only files you trust.
"""
if __name__ == "__main__":  # run as a script: sys.path[0] is this directory, where `judger` is this file
    import os as _os
    import sys as _sys

    _here = _os.path.dirname(_os.path.abspath(__file__))
    _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or _os.curdir) != _here]
    _root = _os.path.dirname(_here)
    if _root not in _sys.path:
        _sys.path.insert(0, _root)
    # numpy's OpenBLAS with one thread from the start: the simulator runs BLAS on one thread anyway
    # (kdt.simulator.host.single_threaded_blas), and setting that in a forked process otherwise starts
    # OpenBLAS's worker thread, which spins on a core for 0.1 s that the other processes judging need.
    _os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import contextlib
import gc
import io
import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

_AS_SCRIPT = __name__ == "__main__"
if _AS_SCRIPT:  # no cyclic collection while torch and the judge are imported: it would walk objects that live on
    gc.disable()
try:
    import kdt
    from judger.grading import CompileFailed, compile_failed_result, grade_point, kernel_for_task, load_submission
    from judger.totals import summarize
    from judger.testdata import limit_threads
    from judger.explain import explanation, format_explanation, legend_lines, profile_for_explain
    from judger.tasks import TASK_IDS, TASKS, TIMEOUT_S, judging_work
    from judger.verdicts import PointResult, Verdict
except ModuleNotFoundError as _missing:  # run by a Python without torch (or numpy, ...): one line, not a traceback
    from judger.dependencies import exit_if_missing_dependency

    if __name__ == "__main__":
        exit_if_missing_dependency(_missing, "judger/judger.py",
                                   ".venv/bin/python judger/judger.py --kernel-impl-path FILE")
    raise
if _AS_SCRIPT:  # the imported modules' objects: no later collection (here or in a forked process) walks them
    gc.freeze()
    gc.enable()

PROFILED_JOBS = range(8)


def format_point(result) -> list:
    """The handout's lines for one test point."""
    i = result.point
    if result.verdict is Verdict.AC:
        util = "" if result.utilisation is None else f" ({100 * result.utilisation:.1f}% of MXM's peak)"
        return [f"Testcase {i} passed, num_cycles: {result.cycles}{util}, score: {result.score:.1f}"]
    if result.verdict in (Verdict.WA, Verdict.TLE):  # the comparison's messages, then the handout's line
        return result.message.splitlines()
    lines = result.message.splitlines() or [""]
    return [f"Testcase {i} failed with {result.verdict.value} ({result.verdict.description}): {lines[0]}",
            *lines[1:]]


def run(path, task_ids=TASK_IDS, *, print_ir=False, profile_dir=None, timeout=TIMEOUT_S, out=None,
        kernel_out=None, explanations: dict | None = None, jobs: int = 1) -> list:
    """Judge ``path`` on ``task_ids``; print the handout's lines to ``out`` (None: print nothing; the
    ``Total score`` line only when ``task_ids`` are all the tasks) and the
    kernels' ``kdt.print`` output and ``--print-ir`` to ``kernel_out``. Returns the ``PointResult``s.
    With ``explanations`` (a dict), every job is traced and each point's ``judger.explain.explanation``
    is stored there under ``"TASK.POINT"`` and printed under the point's line (``--explain``).
    ``jobs`` > 1 judges the test points in that many processes forked after the imports (the same
    output, in the same order); 1 judges them one after another in this process."""
    emit = (lambda s: print(s, file=out, flush=True)) if out is not None else (lambda s: None)
    try:
        module, load_error = load_submission(path), None
    except CompileFailed as failure:
        module, load_error = None, failure
    if profile_dir is not None:
        Path(profile_dir).mkdir(parents=True, exist_ok=True)
    plan = []  # (task, point, kernel object, failure) in output order
    for task_id in task_ids:
        failure, kernel_obj = load_error, None
        if failure is None:
            try:
                kernel_obj = kernel_for_task(module, task_id, source_path=path)
            except CompileFailed as exc:
                failure = exc
        plan += [(TASKS[task_id], point, kernel_obj, failure) for point in TASKS[task_id].points]
    options = dict(print_ir=print_ir, profile_dir=profile_dir, timeout=timeout, source_path=path,
                   explain=explanations is not None)
    results, task_results = [], []

    def announce(i):
        task, point = plan[i][0], plan[i][1]
        if point is task.points[0]:
            emit(f"Running tests for Task {task.id}...")
    for i, (result, kernel_text, expl) in enumerate(_graded(plan, options, jobs, kernel_out, announce)):
        task, point = plan[i][0], plan[i][1]
        if kernel_text:
            print(kernel_text, end="", file=kernel_out, flush=True)
        for line in format_point(result):
            emit(line)
        if explanations is not None:
            explanations[f"{task.id}.{point.index}"] = expl
            for line in format_explanation(expl):
                emit(line)
        task_results.append(result)
        if point is task.points[-1]:
            score = summarize(task_results)["tasks"][task.id]["score"]
            emit(f"Task {task.id} ({task.name}) score: {score:.1f} / {float(task.weight):.1f}")
            results += task_results
            task_results = []
    if set(task_ids) == set(TASK_IDS):  # one task (--task): its score line ends the output, no total of 100
        emit(f"Total score: {summarize(results)['total']:.1f} / 100.0")
    return results


def _graded(plan, options, jobs, kernel_out, announce):
    """``(PointResult, kernel output text, explanation)`` per entry of ``plan``, in order, calling
    ``announce(i)`` before each entry's output. One process: the kernels print straight to ``kernel_out``
    (the text is empty). Several: forked workers judge the points and return what the kernels printed."""
    if jobs <= 1 or sum(1 for *_, failure in plan if failure is None) <= 1:
        for i, (task, point, kernel_obj, failure) in enumerate(plan):
            announce(i)
            result, expl = _grade_entry(task, point, kernel_obj, failure, options, kernel_out)
            yield result, "", expl
        return
    _FORKED["plan"], _FORKED["options"] = plan, options
    limit_threads()
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = {i: pool.submit(_grade_forked, i) for i in _largest_first(plan)}
            for i in range(len(plan)):
                announce(i)
                text, result, expl = futures[i].result()
                yield result, text, expl
    finally:
        _FORKED.clear()


def _largest_first(plan) -> list:
    """The indices of ``plan``, the most work first (``judger.tasks.judging_work``), so that the processes
    finish together instead of one judging the largest point while the others wait
    (longest-processing-time-first). A failed entry costs nothing."""
    def work(i):
        task, point, _kernel, failure = plan[i]
        return 0 if failure is not None else judging_work(task.id, point.index)
    return sorted(range(len(plan)), key=work, reverse=True)


_FORKED: dict = {}  # what the forked workers judge (set before the pool forks them)


def _grade_forked(i: int):
    """In a forked worker: judge ``plan[i]``, capturing what the kernel prints."""
    task, point, kernel_obj, failure = _FORKED["plan"][i]
    limit_threads()  # before any torch call: an OpenMP pool the parent used does not survive the fork
    buf = io.StringIO()
    result, expl = _grade_entry(task, point, kernel_obj, failure, _FORKED["options"], buf)
    return buf.getvalue(), result, expl


def _grade_entry(task, point, kernel_obj, failure, options, kernel_out):
    """``(PointResult, explanation or None)`` of one test point (``compile_failed_result`` when the file
    or its kernel failed before it)."""
    if failure is not None:
        return compile_failed_result(failure, task, point), None
    profile_dir = options["profile_dir"]
    profile = kdt.Profile(jobs=PROFILED_JOBS) if profile_dir is not None else None
    if options["explain"]:
        profile = profile_for_explain()
    on_compiled = None
    if options["print_ir"]:
        def on_compiled(compiled):
            print(f"IR of task {task.id}, testcase {point.index}:", file=kernel_out)
            compiled.print_ir(file=kernel_out)
    try:
        result = grade_point(kernel_obj, task, point, timeout=options["timeout"], profile=profile,
                             print_file=kernel_out, source_path=options["source_path"], on_compiled=on_compiled)
    except MemoryError:
        result = PointResult(task.id, point.index, Verdict.MLE,
                             message="the judge ran out of memory while simulating this test point")
    if profile_dir is not None and profile.runs:
        _write_profile(Path(profile_dir), task, point, result, profile)
    return result, explanation(profile) if options["explain"] else None


def _write_profile(directory: Path, task, point, result, profile) -> None:
    stem = directory / f"task{task.id}_point{point.index}"
    profile.write_perfetto(f"{stem}.perfetto.json")
    summary = {
        "task": task.id, "point": point.index, "verdict": result.verdict.value, "cycles": result.cycles,
        "threshold": point.threshold, "score": result.score, "mxm_utilisation": result.utilisation,
        "traced_jobs": sorted(j for j in PROFILED_JOBS if j < len(profile.runs)),
        "note": f"the profile covers trial 1 (timing does not depend on the data) and traces jobs "
                f"{PROFILED_JOBS.start}-{PROFILED_JOBS.stop - 1} only: 'profile' (kdt.Profile.summary()) counts "
                "those jobs; 'mxm_utilisation' is the judge's whole-kernel figure (judging.md)",
        "profile": profile.summary(),
    }
    with open(f"{stem}.summary.json", "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)


def _positive(text: str) -> int:
    """``--jobs``: a whole number of processes, at least 1 (argparse turns the error into exit status 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} processes: at least 1")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Judge a KDT-DSL submission locally (the contest's tasks, "
                                                 "test points and scoring).")
    parser.add_argument("--kernel-impl-path", required=True, help="the submission file (defines get_kernel)")
    parser.add_argument("--task", type=int, choices=TASK_IDS, help="judge only this task (the output ends with its "
                                                                   "score line: no total over the four tasks)")
    parser.add_argument("--print-ir", action="store_true", help="print each test point's compiled IR")
    parser.add_argument("--json", action="store_true", help="print machine-readable results instead")
    parser.add_argument("--profile-path", metavar="DIR", help="write a Perfetto trace and a utilisation "
                                                               "summary per test point into DIR")
    parser.add_argument("--explain", action="store_true", help="say under every test point why it takes its "
                                                               "cycles: the bound, the critical path, stall reasons")
    parser.add_argument("--jobs", "-j", type=_positive, default=os.cpu_count() or 1, metavar="N",
                        help="judge the test points in N processes (default: the CPU count; the output is the "
                             "same, in the same order; 1 judges them one after another)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not os.path.isfile(args.kernel_impl_path):
        parser.error(f"--kernel-impl-path: no such file: {args.kernel_impl_path}")  # exit status 2
    task_ids = (args.task,) if args.task is not None else TASK_IDS
    explanations = {} if args.explain else None
    if args.json:
        stdout = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):  # the submission's own prints must not break the JSON
            results = run(args.kernel_impl_path, task_ids, print_ir=args.print_ir, profile_dir=args.profile_path,
                          timeout=args.timeout, out=None, kernel_out=sys.stderr, explanations=explanations,
                          jobs=args.jobs)
        summary = summarize(results)
        doc = {"submission": os.path.abspath(args.kernel_impl_path),
               "results": [r.to_dict() for r in results],
               "tasks": {str(t): v for t, v in summary["tasks"].items()},
               "total": summary["total"], "max_total": float(sum(TASKS[t].weight for t in task_ids))}
        if explanations is not None:
            doc["explain"] = explanations
        json.dump(doc, stdout, indent=2)
        print(file=stdout)
    else:
        run(args.kernel_impl_path, task_ids, print_ir=args.print_ir, profile_dir=args.profile_path,
            timeout=args.timeout, out=sys.stdout, kernel_out=sys.stdout, explanations=explanations, jobs=args.jobs)
        if explanations:
            print("\n" + "\n".join(legend_lines()))
    return 0


def exit_now(code: int) -> None:
    """Flush stdout and stderr and end the process with ``code`` at once, without the interpreter's
    teardown: freeing torch's and numpy's modules object by object takes about 0.3 s of CPU (a tenth of
    judging a whole file), and nothing is left to clean up by then (every file the judger writes is
    closed, the worker processes have been joined). A pipe closed by the reader (``| head``) exits 1."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # e.g. piped into `head`
        code = 1
    os._exit(code)


if __name__ == "__main__":
    try:
        exit_code = main()
    except BrokenPipeError:  # e.g. piped into `head`
        exit_code = 1
    exit_now(exit_code)
