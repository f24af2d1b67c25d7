"""Test points a sweeper should enqueue again: missing, or stuck in the running state.

- `missing`: an unscored submission (`total` NULL) created more than `older_than` ago has no result
  row for an expected point: its task was lost before any worker claimed it.
- `stuck`: an unfinished result row whose last sign of life (heartbeat, else its start) is older than
  `older_than`: its worker died, or the broker lost the task after the claim.

Only a submission's current generation counts (`db.rejudge`): a point whose only row is stale is
missing, and a submission counts as unscored until its current generation's totals are stored.

Re-enqueueing is safe because results are written idempotently. Each new claim counts as an attempt,
so a point that keeps failing ends as `IE` under the worker's attempt limit instead of looping forever.

Public API: `pending_points(session, older_than, points_per_task, now=None) -> list[dict]`,
`unscored_complete(session, points_per_task) -> list[int]`, `running_points(session) -> list[dict]`.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from db.base import utcnow
from db.results import TestPointResult
from db.status import scores_current
from db.submissions import Submission


def _stuck_points(session: Session, cutoff: datetime) -> list[dict[str, Any]]:
    started = func.coalesce(TestPointResult.heartbeat_at, TestPointResult.started_at, TestPointResult.queued_at,
                            Submission.created)
    rows = session.execute(
        select(
            TestPointResult.submission_id,
            TestPointResult.task,
            TestPointResult.point,
            TestPointResult.attempts,
            TestPointResult.started_at,
        )
        .join(Submission, Submission.id == TestPointResult.submission_id)
        .where(TestPointResult.finished_at.is_(None), started < cutoff,
               TestPointResult.generation == Submission.generation)
    ).mappings()
    return [{**row, "reason": "stuck"} for row in rows]


def _missing_points(
    session: Session, cutoff: datetime, points_per_task: Mapping[int, int]
) -> list[dict[str, Any]]:
    unscored = select(Submission.id).where(~scores_current(), Submission.created < cutoff)
    submission_ids = list(session.scalars(unscored))
    if not submission_ids:
        return []
    rows = session.execute(
        select(TestPointResult.submission_id, TestPointResult.task, TestPointResult.point)
        .join(Submission, Submission.id == TestPointResult.submission_id)
        .where(TestPointResult.submission_id.in_(submission_ids),
               TestPointResult.generation == Submission.generation)
    )
    present = {(sid, task, point) for sid, task, point in rows}
    return [
        {"submission_id": sid, "task": task, "point": point, "attempts": 0, "started_at": None, "reason": "missing"}
        for sid in submission_ids
        for task in sorted(points_per_task)
        for point in range(points_per_task[task])
        if (sid, task, point) not in present
    ]


def pending_points(
    session: Session,
    older_than: timedelta,
    points_per_task: Mapping[int, int],
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """Return the missing and stuck test points, oldest submission first.

    Inputs: an open session; how long a point may stay unclaimed or running before it counts;
    the contest's `{task: number of points}`; the current aware UTC time (default: now).
    Output: dicts `{"submission_id", "task", "point", "reason": "missing" | "stuck", "attempts",
    "started_at"}`, ordered by submission id, task and point.
    Raises `ValueError` for a negative `older_than`.
    """
    if older_than < timedelta(0):
        raise ValueError(f"older_than must not be negative, got {older_than}")
    cutoff = (now or utcnow()) - older_than
    points = _stuck_points(session, cutoff) + _missing_points(session, cutoff, points_per_task)
    return sorted(points, key=lambda p: (p["submission_id"], p["task"], p["point"]))


def unscored_complete(session: Session, points_per_task: Mapping[int, int]) -> list[int]:
    """Submissions whose every point of the current generation is final but whose totals are missing
    (the connection dropped between the last point and the totals): ids, oldest first."""
    expected = sum(points_per_task.values())
    finished = (
        select(TestPointResult.submission_id)
        .join(Submission, Submission.id == TestPointResult.submission_id)
        .where(~scores_current(), TestPointResult.finished_at.is_not(None),
               TestPointResult.generation == Submission.generation)
        .group_by(TestPointResult.submission_id)
        .having(func.count() >= expected)
        .order_by(TestPointResult.submission_id)
    )
    return list(session.scalars(finished))


def running_points(session: Session) -> list[dict[str, Any]]:
    """Every unfinished result row of a current generation: dicts `{"submission_id", "task", "point",
    "attempts", "started_at", "worker"}` (the sweeper checks whether their workers still exist)."""
    rows = session.execute(
        select(TestPointResult.submission_id, TestPointResult.task, TestPointResult.point,
               TestPointResult.attempts, TestPointResult.started_at, TestPointResult.worker)
        .join(Submission, Submission.id == TestPointResult.submission_id)
        .where(TestPointResult.finished_at.is_(None), TestPointResult.generation == Submission.generation)
    ).mappings()
    return [dict(row) for row in rows]
