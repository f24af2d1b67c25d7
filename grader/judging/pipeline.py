"""The one way a submission is graded (architecture.md "The data's way"), shared by ``kdt-grade local``,
the embedded mode and the Celery workers, so all of them give identical numbers.

1. ``prepare(source, points, settings)``: static audit, then the sandboxed compile of every requested
   test point. Returns plain data per point, a *compiled point*: ``{"ir": <IR JSON text>, "key": its
   result key}`` (``grader.judging.reuse``) or ``{"verdict": "CE"|"SV"|"IE", "message": ...}``, plus
   ``compile_s``.
2. ``judge(task_id, index, compiled_point, settings)``: trusted. Loads the IR strictly, runs the test
   point with ``judger.grading.judge_compiled`` (the only place scores are computed) and returns a
   ``PointResult``; a ``MemoryError`` of this process becomes ``MLE``. ``judge_traced`` also returns the
   compressed trace of the first trial (``grader.judging.trace_record``), which the service stores for the pages.

``prestart(limits, wait)`` starts the warm template step 1 forks from (``grader.judging.compile.prestart``)
when a judge process starts, so its first compile is warm too. ``grade_source`` chains both, fanning the
test points out over a process pool whose workers carry the grading memory limit.

kdt and ``judger.grading`` (so torch) are imported by ``judge`` when it first runs, in the process that
simulates: the HTTP processes and the CLI import this module through ``grader.service`` and never judge.
"""
import concurrent.futures
import time

from grader.config import Settings
from grader.runtime.pool import interrupts_deferred
from judger.clocks import WallClockBackstop
from judger.tasks import all_points, get_point, get_task, judging_work
from judger.verdicts import PointResult, Verdict

from . import trace_record as traces
from .audit import audit_source
from .compile import MAX_MESSAGE_CHARS, Failure, compile_submission, prestart  # noqa: F401 (prestart: for the judges)
from .pyparse import check_syntax, source_encoding
from .reuse import judging_limits, result_key

ALL_POINTS = tuple((task.id, point.index) for task, point in all_points())


class Rejected(ValueError):
    """A file refused at intake (too large, not UTF-8, not Python): nothing is stored or graded."""


def check_source(data: bytes, max_bytes: int) -> str:
    """The submission's text after the intake checks (size, UTF-8 and no other coding
    declaration, parses as Python).

    Raises ``Rejected`` with a message for the contestant."""
    if len(data) > max_bytes:
        raise Rejected(f"the file is {len(data)} bytes; the limit is {max_bytes} bytes")
    if not data.strip():
        raise Rejected("the file is empty")
    try:
        text = data.decode("utf-8")  # kept whole: the stored text encodes back to exactly these bytes
    except UnicodeDecodeError as exc:
        raise Rejected(f"the file is not UTF-8 text (byte {exc.start})") from None
    try:
        encoding = source_encoding(text)
    except SyntaxError as exc:
        raise Rejected(f"the file's coding declaration is not usable: {exc.msg}; submissions are UTF-8 "
                       "text, remove the coding line") from None
    if encoding != "utf-8":
        raise Rejected(f"the file declares the source encoding {encoding!r}; submissions are UTF-8 text "
                       "(the judge reads them so): remove the coding line or make it utf-8")
    try:
        check_syntax(text.removeprefix("\ufeff"))  # a byte-order mark is fine, as for Python itself
    except SyntaxError as exc:
        where = f"line {exc.lineno}: " if exc.lineno else ""
        raise Rejected(f"the file is not valid Python: {where}{exc.msg}") from None
    except ValueError as exc:
        raise Rejected(f"the file cannot be parsed as Python: {exc}") from None
    except (RecursionError, MemoryError):  # the parser's own limits; its MemoryError carries no text
        raise Rejected("the file cannot be parsed as Python: it is nested too deeply or is too long for "
                       "the parser") from None
    return text


def prepare(source: bytes, points, settings: Settings) -> dict:
    """Audit and compile: ``{(task, point): compiled point}`` (plain data, see the module docstring)."""
    t0 = time.perf_counter()
    report = audit_source(source.decode("utf-8-sig", "replace"), "submission.py")
    if not report.ok:
        message = ("security violation: the static audit refused the file\n" + report.format())[:MAX_MESSAGE_CHARS]
        return {p: _failure("SV", message, time.perf_counter() - t0) for p in points}
    outcome = compile_submission(source, list(points), settings.sandbox_limits)
    compile_s = time.perf_counter() - t0
    out = {}
    for p in points:
        k = outcome.kernels[p]
        out[p] = _failure(k.verdict, k.message, compile_s, k.retry) if isinstance(k, Failure) else \
            {"ir": k.to_json(), "compile_s": compile_s, "key": result_key(*p, k, judging_limits(settings))}
    return out


def judge_fault(compiled: dict) -> bool:
    """Whether ``prepare``'s compiled points show a fault of the judge's surroundings that this (trusted)
    process detected itself, worth compiling again: the sandbox could not run, or the child died while
    loading our code (``"retry"``). Nothing the child says makes the judge compile a file twice (and the
    child can claim no ``IE`` at all: ``grader.judging.compile._VERDICTS_FROM_CHILD``)."""
    return any(c.get("retry") for c in compiled.values())


def judge(task_id: int, index: int, compiled_point: dict, settings: Settings) -> PointResult:
    """Grade one test point from its compiled point (trusted; runs no submission code)."""
    return _judge(task_id, index, compiled_point, settings, None)


def judge_traced(task_id: int, index: int, compiled_point: dict, settings: Settings
                 ) -> tuple[PointResult, bytes | None]:
    """``judge``, also recording the first trial's trace (``grader.judging.trace_record``: jobs 0-3, capped,
    compressed); the trace is None when nothing was launched or no job ran."""
    profile = traces.profile_for_judging()
    result = _judge(task_id, index, compiled_point, settings, profile)
    record = traces.record_of(profile)
    return result, (None if record is None else traces.encode(record))


def judge_explained(task_id: int, index: int, compiled_point: dict, settings: Settings
                    ) -> tuple[PointResult, dict | None]:
    """``judge`` with every job of the first trial traced, and why the point takes its cycles
    (``judger.explain.explanation``: the bound, utilisation, stall cycles by cause, job 0's critical path,
    the top lines; None when nothing was launched). What ``kdt-grade local --explain`` prints."""
    from judger.explain import explanation, profile_for_explain

    profile = profile_for_explain()
    result = _judge(task_id, index, compiled_point, settings, profile)
    return result, explanation(profile)


def unsimulated(task_id: int, index: int, compiled_point: dict) -> PointResult | None:
    """The result of a compiled point that has nothing to simulate (``CE``, ``SV``, ``IE``: no IR), else
    None. The service records these at compile time: they never wait for a worker."""
    if "ir" in compiled_point:
        return None
    compile_s = float(compiled_point.get("compile_s", 0.0))
    return PointResult(task_id, index, Verdict(compiled_point["verdict"]), None, 0.0, compiled_point["message"],
                       {"compile_s": compile_s, "simulate_s": 0.0, "total_s": compile_s}, None)


def _judge(task_id: int, index: int, compiled_point: dict, settings: Settings, profile) -> PointResult:
    import kdt
    from judger.grading import judge_compiled

    done = unsimulated(task_id, index, compiled_point)
    if done is not None:
        return done
    task, point = get_task(task_id), get_point(task_id, index)
    compile_s = float(compiled_point.get("compile_s", 0.0))
    t0 = time.perf_counter()
    try:
        compiled = kdt.CompiledKernel.from_json(compiled_point["ir"])
        return judge_compiled(compiled, task, point, timeout=settings.sim_timeout_seconds, compile_s=compile_s,
                              profile=profile, backstop=max(settings.sim_backstop_seconds, settings.sim_timeout_seconds))
    except kdt.IRFormatError as exc:
        verdict, message = Verdict.SV, f"security violation: malformed compiled kernel: {exc}"
    except MemoryError:
        verdict, message = Verdict.MLE, (f"the simulation needed more than {settings.grade_memory_mb} MiB "
                                         "of memory")
    spent = time.perf_counter() - t0
    return PointResult(task_id, index, verdict, None, 0.0, message,
                       {"compile_s": compile_s, "simulate_s": spent, "total_s": compile_s + spent}, None)


def grade_source(source: bytes, settings: Settings, points=ALL_POINTS, pool=None, on_result=None,
                 explanations: dict | None = None, store=None) -> list:
    """Audit, compile and judge ``points`` of one submission; results in ``points`` order.

    ``pool`` is a ``concurrent.futures`` executor (see ``grader.runtime.pool``); None judges in this process.
    ``on_result(PointResult)`` is called as each point finishes (progress bars). With ``explanations`` (a
    dict), every point is judged by ``judge_explained`` and its explanation stored there under
    ``"TASK.POINT"`` (as ``judger/judger.py --explain`` does; none for a point that ran nothing).
    ``store`` (``grader.service.reuse.LocalResults``, not with ``explanations``): a point whose result it
    holds (``store.find(compiled point)``) is not simulated but takes it (``reused``), and every fresh
    result is kept there (``store.keep(compiled point, result)``)."""
    compiled = prepare(source, points, settings)
    judge_point = judge if explanations is None else judge_explained
    store = store if explanations is None else None
    reused = {p: r for p in points if store is not None and (r := store.find(compiled[p])) is not None}

    def finished(p, outcome) -> PointResult:
        result, expl = outcome if explanations is not None else (outcome, None)
        if expl is not None:
            explanations[f"{p[0]}.{p[1]}"] = expl
        if store is not None and p not in reused:
            store.keep(compiled[p], result)
        if on_result:
            on_result(result)
        return result

    done = {p: finished(p, r) for p, r in reused.items()}
    todo = [p for p in points if p not in reused]
    if pool is None:
        done.update((p, finished(p, _or_ie(p, lambda p=p: judge_point(*p, compiled[p], settings), explanations)))
                    for p in todo)
        return [done[p] for p in points]
    with interrupts_deferred():  # a Ctrl-C waits until the pool's processes are started
        futures = {pool.submit(judge_point, *p, compiled[p], settings): p
                   for p in sorted(todo, key=lambda p: judging_work(*p), reverse=True)}  # largest first
    for fut in concurrent.futures.as_completed(futures):
        p = futures[fut]
        done[p] = finished(p, _or_ie(p, fut.result, explanations))
    return [done[p] for p in points]


def _or_ie(p: tuple[int, int], outcome, explanations) -> PointResult | tuple:
    """``outcome()`` (a point's judging), or its ``IE`` when the judge failed: a pool process died (e.g.
    killed by the OS) or the launch passed the wall-clock backstop (``judger.clocks``)."""
    try:
        return outcome()
    except Exception as exc:
        what = str(exc) if isinstance(exc, WallClockBackstop) else \
            f"the grading process failed ({type(exc).__name__}: {exc})"
        failed = PointResult(*p, Verdict.IE, None, 0.0, f"internal error of the judge (not your fault): {what}; "
                                                        "grade the file again")
        return failed if explanations is None else (failed, None)


def _failure(verdict: str, message: str, compile_s: float, retry: bool = False) -> dict:
    """A compiled point without a kernel; ``retry`` (only when true) marks a judge fault worth compiling again."""
    return {"verdict": str(verdict), "message": message, "compile_s": compile_s, **({"retry": True} if retry else {})}
