"""Per-instruction traces, the job -> SM placement, a Perfetto export and a utilisation summary.

Pass a ``Profile`` to ``kdt.launch_kernel(..., profile=p)``; without one nothing is recorded.
"""
import json
from dataclasses import dataclass

@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One executed instruction of a job: DSL op name, issue and finish cycle (relative to the job's
    start), the unit (``MEM``, ``VXM``, ``MXM`` or ``FREE``) and the source line."""

    op: str
    issue: int
    finish: int
    unit: str
    line: int


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
        """job id -> list of ``TraceEntry`` in program order."""
        return {job: [TraceEntry(*r) for r in raw] for job, raw in self._raw.items()}

    def trace(self, job: int) -> list:
        """``[[op, issue, finish], ...]`` of one job, the conformance format; ``KeyError`` for a job
        that was not traced (not selected, or not in the launch)."""
        if job not in self._raw:
            raise KeyError(f"job {job} was not traced (traced: {sorted(self._raw)})")
        return [[r[0], r[1], r[2]] for r in self._raw[job]]

    def summary(self) -> dict:
        """Per-unit busy cycles and utilisation of the traced jobs, and the bottleneck unit.

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
            for op, issue, finish, unit, _ in raw:
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
                "bottleneck": max(("MXM", "VXM", "ISU"), key=lambda u: util[u]) if busy["ISU"] else None}

    def to_perfetto(self) -> dict:
        """Chrome trace / Perfetto JSON: one process per SM, one thread per unit and a job track; loads
        and stores overlap (memory is not a unit), so they are spread over as many ``MEM`` lanes as
        needed for the slices of each thread to stay disjoint. One cycle is shown as one microsecond."""
        events, lanes = [], {}
        for run in self.runs:
            events.append({"ph": "X", "name": f"job {run.job}", "pid": run.sm, "tid": 0, "ts": run.start,
                           "dur": run.cycles, "args": {"job": run.job}})
            for op, issue, finish, unit, line in self._raw.get(run.job, []):
                ts, tid = run.start + issue, _THREADS[unit]
                if unit == "MEM":
                    tid = _MEM_TID + _lane(lanes.setdefault(run.sm, []), ts, run.start + finish)
                events.append({"ph": "X", "name": op, "pid": run.sm, "tid": tid, "ts": ts, "dur": finish - issue,
                               "args": {"job": run.job, "line": line, "issue": issue, "finish": finish}})
        meta = []
        for sm in range(self.num_sms):
            meta.append({"ph": "M", "name": "process_name", "pid": sm, "args": {"name": f"SM {sm}"}})
            names = {0: "jobs", **{tid: unit for unit, tid in _THREADS.items() if unit != "MEM"}}
            names.update({_MEM_TID + i: f"MEM {i}" for i in range(max(len(lanes.get(sm, [])), 1))})
            for tid, name in sorted(names.items()):
                meta.append({"ph": "M", "name": "thread_name", "pid": sm, "tid": tid, "args": {"name": name}})
        return {"traceEvents": meta + events, "displayTimeUnit": "ns",
                "otherData": {"kernel": self.kernel_name, "kernel_cycles": self.kernel_cycles}}

    def write_perfetto(self, path) -> None:
        """Write ``to_perfetto()`` as JSON to ``path`` (open it in ui.perfetto.dev or chrome://tracing)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_perfetto(), f)


_THREADS = {"VXM": 1, "MXM": 2, "FREE": 3, "MEM": 4}
_MEM_TID = 4


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
