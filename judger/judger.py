"""The local judger, compatible with the contest handout (spec judging.md, "The local judger").

    python judger/judger.py --kernel-impl-path FILE [--task N] [--print-ir] [--json] [--profile-path DIR]

Prints, per task, ``Running tests for Task N...``, one line per test point, ``Task N (name) score:
X.X / W`` and finally ``Total score: X.X / 100.0``. ``--json`` prints one JSON document instead
(``results``: PointResult dicts, ``tasks``, ``total``). ``--profile-path DIR`` writes, per test point,
``task{N}_point{P}.perfetto.json`` (open it in ui.perfetto.dev) and ``task{N}_point{P}.summary.json``;
only jobs 0-7 are traced (the job -> SM placement is complete), so the summary's ``profile`` part
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

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

import kdt
from judger.grading import CompileFailed, compile_failed_result, grade_point, kernel_for_task, load_submission, \
    summarize
from judger.tasks import TASK_IDS, TASKS, TIMEOUT_S
from judger.verdicts import PointResult, Verdict

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
        kernel_out=None) -> list:
    """Judge ``path`` on ``task_ids``; print the handout's lines to ``out`` (None: print nothing) and the
    kernels' ``kdt.print`` output and ``--print-ir`` to ``kernel_out``. Returns the ``PointResult``s."""
    emit = (lambda s: print(s, file=out, flush=True)) if out is not None else (lambda s: None)
    results = []
    try:
        module, load_error = load_submission(path), None
    except CompileFailed as failure:
        module, load_error = None, failure
    if profile_dir is not None:
        Path(profile_dir).mkdir(parents=True, exist_ok=True)
    for task_id in task_ids:
        task = TASKS[task_id]
        emit(f"Running tests for Task {task_id}...")
        failure = load_error
        kernel_obj = None
        if failure is None:
            try:
                kernel_obj = kernel_for_task(module, task_id, source_path=path)
            except CompileFailed as exc:
                failure = exc
        task_results = []
        for point in task.points:
            if failure is not None:
                result = compile_failed_result(failure, task, point)
            else:
                profile = kdt.Profile(jobs=PROFILED_JOBS) if profile_dir is not None else None
                on_compiled = None
                if print_ir:
                    def on_compiled(compiled, point=point):
                        print(f"IR of task {task_id}, testcase {point.index}:", file=kernel_out)
                        compiled.print_ir(file=kernel_out)
                try:
                    result = grade_point(kernel_obj, task, point, timeout=timeout, profile=profile,
                                         print_file=kernel_out, source_path=path, on_compiled=on_compiled)
                except MemoryError:
                    result = PointResult(task_id, point.index, Verdict.MLE,
                                         message="the judge ran out of memory while simulating this test point")
                if profile is not None and profile.runs:
                    _write_profile(Path(profile_dir), task, point, result, profile)
            for line in format_point(result):
                emit(line)
            task_results.append(result)
        results.extend(task_results)
        score = summarize(task_results)["tasks"][task_id]["score"]
        emit(f"Task {task_id} ({task.name}) score: {score:.1f} / {float(task.weight):.1f}")
    emit(f"Total score: {summarize(results)['total']:.1f} / 100.0")
    return results


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Judge a KDT-DSL submission locally (the contest's tasks, "
                                                 "test points and scoring).")
    parser.add_argument("--kernel-impl-path", required=True, help="the submission file (defines get_kernel)")
    parser.add_argument("--task", type=int, choices=TASK_IDS, help="judge only this task")
    parser.add_argument("--print-ir", action="store_true", help="print each test point's compiled IR")
    parser.add_argument("--json", action="store_true", help="print machine-readable results instead")
    parser.add_argument("--profile-path", metavar="DIR", help="write a Perfetto trace and a utilisation "
                                                               "summary per test point into DIR")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not os.path.isfile(args.kernel_impl_path):
        parser.error(f"--kernel-impl-path: no such file: {args.kernel_impl_path}")  # exit status 2
    task_ids = (args.task,) if args.task is not None else TASK_IDS
    if args.json:
        stdout = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):  # the submission's own prints must not break the JSON
            results = run(args.kernel_impl_path, task_ids, print_ir=args.print_ir, profile_dir=args.profile_path,
                          timeout=args.timeout, out=None, kernel_out=sys.stderr)
        summary = summarize(results)
        doc = {"submission": os.path.abspath(args.kernel_impl_path),
               "results": [r.to_dict() for r in results],
               "tasks": {str(t): v for t, v in summary["tasks"].items()},
               "total": summary["total"], "max_total": 100.0}
        json.dump(doc, stdout, indent=2)
        print(file=stdout)
    else:
        run(args.kernel_impl_path, task_ids, print_ir=args.print_ir, profile_dir=args.profile_path,
            timeout=args.timeout, out=sys.stdout, kernel_out=sys.stdout)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        sys.exit(1)
