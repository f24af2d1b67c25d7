"""Which test point a free worker judges next: not the one its message named, the
fairest one it can claim.

``judge_next`` is what a free worker does (a Celery judge message, a slot of the embedded server): claim
the fairest ready point of any submission (``fair_points``: ``grader.runtime.fair``, round
robin across users), else the point the message named, and judge it with ``steps.judge_point``. A point
whose submission spent its simulation budget is ``TLE`` at its claim (``steps.claim_point``).
"""
from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import TYPE_CHECKING

import db
from grader.runtime.fair import fair_order
from grader.runtime.processes import worker_gone

if TYPE_CHECKING:
    from .facade import Service


class PointAbandoned(Exception):
    """The process judging a point died (``judge_next``); the point is still claimed by this worker."""

    def __init__(self, submission_id: int, task: int, point: int):
        super().__init__(f"the grading process died on test point {task}.{point} of submission {submission_id}")
        self.submission_id, self.task, self.point = submission_id, task, point


def fair_points(service: Service) -> list[tuple[int, int, int]]:
    """The points a free worker may judge now, the fairest first (``fair_order``)."""
    with service.read_session() as session:
        ready = db.ready_points(session)
        running = db.running_rows(session)
        served = db.user_activity(session, {r["user_id"] for r in ready + running})
    return fair_order(ready, running, served, worker_gone)


def judge_next(service: Service, worker: str | None = None, fallback: tuple[int, int, int] | None = None,
               run: Callable | None = None):
    """Judge the fairest point this worker can claim (``fair_points``), else ``fallback`` (the point a
    judge message named: its own claim rules, e.g. a stuck point the sweeper re-queued). Returns
    ``(submission_id, PointResult)``, or None when there was nothing to do. Raises ``PointAbandoned``
    when ``run``'s executor broke (its process died) under the point, which stays claimed."""
    candidates = service.retry(service.fair_points, "choosing the next test point")
    if fallback is not None and tuple(fallback) not in candidates:
        candidates.append(tuple(fallback))
    for submission_id, task, point in candidates:
        try:
            result = service.judge_point(submission_id, task, point, worker, run=run)
        except LookupError:  # the submission was deleted meanwhile
            continue
        except concurrent.futures.BrokenExecutor as exc:
            raise PointAbandoned(submission_id, task, point) from exc
        if result is not None:
            return submission_id, result
    return None
