"""Compile a submission in the sandbox and bring back validated kernels.

``compile_submission(source, points, limits)`` runs ``compile_child`` under ``sandbox`` (this package) once
for all the requested test points and returns, per ``(task, point)``, either a ``kdt.CompiledKernel``
(loaded with the strict IR loader) or a ``Failure(verdict, message)``. Everything the child sends is
untrusted: malformed lines or IR mean the child was tampered with (``SV``), an event refused by the audit
hook is ``SV``, a child that dies, hangs or floods output gives ``CE`` with the reason, except one that
dies before its ``ready`` line (while loading the judge's own code, before the submission ran), or that
passes its wall-clock limit before its CPU limit while the machine is busy (``_overloaded``): that is
the judge's fault, ``IE`` (``Failure.retry``, ``pipeline.judge_fault``; the service tries again). ``IE``
comes only from what this trusted process detects itself: the child runs the contestant's code, so its
report may claim only what a contestant may claim (``CE``: ``_VERDICTS_FROM_CHILD``); a record claiming
anything else is tampering (``SV``). A front-end bug the child noticed (``judger.grading.front_end_fault``)
arrives as ``CE`` with a message that says so (``grader.judging.compile_child``).
"""
import json
from dataclasses import dataclass

import kdt
from kdt.ir.serialize import MAX_BYTES, MAX_NODES, IRFormatError, kernel_from_dict

from .sandbox import SandboxLimits, SandboxRun, prestart_warm, run_sandboxed

SUBMISSION_NAME = "submission.py"
# What a warm compile child finds imported (grader.judging.warm): the compile child's own imports (not
# the child itself: runpy runs it as __main__, from its source).
WARM_MODULES = ("argparse", "json", "numpy", "torch", "kdt", "judger.grading", "judger.tasks",
                "kdt.simulator.launch", "grader.judging.audithook")
MAX_MESSAGE_CHARS = 20_000  # of a point's message (what the child reports, the audit's report)
MAX_EVENTS = 1000  # audit hook events kept of one compile run
# What the child may claim for a test point: only what a contestant may claim.
_VERDICTS_FROM_CHILD = ("CE",)
# A result line is parsed (json.loads, in this trusted process) only if it can hold an IR the loader
# accepts: at most MAX_BYTES of JSON and, as every IR node is one JSON array or object, at most twice
# MAX_NODES of them. Anything larger is refused before it costs memory (the loader would refuse it after).
MAX_LINE_CHARS = MAX_BYTES + 64 * 1024
MAX_LINE_CONTAINERS = 2 * MAX_NODES


@dataclass(frozen=True)
class Failure:
    """A test point that has no kernel to simulate: its verdict and the message for the contestant."""

    verdict: str
    message: str
    retry: bool = False  # a fault of the judge's surroundings that this process saw itself: compile again


@dataclass
class CompileOutcome:
    """Per ``(task, point)``: a ``kdt.CompiledKernel`` or a ``Failure``; plus the sandbox run's facts."""

    kernels: dict
    run: SandboxRun
    events: list


def compile_submission(source: bytes, points: list, limits: SandboxLimits) -> CompileOutcome:
    """Compile ``source`` (the submission file's bytes) for ``points`` (``(task_id, index)`` pairs)."""
    spec = ",".join(f"{t}:{p}" for t, p in points)
    # One hanging point may use half the CPU budget; the rest stays for importing and the other points.
    args = ["--submission", SUBMISSION_NAME, "--points", spec, "--point-cpu-seconds",
            str(max(1.0, limits.cpu_seconds / 2))]
    stalled = cpu_stall_seconds()
    run = run_sandboxed(("module", "grader.judging.compile_child"), args, {SUBMISSION_NAME: source}, limits,
                        warm=WARM_MODULES if limits.warm else ())
    if run.status == "timeout":
        after = cpu_stall_seconds()
        stalled = None if stalled is None or after is None else after - stalled
    if run.status == "unavailable":
        bad = Failure("IE", "internal error of the judge: the sandbox cannot run here ("
                      + run.stderr.decode(errors="replace") + "); not your fault, it will be retried", retry=True)
        return CompileOutcome({p: bad for p in points}, run, [])
    kernels, events, tampered, ready = _parse_results(run.result, set(points))
    if not ready and not tampered:
        bad = Failure("IE", "internal error of the judge: the compile process died while loading the judge's "
                      "own code, before your file ran (" + _death_message(run, limits).replace("\n", " | ")[:600]
                      + "); not your fault, it will be retried", retry=True)
        return CompileOutcome({p: bad for p in points}, run, events)
    if tampered:
        bad = Failure("SV", f"security violation: the compile process returned malformed results ({tampered})")
        return CompileOutcome({p: bad for p in points}, run, events)
    blocked = [e for e in events if e.get("blocked")]
    if blocked:
        lines = "\n".join(f"  {e['event']}: {e['detail']}" for e in blocked[:10])
        bad = Failure("SV", f"security violation: the submission tried operations the judge forbids:\n{lines}")
        return CompileOutcome({p: bad for p in points}, run, events)
    missing = _overloaded(run, limits, stalled) or Failure("CE", _death_message(run, limits))
    return CompileOutcome({p: _explain(kernels.get(p, missing), limits) for p in points}, run, events)


def prestart(limits: SandboxLimits, wait: bool = False) -> bool:
    """Start the warm template that ``compile_submission`` forks from (``limits.warm``, contained runs),
    now and in the background (``wait``: until it is ready), so that this judge process's first compile,
    its first submission after a start or restart, is warm too. Returns whether one is being started."""
    return limits.warm and prestart_warm(WARM_MODULES, wait)


def cpu_stall_seconds() -> float | None:
    """Seconds for which some task of this machine has waited for a CPU since boot (Linux PSI,
    ``/proc/pressure/cpu``, "some" total), or None where the kernel does not say."""
    try:
        with open("/proc/pressure/cpu") as f:
            some = f.readline().split()
        return int(some[-1].removeprefix("total=")) / 1e6
    except (OSError, ValueError, IndexError):
        return None


# A compile that ran out of wall-clock time while the machine's tasks waited for a CPU this share of the
# time (or more, or unknown) was slowed by the load: the judge's fault, compiled again; unless its own
# processes used less CPU time than WORKED_SHARE of it: a starved child still gets its turns, a blocked
# one (waiting for a lock or a future of its own) uses nothing.
BUSY_SHARE = 0.25
WORKED_SHARE = 0.02


def _overloaded(run: SandboxRun, limits: SandboxLimits, stalled: float | None) -> Failure | None:
    """The ``IE`` (compiled again, ``retry``) of a compile that passed its wall-clock limit before its CPU
    limit while the machine was busy (``stalled`` seconds of CPU waiting during the run, None: unknown) and
    it kept working (its CPU seconds, where measured). None when the run did not time out, the machine was
    not busy, or the child hardly ran: then it waited for something of its own (``CE``)."""
    if run.status != "timeout" or (stalled is not None and stalled < BUSY_SHARE * run.wall_seconds):
        return None
    if run.cpu_seconds is not None and run.cpu_seconds < WORKED_SHARE * run.wall_seconds:
        return None
    used = "" if run.cpu_seconds is None else f" and used {run.cpu_seconds:.1f} s of its {limits.cpu_seconds} s of CPU time"
    return Failure("IE", f"internal error of the judge: the compile ran {limits.wall_seconds:g} s of wall-clock time"
                   f"{used} on a busy machine; not your fault, it will be retried", retry=True)


def _explain(result, limits: SandboxLimits):
    """Add the limit a ``MemoryError`` ran into: the bare exception says nothing a contestant can use."""
    if isinstance(result, Failure) and "MemoryError" in result.message and "limit" not in result.message:
        return Failure(result.verdict, f"{result.message}\n(the compile step may use at most "
                                       f"{limits.memory_bytes // 2**20} MiB of memory)")
    return result


def _parse_results(data: bytes, wanted: set):
    """``(kernels, events, problem, ready)``; ``problem`` names the first sign of tampering, else '';
    ``ready``: the child's first line said the judge's code was loaded."""
    kernels, events, seen = {}, [], set()
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return {}, [], "not UTF-8", True
    ready = bool(lines) and lines[0] == '{"ready": true}'
    for n, line in enumerate(lines[1:] if ready else lines, 2 if ready else 1):
        if len(line) > MAX_LINE_CHARS or line.count("[") + line.count("{") > MAX_LINE_CONTAINERS:
            return {}, [], f"line {n} is larger than any IR the judge accepts", True
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return {}, [], f"line {n} is not JSON", True
        if not isinstance(record, dict):
            return {}, [], f"line {n} is not an object", True
        if set(record) in ({"events"}, {"event"}):  # the final list, or one refused event as it happened
            more = _events(record["events"] if "events" in record else [record["event"]])
            if more is None:
                return {}, [], "malformed event list", True
            for e in more:  # the final list repeats the streamed ones; at most MAX_EVENTS are kept
                key = (e["event"], e["detail"], e["blocked"])
                if key not in seen and len(events) < MAX_EVENTS:
                    seen.add(key)
                    events.append(e)
            continue
        key = (record.get("task"), record.get("point"))
        if key not in wanted or key in kernels:
            return {}, [], f"line {n}: unexpected test point {key}", True
        try:
            kernels[key] = _point(record)
        except (IRFormatError, ValueError) as exc:
            return {}, [], f"line {n}: {exc}", True
    return kernels, events, "", ready or bool(kernels)


def _point(record):
    if set(record) == {"task", "point", "ir"}:
        return kdt.CompiledKernel(kernel_from_dict(record["ir"]))
    error = record.get("error")
    if set(record) != {"task", "point", "error"} or not isinstance(error, dict) or set(error) != {
            "verdict", "message"} or error["verdict"] not in _VERDICTS_FROM_CHILD or not isinstance(
            error["message"], str):
        raise ValueError("malformed test point record")
    return Failure(error["verdict"], error["message"][:MAX_MESSAGE_CHARS])


def _events(raw):
    if not isinstance(raw, list) or len(raw) > MAX_EVENTS:
        return None
    out = []
    for e in raw:
        if not (isinstance(e, dict) and set(e) == {"event", "detail", "blocked"} and isinstance(e["event"], str)
                and isinstance(e["detail"], str) and isinstance(e["blocked"], bool)):
            return None
        out.append({"event": e["event"][:100], "detail": e["detail"][:300], "blocked": e["blocked"]})
    return out


def _death_message(run: SandboxRun, limits: SandboxLimits) -> str:
    """Why the compile process gave no result for a test point, in words a contestant can act on."""
    tail = run.stderr.decode("utf-8", "replace").strip().splitlines()[-8:]
    detail = ("\n" + "\n".join(tail)) if tail else ""
    if run.status == "timeout":
        return (f"compilation did not finish within {limits.wall_seconds:g} s of wall-clock time, on a machine that "
                f"was not busy: it was waiting for something{detail}")
    if run.status == "output_limit":
        return f"the submission printed more than {limits.output_bytes} bytes while compiling"
    if run.status == "result_limit":
        return f"the compiled kernels exceed {limits.result_bytes} bytes of IR"
    if run.status == "memory_limit":
        return (f"compilation ran out of memory: its processes together used more than "
                f"{limits.memory_bytes // 2**20} MiB{detail}")
    if run.status == "cpu_limit":
        return f"compilation used more than {limits.cpu_seconds} s of CPU time (all its processes together){detail}"
    if run.signal_name == "SIGXCPU":
        return f"compilation used more than {limits.cpu_seconds} s of CPU time{detail}"
    if "MemoryError" in detail or run.signal_name in ("SIGKILL", "SIGSEGV", "SIGABRT"):
        return (f"compilation ran out of memory (limit {limits.memory_bytes // 2**20} MiB) or crashed "
                f"({run.signal_name or 'exit code ' + str(run.returncode)}){detail}")
    if run.signal_name:
        return f"the compile process was killed by {run.signal_name}{detail}"
    return f"the compile process exited early (exit code {run.returncode}) before compiling this test point{detail}"
