"""What the fair scheduler chooses from: the test points ready to judge, and each user's share right now.

A point is *ready* when its submission's current generation has a compiled point for it and no result row
of that generation (nobody claimed it; a point that needs no simulation, CE or SV, got its result at
compile time and never is ready). A claimed but unfinished row is *running*; the scheduler in
``grader.runtime.fair`` decides from its heartbeat and worker whether it is abandoned.

Public API: `ready_points(session, per_user)`, `running_rows(session)`, `user_activity(session, user_ids)`,
`spent_seconds(session, submission_id, generation)`.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import and_, case, exists, func, select
from sqlalchemy.orm import Session

from db.compiled import CompiledPoint
from db.results import TestPointResult
from db.submissions import Submission


def ready_points(session: Session, per_user: int = 4) -> list[dict[str, Any]]:
    """The first ``per_user`` ready points of every user (oldest submission, then task and point first):
    ``{"submission_id", "task", "point", "user_id"}``. Per user, so that one user's backlog, however
    long, never hides another user's points from the scheduler."""
    claimed = exists().where(and_(TestPointResult.submission_id == CompiledPoint.submission_id,
                                  TestPointResult.task == CompiledPoint.task,
                                  TestPointResult.point == CompiledPoint.point,
                                  TestPointResult.generation == Submission.generation))
    rank = func.row_number().over(partition_by=Submission.user_id,
                                  order_by=(CompiledPoint.submission_id, CompiledPoint.task, CompiledPoint.point))
    ranked = (
        select(CompiledPoint.submission_id, CompiledPoint.task, CompiledPoint.point, Submission.user_id,
               rank.label("rank"))
        .join(Submission, Submission.id == CompiledPoint.submission_id)
        .where(~claimed)
        .subquery()
    )
    rows = session.execute(
        select(ranked.c.submission_id, ranked.c.task, ranked.c.point, ranked.c.user_id)
        .where(ranked.c.rank <= per_user)
        .order_by(ranked.c.submission_id, ranked.c.task, ranked.c.point)
    ).mappings()
    return [dict(row) for row in rows]


def running_rows(session: Session) -> list[dict[str, Any]]:
    """Every claimed, unfinished row of a current generation, with its submission's user:
    ``{"submission_id", "task", "point", "user_id", "worker", "started_at", "heartbeat_at"}``."""
    rows = session.execute(
        select(TestPointResult.submission_id, TestPointResult.task, TestPointResult.point, Submission.user_id,
               TestPointResult.worker, TestPointResult.started_at, TestPointResult.heartbeat_at)
        .join(Submission, Submission.id == TestPointResult.submission_id)
        .where(TestPointResult.finished_at.is_(None), TestPointResult.generation == Submission.generation)
    ).mappings()
    return [dict(row) for row in rows]


def user_activity(session: Session, user_ids: Iterable[int]) -> dict[int, Any]:
    """``{user_id: the latest claim time of any of the user's points}`` (users never served are absent):
    "least recently served" in the scheduler's order."""
    ids = sorted(set(user_ids))
    if not ids:
        return {}
    rows = session.execute(
        select(Submission.user_id, func.max(TestPointResult.started_at))
        .join(Submission, Submission.id == TestPointResult.submission_id)
        .where(Submission.user_id.in_(ids))
        .group_by(Submission.user_id)
    )
    return {user_id: last for user_id, last in rows if last is not None}


def spent_seconds(session: Session, submission_id: int, generation: int) -> float:
    """The grading seconds (``wall_seconds``: simulation and comparison) the submission's finished points
    of ``generation`` took: what its simulation budget has spent."""
    total = session.scalar(
        select(func.coalesce(func.sum(case((TestPointResult.finished_at.is_not(None),
                                            TestPointResult.wall_seconds), else_=0.0)), 0.0))
        .where(TestPointResult.submission_id == submission_id, TestPointResult.generation == generation)
    )
    return float(total or 0.0)
