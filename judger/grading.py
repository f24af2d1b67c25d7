"""Grading one test point (spec judging.md, "One test point" and "Verdicts").

The work is split in two steps so that the grading service can run the untrusted one in a sandbox:

1. ``compile_point(kernel_obj, task, point)`` (UNTRUSTED: runs submission code): seeds the RNGs,
   generates the first trial's inputs and calls ``kernel_obj.compile(task_args, io_tensors)``. It returns
   a ``kdt.CompiledKernel`` (plain IR; ``to_json()`` carries it out of a sandbox) or raises
   ``CompileFailed`` whose ``message`` is for the contestant.
2. ``judge_compiled(compiled, task, point)`` (TRUSTED: runs no submission code): seeds the RNGs again,
   regenerates every trial's inputs in the spec's order, launches the kernel three times, compares each
   output with the reference and scores the last trial's cycles. It depends on nothing from step 1 but the
   IR: compiling reads only the names, shapes and dtypes of the tensors and does not draw from any RNG,
   so the regenerated tensors are exactly the ones step 1 compiled against (tested).

``grade_point`` does both in one process (the local judger). ``load_submission`` and ``kernel_for_task``
import a submission file and call its ``get_kernel`` (the local judger trusts the file; the service does
this inside its sandbox). Every failure becomes a ``PointResult`` with a verdict and an actionable
message; scores come only from ``judger.scoring``.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import linecache
import os
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path

import numpy
import torch

import kdt
from kdt.language.errors import CompilationError
from kdt.language.errors import InternalError as FrontEndInternalError
from kdt.language.kernel import KernelFunction
from kdt.simulator.errors import LaunchError

from . import scoring
from . import testdata
from .clocks import WallClockBackstop, cpu_clock
from .tasks import COS_DIFF_TOL, TIMEOUT_S, TRIALS, Task, TestPoint
from .testdata import limit_threads, seed_rngs
from .verdicts import PointResult, Verdict

_KDT_DIR = os.path.dirname(os.path.abspath(kdt.__file__))
_JUDGER_DIR = os.path.dirname(os.path.abspath(__file__))
_FRONT_END_DIR = os.path.realpath(os.path.dirname(os.path.abspath(kdt.language.__file__)))
_TRUSTED_DIRS = tuple(os.path.realpath(d) + os.sep for d in (
    _KDT_DIR, _JUDGER_DIR, os.path.dirname(os.__file__), os.path.dirname(torch.__file__),
    os.path.dirname(numpy.__file__)))

# Launch-time failures that are the kernel's fault (RE). TimeoutError is checked first (TLE); anything
# else raised while simulating is a bug of the judge (IE).
LAUNCH_ERRORS = (LaunchError, IndexError, RuntimeError, ValueError, TypeError, ArithmeticError)
FRONT_END_FAULT = "internal error of the KDT compiler (not your fault): "  # an IE's message (``front_end_fault``)


class CompileFailed(Exception):
    """No compiled kernel for this test point. ``message`` is for the contestant; ``verdict`` is ``CE``
    (the submission's fault) or ``IE`` (a bug of the KDT front end that the front end itself detected while
    compiling a ``@kdt.kernel``: ``front_end_fault``)."""

    def __init__(self, message: str, verdict: Verdict = Verdict.CE):
        super().__init__(message)
        self.message = message
        self.verdict = Verdict(verdict)


# ---- the RNG and the inputs ------------------------------------------------------------------------

def trial_inputs(task: Task, point: TestPoint, trials: int = TRIALS) -> Iterator[dict]:
    """Seed the RNGs, then yield each trial's ``io_tensors`` in turn, drawn from the global torch RNG.

    Lazy on purpose: trial ``k+1``'s inputs are drawn only when asked for, which is the contest's order.
    This is the data from scratch; ``judge_compiled`` takes the same tensors, bit for bit, from
    ``judger.testdata`` (``point_trials``).
    """
    seed_rngs()
    for _ in range(trials):
        yield task.make_inputs(point)


def point_trials(task: Task, point: TestPoint) -> Iterator[tuple]:
    """Each trial's ``(io_tensors, reference)`` for one test point, from ``judger.testdata`` (computed once
    per process, or read from the disk cache): fresh copies of the io tensors (the reference is the cached
    master: read it, never write it). Seeds the RNGs, and before yielding trial ``k`` sets the torch RNG
    to the state drawing trial ``k`` leaves, so the RNGs are exactly as drawing the inputs would leave them.
    """
    data = testdata.point_data(task, point)
    seed_rngs()
    for trial in data.trials:
        torch.set_rng_state(trial.rng_state)
        yield trial.fresh_io(), trial.reference


TIMED_TRIAL = 1  # the trial simulated with the timing model (and profiled); the others run functionally


def launch_trial(compiled: kdt.CompiledKernel, io: dict, spec: kdt.TPUSpec, trial: int, *,
                 timeout: float = TIMEOUT_S, profile: kdt.Profile | None = None, print_file=None,
                 recording: kdt.simulator.Recording | None = None, clock=None) -> int | None:
    """Launch trial ``trial`` (from 1): with the timing model in ``TIMED_TRIAL`` (returns its cycles,
    records ``profile``), functionally in the others (returns None). Cycles never depend on the data
    (control flow and views depend only on scalars, tested on every conformance case and example), so the
    timed trial's cycles are every trial's; outputs, prints, errors and the time limit are the same in
    both models. Raises what ``kdt.launch_kernel`` raises.

    ``recording`` (a fresh ``kdt.simulator.Recording``, the same object for every trial of the point):
    the timed trial records its instructions into it, and a later trial whose recording is ``complete``
    replays them (``kdt.simulator.replay_kernel``: the functional model's outputs and prints, bit for bit,
    without the interpreter); an incomplete one (too many instructions) leaves the functional model.
    ``clock``: what ``timeout`` is measured on (``judger.clocks``; None: wall-clock time)."""
    timed = trial == TIMED_TRIAL
    if not timed and recording is not None and recording.complete:
        return kdt.simulator.replay_kernel(recording, io, timeout=timeout, print_file=print_file, clock=clock)
    return kdt.launch_kernel(compiled, io, spec, timeout=timeout, profile=profile if timed else None,
                             print_file=print_file, timing=timed, record=recording if timed else None, clock=clock)


# ---- step 1: compile (untrusted) -------------------------------------------------------------------

def compile_point(kernel_obj, task: Task, point: TestPoint, *, source_path: str | os.PathLike | None = None
                  ) -> kdt.CompiledKernel:
    """Compile ``kernel_obj`` (what ``get_kernel(task.id)`` returned) for this test point.

    Seeds the RNGs, generates trial 1's ``io_tensors`` (``judger.testdata.first_trial_io``: copies from this
    process's memory cache, else drawn) and calls ``kernel_obj.compile(task_args,
    io_tensors)``. ``source_path`` is the submission file, used to quote the offending line (found from
    the kernel object when omitted). Raises ``CompileFailed`` when ``kernel_obj`` is None, has no
    ``compile``, raises, or does not return a ``kdt.CompiledKernel``.
    """
    if kernel_obj is None:
        raise CompileFailed(f"this file does not solve task {task.id} (get_kernel returned None)")
    compile_fn = getattr(kernel_obj, "compile", None)
    if not callable(compile_fn):
        raise CompileFailed(f"get_kernel({task.id}) returned {_type_name(kernel_obj)}, which has no "
                            ".compile(task_args, io_tensors) method; return a @kdt.kernel function (or an "
                            "object whose .compile returns a compiled kernel)")
    source = str(source_path) if source_path is not None else _source_of(kernel_obj)
    io = testdata.first_trial_io(task, point)
    try:
        compiled = compile_fn(point.args(), io)
    except (Exception, SystemExit) as exc:
        if front_end_fault(exc, compile_fn):
            raise CompileFailed(FRONT_END_FAULT + _describe(exc, source), Verdict.IE) from None
        raise CompileFailed(_describe(exc, source)) from None
    if not isinstance(compiled, kdt.CompiledKernel):
        raise CompileFailed(f"get_kernel({task.id}).compile(task_args, io_tensors) returned "
                            f"{_type_name(compiled)}, not a compiled kernel (kdt.CompiledKernel)")
    return compiled


def front_end_fault(exc: BaseException, compile_fn) -> bool:
    """Whether ``exc``, raised by ``compile_fn``, is a bug of the KDT front end (``IE``) rather than the
    submission's doing (``CE``). An error raised by the contestant's own code is theirs whatever its class,
    ``kdt.language.errors.InternalError`` and its subclasses included. It is the front end's only when all
    of these hold:

    - ``compile_fn`` is ``KernelFunction.compile`` of a ``@kdt.kernel`` (not a contestant's ``.compile``,
      not a subclass's);
    - ``exc`` is exactly the front end's ``InternalError`` (the front end raises it for its own unexpected
      exceptions, ``KernelBuilder.visit``) and was raised inside ``kdt/language``;
    - no frame of ``exc`` or of the exceptions it chains (cause, context) lies outside the judge's code,
      the standard library, torch and numpy: no submission code ran on the way (a ``num_jobs_calculator``,
      an object's ``__index__``, a replaced front-end function);
    - the ``kdt`` modules and their classes are as they were when the judger was imported (a submission
      that replaces a front-end method with a builtin leaves no frame of its own: ``_kdt_unaltered``).
    """
    if type(exc) is not FrontEndInternalError or getattr(compile_fn, "__func__", None) is not KernelFunction.compile:
        return False
    if type(getattr(compile_fn, "__self__", None)) is not KernelFunction:
        return False
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames or not os.path.realpath(frames[-1].filename).startswith(_FRONT_END_DIR + os.sep):
        return False
    return all(_trusted_file(fr.filename) for e in _chain(exc) for fr in traceback.extract_tb(e.__traceback__)) \
        and _kdt_unaltered()


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it chains (``__cause__``, ``__context__``), each once."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__]


def _trusted_file(filename: str) -> bool:
    """Whether a traceback frame's file is the judge's (kdt, judger), the standard library's, torch's or numpy's."""
    f = os.path.realpath(filename)
    return f.startswith(_TRUSTED_DIRS) or filename.startswith("<frozen ")


def _kdt_namespaces() -> dict:
    """``{(module, class or '', name): object}`` over the loaded modules of the compile path (``kdt``,
    ``kdt.language``, ``kdt.ir``) and the classes they define: the fingerprint ``_kdt_unaltered`` compares
    (objects, not ids, so none is reused)."""
    found = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "kdt" or name.startswith(("kdt.language", "kdt.ir"))):
            continue
        for attr, value in list(vars(module).items()):
            found[(name, "", attr)] = value
            if isinstance(value, type) and value.__module__ == name:
                for cattr, cvalue in list(vars(value).items()):
                    found[(name, value.__qualname__, cattr)] = cvalue
    return found


def _kdt_unaltered() -> bool:
    """Whether every attribute of the compile path seen when the judger was imported is still the same object."""
    now = _kdt_namespaces()
    return all(now.get(key, _MISSING) is value for key, value in _PRISTINE_KDT.items())


# ---- step 2: launch, compare, score (trusted) ------------------------------------------------------

def judge_compiled(compiled: kdt.CompiledKernel, task: Task, point: TestPoint, *, timeout: float = TIMEOUT_S,
                   profile: kdt.Profile | None = None, print_file=None, compile_s: float = 0.0,
                   backstop: float | None = None) -> PointResult:
    """Run the test point's three trials on ``compiled`` and return its ``PointResult``.

    Seeds the RNGs and takes each trial's inputs and reference from ``point_trials`` (computed once per
    process and cached on disk, ``judger.testdata``; fresh copies per launch). Trial 1 runs the timing
    model and records what it executes, trials 2 and 3 replay that (the functional model's numpy work,
    ``launch_trial``): timing never depends on the data, so trial 1's cycles are the scored (last) trial's.
    ``timeout`` is the time limit of one launch (20 s in the contest): wall-clock seconds, as the contest's
    judger; with ``backstop`` (seconds), CPU seconds of this process (``judger.clocks.cpu_clock``), a launch
    that passes ``backstop`` seconds of wall-clock time first raising ``judger.clocks.WallClockBackstop``
    (it propagates, as ``MemoryError`` does: the judge's fault, for the caller to grade again or call ``IE``). ``profile`` (a ``kdt.Profile``) records trial 1's launch; a kernel that fails
    at launch fails at trial 1, leaving a partial trace.
    ``print_file`` receives the kernel's ``kdt.print`` output (discarded by default). ``compile_s`` is
    added to the timings (the time step 1 took). It limits torch to one thread (``limit_threads``).

    Verdicts: ``TLE`` (a launch passed ``timeout``), ``RE`` (a launch error), ``WA`` (a trial's output
    differs from the reference; the first failing trial ends the point), ``AC`` (scored with the last
    trial's cycles), ``IE`` (an unexpected exception: a bug of the judge). A ``MemoryError`` propagates:
    the grading service turns it into ``MLE`` (the local judger does the same).
    """
    limit_threads()
    start = time.perf_counter()
    timing = {"compile_s": compile_s, "simulate_s": 0.0}

    def result(verdict, cycles=None, score=0.0, message=""):
        util = None
        work = task.mxm_work(point)
        if cycles and work is not None:
            util = scoring.mxm_utilisation(work, cycles, task.num_sms)
        timing["total_s"] = compile_s + (time.perf_counter() - start)
        return PointResult(task.id, point.index, verdict, cycles, score, message, dict(timing), util)

    try:
        if not isinstance(compiled, kdt.CompiledKernel):  # the caller's bug, not the submission's
            raise TypeError(f"judge_compiled needs a kdt.CompiledKernel, got {type(compiled).__name__}")
        spec = task.tpu_spec()
        abs_tol, rel_tol = task.tolerances
        sink = print_file if print_file is not None else _NullWriter()
        cycles = None
        per = "" if backstop is None else " of CPU time"
        recording = kdt.simulator.Recording()
        for trial, (io, ref) in enumerate(point_trials(task, point), 1):
            t0 = time.perf_counter()
            try:
                c = launch_trial(compiled, io, spec, trial, timeout=timeout, profile=profile, print_file=sink,
                                 recording=recording,
                                 clock=None if backstop is None else cpu_clock(backstop, timeout))
            except TimeoutError as exc:
                return result(Verdict.TLE, message=f"{exc} ({timeout:g} s{per} per launch, trial {trial} of "
                                                   f"{TRIALS})\nSimulation timeout")
            except LAUNCH_ERRORS as exc:
                return result(Verdict.RE, message=f"{type(exc).__name__}: {exc} (at launch, trial {trial} of "
                                                  f"{TRIALS})")
            finally:
                timing["simulate_s"] += time.perf_counter() - t0
            if c is not None:
                cycles = c
            lines = [] if trial == 1 else [f"trial {trial} of {TRIALS}:"]
            if not kdt.utils.check_is_allclose(task.output, io[task.output], ref, abs_tol, rel_tol,
                                               COS_DIFF_TOL, out=lines.append):
                return result(Verdict.WA, cycles, message="\n".join(lines + _unwritten_hint(io[task.output], ref)
                                                                    + ["Incorrect result"]))
        return result(Verdict.AC, cycles, scoring.point_score(cycles, point.threshold))
    except (MemoryError, WallClockBackstop):  # the grading service's limit (MLE); the judge's overload
        raise
    except Exception as exc:  # the judge's own bug: never the submission's fault
        return result(Verdict.IE, message="internal error of the judge (not your fault; it will be "
                                          f"retried): {type(exc).__name__}: {exc}\n{traceback.format_exc()}")


def compile_failed_result(failure: CompileFailed, task: Task, point: TestPoint, *, compile_s: float = 0.0
                          ) -> PointResult:
    """The ``CE`` (or ``IE``) result of a test point whose kernel did not compile."""
    return PointResult(task.id, point.index, failure.verdict, None, 0.0, failure.message,
                       {"compile_s": compile_s, "simulate_s": 0.0, "total_s": compile_s}, None)


def grade_point(kernel_obj, task: Task, point: TestPoint, *, timeout: float = TIMEOUT_S,
                profile: kdt.Profile | None = None, print_file=None,
                source_path: str | os.PathLike | None = None, on_compiled=None) -> PointResult:
    """``compile_point`` then ``judge_compiled`` in this process. ``on_compiled(compiled)`` is called
    between the two (the local judger's ``--print-ir``). This process is trusted, so the point's data is
    fetched first (``judger.testdata.point_data``): compiling then copies trial 1 instead of drawing it."""
    with contextlib.suppress(Exception):  # a failure (even MemoryError) recurs in judge_compiled, which reports it
        testdata.point_data(task, point)
    t0 = time.perf_counter()
    try:
        compiled = compile_point(kernel_obj, task, point, source_path=source_path)
    except CompileFailed as failure:
        return compile_failed_result(failure, task, point, compile_s=time.perf_counter() - t0)
    compile_s = time.perf_counter() - t0
    if on_compiled is not None:
        on_compiled(compiled)
    return judge_compiled(compiled, task, point, timeout=timeout, profile=profile, print_file=print_file,
                          compile_s=compile_s)


# ---- a submission file -----------------------------------------------------------------------------

def load_submission(path: str | os.PathLike):
    """Import a submission file as a fresh module (no sandbox: the file is trusted here).

    Raises ``CompileFailed`` when the file cannot be read or imported (with the offending line) or does
    not define ``get_kernel``.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CompileFailed(f"cannot read the submission {str(path)!r}: {exc.strerror or exc}") from None
    name = f"kdt_submission_{hashlib.sha256(str(path.resolve()).encode() + data).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CompileFailed(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    linecache.checkcache(str(path))
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(name, None)
        raise CompileFailed(f"importing the submission failed: {_describe(exc, str(path))}") from None
    if not callable(getattr(module, "get_kernel", None)):
        raise CompileFailed("the submission does not define get_kernel(task_id)")
    return module


def kernel_for_task(module, task_id: int, *, source_path: str | os.PathLike | None = None):
    """``module.get_kernel(task_id)``; None means the file does not solve the task (``compile_point``
    turns that into ``CE``). Raises ``CompileFailed`` when ``get_kernel`` raises."""
    source = str(source_path) if source_path is not None else getattr(module, "__file__", None)
    try:
        return module.get_kernel(task_id)
    except (Exception, SystemExit) as exc:
        raise CompileFailed(f"get_kernel({task_id}) raised {_describe(exc, source)}") from None


# ---- messages --------------------------------------------------------------------------------------

def _unwritten_hint(out: torch.Tensor, ref: torch.Tensor) -> list:
    """Outputs that start as NaN (task 4's ``O``) stay NaN where the kernel never stored: say so."""
    if not out.is_floating_point():
        return []
    missing = int((torch.isnan(out) & ~torch.isnan(ref)).sum())
    if not missing:
        return []
    return [f"{missing} of {out.numel()} output elements are NaN where the reference is not: the output "
            "starts filled with NaN, so the kernel probably never stored those elements"]


class _NullWriter:
    def write(self, s):
        return len(s)

    def flush(self):
        pass


def _type_name(obj) -> str:
    if obj is None:
        return "None"
    if type(obj).__module__ == "builtins":
        return f"a {type(obj).__name__}"
    return f"a {type(obj).__qualname__} object"


def _source_of(kernel_obj) -> str | None:
    """The file that defines a kernel object (a ``KernelFunction``'s function, else the object's class)."""
    fn = getattr(kernel_obj, "fn", None)
    code = getattr(fn, "__code__", None)
    if code is not None:
        return code.co_filename
    module = sys.modules.get(getattr(type(kernel_obj), "__module__", ""), None)
    return getattr(module, "__file__", None)


def _same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return os.path.realpath(a) == os.path.realpath(b)


def _excerpt(path: str | None, line: int | None, col: int | None = None) -> str:
    if not path or not line:
        return ""
    text = linecache.getline(path, line).rstrip("\n")
    if not text.strip():
        return ""
    out = f"\n    {line:4d} | {text}"
    if col:
        out += f"\n         | {' ' * (col - 1)}^"
    return out


def _submission_frame(exc: BaseException, source: str | None):
    """The innermost traceback frame of ``exc`` (or of its causes) in the submission file, else the
    innermost one outside kdt/judger and the standard library."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        frames = traceback.extract_tb(exc.__traceback__)
        if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
            return exc.filename, exc.lineno, exc.offset
        for fr in reversed(frames):
            if source is not None:
                if _same_file(fr.filename, source):
                    return fr.filename, fr.lineno, None
            elif not _internal_file(fr.filename):
                return fr.filename, fr.lineno, None
        exc = exc.__cause__ or exc.__context__
    return None


def _internal_file(filename: str) -> bool:
    f = os.path.realpath(filename)
    if f.startswith((_KDT_DIR + os.sep, _JUDGER_DIR + os.sep)):
        return True
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    return f.startswith(stdlib + os.sep) or "<frozen" in filename


def _describe(exc: BaseException, source: str | None) -> str:
    """``Class: message`` plus, where known, the submission's line quoted with a caret."""
    text = str(exc) or ("out of memory" if isinstance(exc, MemoryError) else "")
    head = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if isinstance(exc, CompilationError) and exc.line is not None:
        return head + _excerpt(source, exc.line, exc.col)
    where = _submission_frame(exc, source)
    if where is None:
        return head
    filename, line, col = where
    if isinstance(exc, SyntaxError):
        return f"{head}{_excerpt(filename, line, col)}"
    return f"{head} (line {line} of {os.path.basename(filename)}){_excerpt(filename, line)}"


_MISSING = object()
_PRISTINE_KDT = _kdt_namespaces()  # kdt as the judger found it, before any submission was imported
