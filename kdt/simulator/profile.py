"""Per-instruction traces, the job -> SM placement, a Perfetto export and a utilisation summary.

Pass a ``Profile`` to ``kdt.launch_kernel(..., profile=p)``; without one nothing is recorded.
"""
import json
from dataclasses import dataclass

from . import explain

@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One executed instruction of a job: DSL op name, issue and finish cycle (relative to the job's
    start), the unit (``MEM``, ``VXM``, ``MXM`` or ``FREE``), the source line and its stall reason (spec
    §4's maximum, ``kdt.simulator.explain``): ``cause`` (``isu``, ``raw``, ``waw``, ``war`` or ``unit``),
    ``wait`` (cycles past its in-order issue slot) and ``gate`` (the index in this job's trace of the
    instruction it waited for, or None). The reason is None in a trace stored before reasons existed."""

    op: str
    issue: int
    finish: int
    unit: str
    line: int
    cause: str | None = None
    wait: int | None = None
    gate: int | None = None

    def row(self) -> list:
        """The entry as a JSON-able list, the stored-trace format: ``[op, issue, finish, unit, line]``
        followed by ``cause, wait, gate`` when the entry has its stall reason (cycles as in the entry);
        ``TraceEntry(*row)`` reads it back."""
        head = [self.op, self.issue, self.finish, self.unit, self.line]
        return head if self.cause is None else head + [self.cause, self.wait, self.gate]


@dataclass(frozen=True, slots=True)
class JobRun:
    """Where and when a job ran: its SM, its start cycle on that SM and its length in cycles."""

    job: int
    sm: int
    start: int
    cycles: int


class Profile:
    """Collects what a launch did. ``jobs`` limits the per-instruction traces to those job ids
    (default: every job); the placement and per-job cycles are always complete."""

    def __init__(self, jobs=None):
        self.selected = None if jobs is None else set(jobs)
        self._raw: dict[int, list] = {}
        self.runs: list[JobRun] = []
        self.kernel_cycles = 0
        self.num_sms = 0
        self.kernel_name = ""

    # ---- filled in by launch_kernel -------------------------------------------------------------

    def start(self) -> None:
        """Forget any earlier launch: a Profile describes the last launch it was given to."""
        self._raw = {}
        self.runs = []
        self.kernel_cycles = 0

    def trace_for(self, job: int):
        """The list the simulator appends this job's raw records to, or None when not traced."""
        if self.selected is not None and job not in self.selected:
            return None
        return self._raw.setdefault(job, [])

    def finish(self, kernel, spec, job_cycles, placement, cycles):
        self.kernel_name = kernel.name
        self.num_sms = spec.num_sms
        self.kernel_cycles = cycles
        self.runs = [JobRun(j, sm, start, c) for j, ((sm, start), c) in enumerate(zip(placement, job_cycles))]

    # ---- reading ---------------------------------------------------------------------------------

    @property
    def traces(self) -> dict:
        """job id -> list of ``TraceEntry`` (with the stall reasons) in program order."""
        return {job: [TraceEntry(*r) for r in raw] for job, raw in self._raw.items()}

    def trace(self, job: int) -> list:
        """``[[op, issue, finish], ...]`` of one job, the conformance format; ``KeyError`` for a job
        that was not traced (not selected, or not in the launch)."""
        if job not in self._raw:
            raise KeyError(f"job {job} was not traced (traced: {sorted(self._raw)})")
        return [[r[0], r[1], r[2]] for r in self._raw[job]]

    def is_traced(self, job: int) -> bool:
        """Whether the last launch traced ``job``."""
        return job in self._raw

    def _job(self, job: int) -> list:
        if job not in self._raw:
            raise KeyError(f"job {job} was not traced (traced: {sorted(self._raw)})")
        return self._raw[job]

    def stalls(self, job: int) -> list:
        """Why each instruction of a traced job issued when it did (``kdt.simulator.explain.stalls``):
        per instruction its ``cause`` (``isu``, ``raw``, ``waw``, ``war`` or ``unit``), ``wait`` (cycles past
        its in-order issue slot) and ``gate`` (the instruction waited for: op, source line, job-relative
        finish cycle); all three None for a trace stored before reasons existed. ``KeyError`` for a job
        that was not traced."""
        return explain.stalls(self._job(job))

    def critical_path(self, job: int = 0) -> list:
        """The chain of gating instructions from the job's last finish back to its start, each link with
        the cycles of the job it accounts for (they add up to the job's cycles;
        ``kdt.simulator.explain.critical_path``; empty for a trace without stall reasons). ``KeyError``
        for a job that was not traced."""
        return explain.critical_path(self._job(job))

    def bound(self) -> dict:
        """The lower bound of the last launch given its job placement: per unit (``ISU``, ``VXM``, ``MXM``)
        the busy cycles it needs on the busiest SM, and the largest (``cycles``); ``complete`` is False
        unless every job was traced (``kdt.simulator.explain.bound``)."""
        return explain.bound(self._raw, self.runs)

    def explain(self, job: int = 0, top: int = 5) -> dict:
        """Everything that says why the launch took its cycles: ``kernel_cycles``, the ``bound``, each
        unit's ``utilisation``, ``stall_cycles`` by cause over the traced jobs, the ``top_lines`` by stall
        cycles caused and suffered, and the ``critical_path`` of ``job`` (all cycles)."""
        stalled = dict.fromkeys(explain.CAUSES[1:], 0)
        for raw in self._raw.values():
            for cause, cycles in explain.stall_cycles(raw).items():
                stalled[cause] += cycles
        return {"kernel_cycles": self.kernel_cycles, "bound": self.bound(),
                "utilisation": self.summary()["utilisation"], "stall_cycles": stalled,
                "top_lines": explain.top_lines(self._raw, top),
                "critical_path": self.critical_path(job) if job in self._raw else [], "job": job}

    def summary(self) -> dict:
        """Per-unit busy cycles and utilisation of the traced jobs, the bottleneck unit and the launch's
        ``bound`` (``Profile.bound``; the stall cycles by cause are in ``explain()``).

        Busy cycles: VXM/MXM the sum of latencies (a unit runs one instruction at a time); MEM the
        union of each job's load/store intervals (memory is not a unit: nothing waits for it to be
        free, so it is never the bottleneck); ISU one cycle per issued instruction. ``utilisation``
        divides by the traced jobs' own cycles; ``kernel_utilisation`` (all jobs traced only) by
        ``kernel_cycles * num_sms``, which also counts SMs left idle by the job placement.
        """
        busy = {"ISU": 0, "MEM": 0, "VXM": 0, "MXM": 0}
        counts = {"MEM": 0, "VXM": 0, "MXM": 0, "FREE": 0}
        for raw in self._raw.values():
            mem = []
            for op, issue, finish, unit, *_ in raw:
                counts[unit] += 1
                if unit in ("VXM", "MXM"):
                    busy[unit] += finish - issue
                elif unit == "MEM":
                    mem.append((issue, finish))
                if unit != "FREE":
                    busy["ISU"] += 1
            busy["MEM"] += _union_length(mem)
        traced_cycles = max(sum(r.cycles for r in self.runs if r.job in self._raw), 1)
        util = {u: busy[u] / traced_cycles for u in busy}
        all_traced = len(self._raw) == len(self.runs)
        capacity = max(self.kernel_cycles * self.num_sms, 1)
        return {"kernel": self.kernel_name, "kernel_cycles": self.kernel_cycles, "num_sms": self.num_sms,
                "jobs": len(self.runs), "traced_jobs": len(self._raw), "traced_cycles": traced_cycles,
                "instructions": counts, "busy_cycles": busy, "utilisation": util,
                "kernel_utilisation": {u: busy[u] / capacity for u in busy} if all_traced else None,
                "bottleneck": max(("MXM", "VXM", "ISU"), key=lambda u: util[u]) if busy["ISU"] else None,
                "bound": explain.bound(self._raw, self.runs)}

    def to_perfetto(self) -> dict:
        """Chrome trace / Perfetto JSON: one process per SM, one thread per unit and a job track; loads
        and stores overlap (memory is not a unit), so they are spread over as many ``MEM`` lanes as
        needed for the slices of each thread to stay disjoint. One cycle is shown as one microsecond.

        Each instruction's slice has in its args ``job``, ``line``, ``issue`` and ``finish`` (job-relative
        cycles) and its stall reason (``Profile.stalls``, spec §4): ``cause`` and ``wait`` (cycles past
        its in-order issue slot) and, when it waited for an earlier instruction (``raw``, ``waw``, ``war``,
        ``unit``), ``gate``: that instruction's ``op``, ``line`` and job-relative ``finish`` cycle. Each such
        wait is also a flow (an arrow; category ``stall``, named after the cause) from the gating slice to
        the waiting one, its two ends at the middle of their slices so each binds to its own slice. A
        trace without reasons (stored before they existed) has neither."""
        events, flows, lanes = [], [], {}
        for run in self.runs:
            events.append({"ph": "X", "name": f"job {run.job}", "pid": run.sm, "tid": 0, "ts": run.start,
                           "dur": run.cycles, "args": {"job": run.job}})
            raw = self._raw.get(run.job, [])
            slices = []  # per trace index: (tid, ts, dur) of its slice
            for entry in raw:
                op, issue, finish, unit, line = entry[:5]
                ts, tid = run.start + issue, _THREADS[unit]
                if unit == "MEM":
                    tid = _MEM_TID + _lane(lanes.setdefault(run.sm, []), ts, run.start + finish)
                args = {"job": run.job, "line": line, "issue": issue, "finish": finish}
                slices.append((tid, ts, finish - issue))
                if len(entry) == 8:
                    cause, wait, gate = entry[5:]
                    args["cause"], args["wait"] = cause, wait
                    if wait and gate is not None:
                        g = raw[gate]
                        args["gate"] = {"op": g[0], "line": g[4], "finish": g[2]}
                        flows += _flow(len(flows) // 2, cause, run.sm, slices[gate], slices[-1])
                events.append({"ph": "X", "name": op, "pid": run.sm, "tid": tid, "ts": ts, "dur": finish - issue,
                               "args": args})
        meta = []
        for sm in range(self.num_sms):
            meta.append({"ph": "M", "name": "process_name", "pid": sm, "args": {"name": f"SM {sm}"}})
            names = {0: "jobs", **{tid: unit for unit, tid in _THREADS.items() if unit != "MEM"}}
            names.update({_MEM_TID + i: f"MEM {i}" for i in range(max(len(lanes.get(sm, [])), 1))})
            for tid, name in sorted(names.items()):
                meta.append({"ph": "M", "name": "thread_name", "pid": sm, "tid": tid, "args": {"name": name}})
        return {"traceEvents": meta + events + flows, "displayTimeUnit": "ns",
                "otherData": {"kernel": self.kernel_name, "kernel_cycles": self.kernel_cycles}}

    def write_perfetto(self, path) -> None:
        """Write ``to_perfetto()`` as JSON to ``path`` (open it in ui.perfetto.dev or chrome://tracing)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_perfetto(), f)


_THREADS = {"VXM": 1, "MXM": 2, "FREE": 3, "MEM": 4}
_MEM_TID = 4


def _flow(ident: int, cause: str, pid: int, source: tuple, target: tuple) -> list:
    """The two events of a flow (trace-event format, flow v1) from the slice ``source`` to ``target``
    (each ``(tid, ts, dur)``, microseconds = cycles): a start bound to the slice enclosing its ``ts``, an
    end (``bp`` ``e``) bound likewise; both at their slice's middle, strictly inside it unless ``dur`` is 0."""
    return [{"ph": ph, "id": ident, "name": cause, "cat": "stall", "pid": pid, "tid": tid, "ts": _middle(ts, dur),
             **extra} for ph, (tid, ts, dur), extra in (("s", source, {}), ("f", target, {"bp": "e"}))]


def _middle(ts: int, dur: int):
    """``ts + dur / 2``, an int when it is one (cycles)."""
    return ts + dur // 2 if dur % 2 == 0 else ts + dur / 2


def _lane(ends: list, start: int, finish: int) -> int:
    """The first memory lane free at ``start`` (``ends[i]`` is where lane i's last slice ends)."""
    for i, end in enumerate(ends):
        if end <= start:
            ends[i] = finish
            return i
    ends.append(finish)
    return len(ends) - 1


def _union_length(intervals) -> int:
    total, end = 0, None
    for lo, hi in sorted(intervals):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total
