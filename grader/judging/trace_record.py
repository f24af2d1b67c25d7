"""The stored trace of a graded test point: what the timeline picture and the Perfetto download need.

Written by the trusted judge step (``grader.judging.pipeline.judge_traced``) from the ``kdt.Profile`` of the
judge's own first trial (timing never depends on the data, so its cycles are the scored trial's), and
kept per graded point in the database (``db.traces``, read by ``grader.service.queries``), compressed.
Nothing here runs submission code.

A *trace record* is plain JSON-able data (version 1)::

    {"v": 1, "kernel": str, "kernel_cycles": int, "num_sms": int,
     "runs": [[sm, start, cycles], ...],          # job -> SM placement, index = job id (capped)
     "jobs": int,                                  # how many jobs the launch had
     "traces": {"0": [[op, issue, finish, unit, line, cause, wait, gate], ...], ...},  # jobs 0-3 (capped)
     "instructions": {"0": int, ...},              # each traced job's full instruction count
     "summary": Profile.summary() of the traced jobs (before any cap)}

Entries are ``kdt.TraceEntry.row()``, in program order: ``cause, wait, gate`` are the stall reason (spec
§4; ``wait`` in cycles, ``gate`` the index of the entry waited for, or null). A record stored before
reasons existed has 5-field entries; it loads as it is, with the reasons absent (``TraceEntry.cause``
None, no reasons in the Perfetto export).

Caps (so one point stays small whatever the kernel does): ``TRACED_JOBS`` jobs are traced, at most
``MAX_ENTRIES`` instructions per job and ``MAX_RUNS`` placement entries are kept, and the compressed
blob is at most ``MAX_BLOB_BYTES`` (jobs 3, 2, 1 are dropped first, then job 0 is cut in half until it
fits). Cycles are cycles of the simulated KDT-TPU; ``issue``/``finish`` are relative to the job's start.
"""
from __future__ import annotations

import json
import types
import zlib

import kdt
from kdt.simulator.explain import CAUSES

VERSION = 1
TRACED_JOBS = (0, 1, 2, 3)
MAX_ENTRIES = 20_000
MAX_RUNS = 4_096
MAX_BLOB_BYTES = 512 * 1024
MAX_RECORD_BYTES = 64 * 2**20  # decompressed: a blob that inflates beyond this is refused
UNITS = ("MEM", "VXM", "MXM", "FREE")


class TraceFormatError(ValueError):
    """A stored trace blob that is not a valid version-1 trace record."""


def profile_for_judging() -> kdt.Profile:
    """The ``kdt.Profile`` the judge passes to its first trial: traces of jobs ``TRACED_JOBS``."""
    return kdt.Profile(jobs=TRACED_JOBS)


def record_of(profile: kdt.Profile) -> dict | None:
    """The trace record (module docstring) of a profiled launch, or None if nothing was recorded
    (the launch failed before any job ran). Caps are applied here (``MAX_ENTRIES``, ``MAX_RUNS``)."""
    raw = profile.traces
    if not profile.runs and not raw:
        return None
    traces = {str(job): [e.row() for e in entries[:MAX_ENTRIES]]
              for job, entries in sorted(raw.items())}
    return {"v": VERSION, "kernel": profile.kernel_name, "kernel_cycles": profile.kernel_cycles,
            "num_sms": profile.num_sms, "jobs": len(profile.runs),
            "runs": [[r.sm, r.start, r.cycles] for r in profile.runs[:MAX_RUNS]],
            "traces": traces, "instructions": {str(job): len(entries) for job, entries in sorted(raw.items())},
            "summary": profile.summary()}


def encode(record: dict) -> bytes:
    """Compress a trace record to at most ``MAX_BLOB_BYTES`` (dropping jobs 3..1, then halving job 0)."""
    record = dict(record, traces=dict(record["traces"]))
    while True:
        blob = zlib.compress(json.dumps(record, separators=(",", ":")).encode(), 6)
        if len(blob) <= MAX_BLOB_BYTES:
            return blob
        traces = record["traces"]
        extra = [job for job in traces if job != "0"]
        if extra:
            del traces[max(extra, key=int)]
        elif traces.get("0"):
            traces["0"] = traces["0"][: len(traces["0"]) // 2]
        else:
            record["runs"] = record["runs"][: len(record["runs"]) // 2]


def decode(blob: bytes) -> dict:
    """The trace record of a stored blob; ``TraceFormatError`` if it is not one."""
    try:
        inflater = zlib.decompressobj()
        data = inflater.decompress(blob, MAX_RECORD_BYTES)
        if inflater.unconsumed_tail:
            raise TraceFormatError(f"the trace inflates beyond {MAX_RECORD_BYTES} bytes")
        record = json.loads(data)
    except (zlib.error, ValueError) as exc:
        if isinstance(exc, TraceFormatError):
            raise
        raise TraceFormatError(f"not a compressed trace record: {exc}") from None
    _check(record)
    return record


def traced_jobs(record: dict) -> list[int]:
    """The job ids whose instructions the record holds, ascending."""
    return sorted(int(job) for job in record["traces"])


def job_trace(record: dict, job: int) -> list[list]:
    """``[[op, issue, finish, unit, line], ...]`` of one traced job, without the stall reasons
    (``KeyError`` if not traced)."""
    return [e[:5] for e in record["traces"][str(job)]]


def to_profile(record: dict) -> kdt.Profile:
    """A ``kdt.Profile`` holding the record's launch (through the Profile's own recording interface),
    so ``to_perfetto()`` and ``summary()`` give what they gave in the judge's run (up to the caps)."""
    profile = kdt.Profile()
    profile.start()
    for job, entries in sorted(record["traces"].items(), key=lambda kv: int(kv[0])):
        profile.trace_for(int(job)).extend(tuple(e) for e in entries)
    runs = record["runs"]
    profile.finish(types.SimpleNamespace(name=record["kernel"]), types.SimpleNamespace(num_sms=record["num_sms"]),
                   [c for _, _, c in runs], [(sm, start) for sm, start, _ in runs], record["kernel_cycles"])
    return profile


def perfetto_json(record: dict) -> str:
    """The Perfetto / Chrome trace JSON text of the record (``kdt.Profile.to_perfetto``)."""
    return json.dumps(to_profile(record).to_perfetto(), separators=(",", ":"))


def _check(record) -> None:
    """Shape check of a decoded record (written by trusted code; checked so a bad row is an error)."""
    def need(cond, what):
        if not cond:
            raise TraceFormatError(f"malformed trace record: {what}")

    need(isinstance(record, dict) and record.get("v") == VERSION, "not a version-1 record")
    need(isinstance(record.get("kernel"), str), "kernel name")
    for key in ("kernel_cycles", "num_sms", "jobs"):
        need(type(record.get(key)) is int and record[key] >= 0, key)
    runs = record.get("runs")
    need(isinstance(runs, list) and all(isinstance(r, list) and len(r) == 3 and all(type(v) is int for v in r)
                                        for r in runs), "runs")
    traces = record.get("traces")
    need(isinstance(traces, dict), "traces")
    for job, entries in traces.items():
        need(job.isdigit() and isinstance(entries, list), f"trace of job {job!r}")
        for i, e in enumerate(entries):
            need(isinstance(e, list) and len(e) in (5, 8) and isinstance(e[0], str) and type(e[1]) is int
                 and type(e[2]) is int and e[3] in UNITS and type(e[4]) is int and
                 (len(e) == 5 or e[5] in CAUSES and type(e[6]) is int and e[6] >= 0
                  and (e[7] is None or type(e[7]) is int and 0 <= e[7] < i)), f"an entry of job {job}")
    need(isinstance(record.get("summary"), dict), "summary")

