"""What the graders are doing, for the organisers' page: the points running now and the workers seen
recently, read from the result rows (each claim stores the worker's name and start time, each result
its finish time).

Public API: ``running_points(session) -> list[dict]``, ``recent_workers(session, since) -> list[dict]``,
``finished_since(session, since) -> list[dict]`` and ``queue_history(session, since) -> list[dict]`` (the
admin page's graphs of the last hour).
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, exists, func, or_, select
from sqlalchemy.orm import Session

from db.results import TestPointResult as R
from db.status import scores_current
from db.submissions import Submission


def running_points(session: Session) -> list[dict[str, Any]]:
    """Every claimed, unfinished test point, oldest start first: ``{"submission_id", "task", "point",
    "worker", "started_at", "attempts"}`` (times aware UTC)."""
    rows = session.execute(
        select(R.submission_id, R.task, R.point, R.worker, R.started_at, R.attempts)
        .where(R.finished_at.is_(None))
        .order_by(R.started_at.asc(), R.submission_id, R.task, R.point)
    ).mappings()
    return [dict(row) for row in rows]


def recent_workers(session: Session, since: datetime) -> list[dict[str, Any]]:
    """Workers that claimed or finished a point at or after ``since``, most recently seen first:
    ``{"worker", "last_seen", "graded" (points finished since then), "running" (unfinished claims)}``."""
    rows = session.execute(
        select(R.worker, R.started_at, R.finished_at)
        .where(R.worker.is_not(None), func.coalesce(R.finished_at, R.started_at) >= since)
    ).all()
    workers: dict[str, dict[str, Any]] = {}
    for worker, started, finished in rows:
        entry = workers.setdefault(worker, {"worker": worker, "last_seen": None, "graded": 0, "running": 0})
        when = finished or started
        if entry["last_seen"] is None or when > entry["last_seen"]:
            entry["last_seen"] = when
        entry["graded" if finished is not None else "running"] += 1
    return sorted(workers.values(), key=lambda w: w["last_seen"], reverse=True)


def finished_since(session: Session, since: datetime) -> list[dict[str, Any]]:
    """Every test point result finished at or after ``since``, oldest first: ``{"finished_at", "verdict"}``
    (a rejudged point's earlier result is overwritten, so only its latest finish is there)."""
    rows = session.execute(
        select(R.finished_at, R.verdict).where(R.finished_at >= since).order_by(R.finished_at.asc())
    ).mappings()
    return [dict(row) for row in rows]


def queue_history(session: Session, since: datetime) -> list[dict[str, Any]]:
    """The submissions that may have had test points to grade at or after ``since``: created since then,
    not scored (for their current generation), or with a current point unfinished or finished since then.
    Each ``{"submission_id", "created", "generation", "scored" (its scores are its current generation's),
    "rows": [{"started_at", "finished_at"}]}`` with the rows of its current generation (times aware UTC), by id."""
    current = and_(R.submission_id == Submission.id, R.generation == Submission.generation)
    busy = exists().where(current, or_(R.finished_at.is_(None), R.finished_at >= since))
    submissions = session.execute(
        select(Submission.id, Submission.created, Submission.generation, scores_current())
        .where(or_(Submission.created >= since, ~scores_current(), busy))
        .order_by(Submission.id)
    ).all()
    found = {sid: {"submission_id": sid, "created": created, "generation": generation, "scored": bool(scored),
                   "rows": []}
             for sid, created, generation, scored in submissions}
    if found:
        rows = session.execute(
            select(R.submission_id, R.started_at, R.finished_at)
            .join(Submission, current)
            .where(R.submission_id.in_(sorted(found)))
        ).all()
        for sid, started, finished in rows:
            found[sid]["rows"].append({"started_at": started, "finished_at": finished})
    return list(found.values())
