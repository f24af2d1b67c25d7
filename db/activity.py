"""What the graders are doing, for the organisers' page: the points running now and the workers seen
recently, read from the result rows (each claim stores the worker's name and start time, each result
its finish time).

Public API: ``running_points(session) -> list[dict]``, ``recent_workers(session, since) -> list[dict]``.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from db.results import TestPointResult as R


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
