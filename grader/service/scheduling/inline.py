"""Embedded mode in a command (``kdt-grade submit``, ``admin rejudge``, ``admin sweep``): grading runs
in the calling thread, over the service's own process pool, and returns when it is done."""
from __future__ import annotations

from collections.abc import Callable

from judger.verdicts import PointResult

from .base import Scheduler, by_submission


class InlineScheduler(Scheduler):
    """Grades in the caller's thread (``Service.grade_embedded``)."""

    def __init__(self, service):
        self.service = service

    def dispatch(self, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> bool:
        """Grade the submission now (compile once, then its points over the pool)."""
        self.service.grade_embedded(submission_id, on_result=on_result)
        return True

    def requeue(self, points: list[dict]) -> list[dict]:
        """Grade the points here, taking them over even while a heartbeat looks fresh (the sweeper decided
        they are stuck)."""
        for submission_id, keys in by_submission(points).items():
            self.service.grade_embedded(submission_id, keys, take_over=True)
        return points
