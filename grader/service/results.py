"""Writing a test point's result: ``record`` (a worker's result, in ``finish_point``'s transaction, kept
for reuse) and ``record_at_compile`` (a point with nothing to simulate: CE, SV or a reused result,
claimed and recorded in the compile's own transaction: it never waits for a worker)."""
from __future__ import annotations

from datetime import datetime

import db
from judger.verdicts import PointResult

from . import reuse
from .reuse import ReusedResult


def record(session, submission_id: int, result: PointResult, worker: str, generation: int,
           trace: bytes | None, finished_at: datetime | None = None, key: str | None = None) -> None:
    """Write a test point's result and its trace (None deletes an old one) in ``session``; a fresh
    simulation's result is also kept for reuse under its compiled point's ``key`` (``reuse.keep``), in the
    same transaction. A ``ReusedResult`` brings its own trace."""
    if isinstance(result, ReusedResult):
        trace = result.trace
    timings = result.timings or {}
    db.record_result(session, submission_id, result.task, result.point, result.verdict.value, result.cycles,
                     result.score, result.message, worker,
                     wall_seconds=max(0.0, timings.get("total_s", 0.0) - timings.get("compile_s", 0.0)),
                     generation=generation, finished_at=finished_at, reused=result.reused)
    db.store_trace(session, submission_id, result.task, result.point, trace)
    reuse.keep(session, key, result, trace)


def record_at_compile(session, submission_id: int, result: PointResult, worker: str, generation: int,
                      now: datetime) -> bool:
    """Claim and record, in the compile's transaction, a point that needs no simulation (``CE``, ``SV``,
    or a result reused from an identical kernel): one attempt, started and finished at ``now`` (never seen
    running). Skipped (False) when the point already has a row of ``generation``: a worker claimed it and
    compiles it on demand (``compiled_point``), and records it."""
    row = db.get_result(session, submission_id, result.task, result.point)
    if row is not None and row["generation"] >= generation:
        return False
    if db.claim_attempt(session, submission_id, result.task, result.point, worker, now=now,
                        generation=generation, seen=row) is None:
        return False
    record(session, submission_id, result, worker, generation, None, finished_at=now)
    return True
