"""The sandboxed compile step: import a submission, call ``get_kernel``, compile test points.

Runs only inside ``grader.judging.sandbox`` (``python -m grader.judging.compile_child --submission FILE --points
1:0,1:1,... --result-fd N``). Everything we need is imported *before* the audit hook goes in and the
submission is imported. One JSON line per test point is written to the result pipe as soon as it is
compiled, so a submission that later hangs or crashes keeps the points it finished::

    {"task": 1, "point": 0, "ir": {...}}                     compiled (kdt IR as plain data)
    {"task": 1, "point": 0, "error": {"verdict": "CE", "message": "..."}}   (CE only: ``_emit``)
    {"ready": true}                                          first line: the judge's code is loaded
    {"event": {"event", "detail", "blocked"}}                 a refused event, as it happens
    {"events": [{"event", "detail", "blocked"}, ...]}        last line: what the audit hook saw

A child that dies before its ``ready`` line (an import of torch over the memory limit, an install the
sandbox user cannot read) failed because of the judge: ``IE``, retried, never the contestant's fault.

The parent (``grader.judging.compile``) treats every byte of this as untrusted.
"""
import argparse
import json
import os
import signal
import sys

import numpy  # noqa: F401  (imported before the audit hook: submissions may use it)
import torch  # noqa: F401

import kdt  # noqa: F401
from judger.grading import FRONT_END_FAULT as TRUSTED_FRONT_END_FAULT
from judger.grading import CompileFailed, compile_point, kernel_for_task, load_submission
from judger.tasks import get_task
from kdt.simulator.launch import prepare_blas_control

from . import audithook

# A front-end fault (judger.grading.front_end_fault) as this untrusted process reports it: CE (see _emit).
FRONT_END_FAULT = ("the KDT compiler reported an internal error of its own; the judge cannot tell from the "
                   "sandbox whether your code caused it, so this is CE (tell the organisers: if it is a "
                   "compiler bug they fix it and rejudge):\n")


class _PointTimeout(BaseException):
    """Not an ``Exception``: neither kdt nor the submission's ``except Exception`` may swallow it."""


def main(argv=None) -> int:
    args = _parse(argv)
    out = os.fdopen(args.result_fd, "w", encoding="utf-8")
    points = [tuple(int(x) for x in p.split(":")) for p in args.points.split(",") if p]
    source = os.path.abspath(args.submission)
    sys.dont_write_bytecode = True  # -I ignores PYTHONDONTWRITEBYTECODE; the child must write nothing
    prepare_blas_control()  # the simulator's own ctypes loads happen now, before the hook (autotuning kernels)
    events = audithook.install(_allowed_roots(source), sink=lambda record: _report_event(out, record)).events
    # Our own code is loaded: from here on a death is the submission's doing, before it the judge's.
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    try:
        _compile_all(source, points, out, args.point_cpu_seconds)
    finally:  # writing to the already-open pipe raises no audit event: the hook never needs turning off
        out.write(json.dumps({"events": events}) + "\n")
        out.flush()
    return 0


def _report_event(out, record) -> None:
    """Write one refused event to the parent at once (``{"event": {...}}``): a run killed later by a limit
    must not take what the hook refused with it."""
    out.write(json.dumps({"event": record}) + "\n")
    out.flush()


def _compile_all(source, points, out, point_seconds):
    try:
        module = load_submission(source)
    except CompileFailed as failure:
        for task_id, index in points:
            _emit(out, task_id, index, error=failure)
        return
    kernels = {}
    for task_id, index in points:
        task = get_task(task_id)
        try:
            if task_id not in kernels:
                kernels[task_id] = kernel_for_task(module, task_id, source_path=source)
            compiled = _with_cpu_budget(point_seconds, lambda: compile_point(
                kernels[task_id], task, task.points[index], source_path=source))
        except CompileFailed as failure:
            _emit(out, task_id, index, error=failure)
        except _PointTimeout:
            _emit(out, task_id, index, error=CompileFailed(
                f"compiling this test point took more than {point_seconds:g} s of CPU time "
                "(get_kernel, .compile or num_jobs_calculator does not finish)"))
        else:
            _emit(out, task_id, index, ir=compiled.to_dict())


def _with_cpu_budget(seconds, fn):
    """Run ``fn`` with a CPU-time alarm so one hanging point does not cost the others."""
    def alarm(signum, frame):
        raise _PointTimeout()

    previous = signal.signal(signal.SIGPROF, alarm)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _emit(out, task_id, index, ir=None, error=None):
    """Write one test point's record: its IR, or ``error`` (a ``CompileFailed``) as ``CE``. This process runs
    the contestant's code, so what it reports can only be what a contestant may claim (the
    parent refuses anything else, ``grader.judging.compile._VERDICTS_FROM_CHILD``): a bug of the
    front end noticed here (``judger.grading.front_end_fault``, ``IE`` in the trusted local judger) is
    ``CE`` with a message that says what happened."""
    record = {"task": task_id, "point": index}
    if error is not None:
        message = error.message if error.verdict == "CE" else \
            FRONT_END_FAULT + error.message.removeprefix(TRUSTED_FRONT_END_FAULT)
        record["error"] = {"verdict": "CE", "message": message}
    else:
        record["ir"] = ir
    out.write(json.dumps(record) + "\n")
    out.flush()


def _allowed_roots(source):
    """Where the child may read: its own directory, the Python installation and the packages it imports
    (never the repository root: the default data directory lives there)."""
    import grader
    import judger

    roots = {os.path.dirname(source), sys.prefix, sys.base_prefix, os.path.dirname(os.__file__),
             os.path.dirname(kdt.__file__), os.path.dirname(judger.__file__), os.path.dirname(grader.__file__),
             os.path.dirname(os.path.dirname(torch.__file__)), os.path.dirname(os.path.dirname(numpy.__file__)),
             "/proc/self", "/dev/null", "/dev/urandom", "/usr/share/zoneinfo"}
    return sorted(roots)


def _parse(argv):
    p = argparse.ArgumentParser(prog="grader.judging.compile_child")
    p.add_argument("--submission", required=True)
    p.add_argument("--points", required=True, help="task:point pairs, comma-separated")
    p.add_argument("--point-cpu-seconds", type=float, default=5.0,
                   help="CPU seconds one test point's compile may take before it alone fails")
    p.add_argument("--result-fd", type=int, required=True)
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
