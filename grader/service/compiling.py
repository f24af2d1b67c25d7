"""The compile step: a submission's source, audited and compiled once, stored as *compiled points*.

``compile_points`` (``Service.compile``) loads the source from the database (verified against its sha256), runs
``grader.judging.pipeline.prepare`` (static audit, one sandboxed child for every requested test point)
and stores the compiled points (plain JSON, ``db.compiled``); a point with nothing to simulate (CE, SV,
or a result stored for its kernel, ``reuse``) gets its result in the same transaction
(``results.record_at_compile``) and never waits for a worker. A file identical to one this judge version
compiled already is not compiled again: its compiled points are copied (not for a ``--fresh`` rejudge). A
compile that failed because of the judge itself (the sandboxed child died loading our own code) is tried again, then ``IE``. While it compiles it
holds the lease ``compile N`` (``grader.runtime.heartbeat.CompileLease``), so the sweeper leaves it alone.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

import db
from db.base import utcnow
from grader.judging import pipeline
from grader.judging.pipeline import ALL_POINTS
from grader.judging.reuse import compile_version
from grader.runtime import storage
from grader.runtime.heartbeat import CompileLease
from grader.runtime.processes import worker_name

from . import reuse
from .results import record_at_compile

if TYPE_CHECKING:
    from .facade import Service

log = logging.getLogger(__name__)
JUDGE_FAULT_RETRIES = 2   # a compile that failed because of the judge is tried this many more times


def source(service: Service, submission_id: int) -> bytes:
    """The submission's bytes from the database, checked against its sha256 (``LookupError`` if it does
    not exist, ``storage.CorruptFile`` if the text does not match the hash)."""
    with service.session() as session:
        row = db.get_submission(session, submission_id, include_source=True)
    if row is None:
        raise LookupError(f"no submission with id {submission_id}")
    data = row["source"].encode("utf-8")
    if storage.sha256_of(data) != row["sha256"]:
        raise storage.CorruptFile(f"submission {submission_id}: the stored source does not match its sha256")
    return data


def compile_points(service: Service, submission_id: int, points: Iterable[tuple[int, int]] = ALL_POINTS,
                   queue: bool = False) -> list:
    """Audit and compile ``points`` of a submission once and store the compiled points. A point that
    needs no simulation (``CE``, ``SV``, ``IE``) gets its result in the same transaction and never waits
    for a worker; returns the ``PointResult``s so recorded. With ``queue`` (the workers' compile task) the
    judging of the other points is reserved in the same transaction (``Service.scheduler``: the outbox
    rows "judge N t.p") and sent. A source that fails its hash check
    compiles to ``IE`` on every point (``LookupError`` for a submission that does not exist). A compile
    that failed because of the judge (``pipeline.judge_fault``) is tried again ``JUDGE_FAULT_RETRIES``
    times before its ``IE`` is stored. Database errors are retried. With ``queue``, a duplicate compile
    task (the lease is held elsewhere, or every point is compiled already) does nothing and returns []."""
    points = list(points)
    with CompileLease(service, submission_id, worker_name()) as held:
        if queue and (not held or _all_compiled(service, submission_id, points)):
            log.info("submission %s is compiled or being compiled elsewhere: nothing to do", submission_id)
            return []
        with service.session() as session:  # the generation this compile is for (a rejudge may start meanwhile)
            row = db.get_submission(session, submission_id)
        if row is None:
            raise LookupError(f"no submission with id {submission_id}")
        generation = row["generation"]
        with service.session() as session:
            fresh = db.is_fresh(session, submission_id) or not service.settings.reuse_results
        compiled = _compiled(service, submission_id, points, None if fresh else row["sha256"])
        if fresh:
            for point in compiled.values():
                point["fresh"] = True
        reused = service.retry(lambda: reuse.hits(service, compiled), f"looking up results of submission {submission_id}")
        direct = [r for p in points if (r := reused.get(p) or pipeline.unsimulated(*p, compiled[p])) is not None]
        worker = worker_name()

        def store():
            with service.session() as session:
                db.store_compiled(session, submission_id, compiled)
                now = utcnow()  # nothing to simulate: recorded now, never queued for a worker
                recorded = [r for r in direct if record_at_compile(session, submission_id, r, worker, generation, now)]
                simulated = [p for p in points if "ir" in compiled[p] and p not in reused]
                keys = service.scheduler.reserve(session, submission_id, simulated) if queue and simulated else []
                return keys, recorded

        keys, recorded = service.retry(store, f"storing the compiled points of submission {submission_id}")
        service.scheduler.send(keys)
        if recorded:
            service.retry(lambda: service.finalize(submission_id), f"storing the totals of submission {submission_id}")
        return recorded


def _all_compiled(service: Service, submission_id: int, points: list) -> bool:
    with service.session() as session:
        return set(points) <= db.compiled_points(session, submission_id)


def _compiled(service: Service, submission_id: int, points: list, sha256: str | None) -> dict:
    """The compiled points: an identical file's (same ``sha256``, compiled under this compile version,
    ``grader.judging.reuse.compile_version``: the compile is a function of the file and the point,
    judging.md "One test point"; None: do not reuse),
    else ``pipeline.prepare`` of the stored source, tried again after a fault of the judge; ``IE`` on every
    point for a source that fails its hash check. Each is tagged with the compile version that made it."""
    version = compile_version(service.settings)
    if sha256 is not None:
        with service.session() as session:
            same = db.compiled_of_source(session, sha256, points, version, submission_id)
        if same is not None:
            log.info("submission %s: the compile of an identical file is reused", submission_id)
            return same
    try:
        data = service.retry(lambda: service.source(submission_id), f"loading submission {submission_id}")
    except storage.CorruptFile as exc:
        return {p: _ie(str(exc)) for p in points}
    for attempt in range(JUDGE_FAULT_RETRIES + 1):
        compiled = pipeline.prepare(data, points, service.settings)
        if not pipeline.judge_fault(compiled) or attempt == JUDGE_FAULT_RETRIES:
            break
        log.warning("submission %s: the compile failed because of the judge; trying again", submission_id)
        time.sleep(1.0 + attempt)
    return {p: {**c, "judge": version} for p, c in compiled.items()}


def compiled_point(service: Service, submission_id: int, task: int, point: int) -> dict:
    """The stored compiled point; compiles this one point first if it is missing."""
    with service.session() as session:
        found = db.get_compiled(session, submission_id, task, point)
    if found is None:
        service.compile(submission_id, [(task, point)])
        with service.session() as session:
            found = db.get_compiled(session, submission_id, task, point)
    return found


def _ie(reason: str) -> dict:
    return {"verdict": "IE", "message": f"internal error of the judge: {reason}", "compile_s": 0.0}
