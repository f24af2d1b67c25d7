"""The question every entry point and the sweeper ask: where does a committed submission go to be graded?"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable

from judger.verdicts import PointResult

# What the contest server's log shows: its log configuration covers the ``kdt_grade`` loggers.
server_log = logging.getLogger("kdt_grade.web.grading")


class Scheduler(ABC):
    """Where grading runs for one process: here (embedded mode) or on the Celery workers, through the
    outbox (broker mode). ``grader.service.scheduling.scheduler_for`` picks the one of a process.

    Work is first recorded in the transaction that commits it (``reserve``: the outbox rows, or nothing
    when grading runs in this process), then started once that transaction is committed (``send`` for
    what ``reserve`` recorded, ``dispatch`` for a whole submission)."""

    #: True when grading runs in this process or this server (no broker).
    embedded = True

    def reserve(self, session, submission_id: int, points: Iterable[tuple[int, int]] | None = None) -> list[str]:
        """In the caller's transaction, record that submission ``submission_id`` must be compiled
        (``points`` None) or that ``points`` of it must be judged; returns what ``send`` takes after the
        commit (nothing when grading runs in this process)."""
        return []

    def send(self, keys: list[str]) -> None:
        """Start what ``reserve`` recorded, once its transaction is committed."""

    @abstractmethod
    def dispatch(self, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> bool:
        """Start grading submission ``submission_id`` (committed). Returns False when its work waits (the
        broker is down: the outbox keeps it), True otherwise. ``on_result`` sees each point's result when
        the grading runs in this thread."""

    def requeue(self, points: list[dict]) -> list[dict]:
        """Grade ``points`` again (the sweeper's finds: ``submission_id``, ``task``, ``point``, ``action``
        ``compile`` or ``judge``); returns them. By default their submissions are dispatched again: the
        grading of a submission takes every unfinished point of it."""
        for submission_id in by_submission(points):
            self.dispatch(submission_id)
        return points

    def in_flight(self) -> set[tuple]:
        """What is already on its way (``("compile", id, None, None)``, ``("judge", id, task, point)``), so
        the sweeper does not queue it twice."""
        return set()

    def flush(self, min_age: float = 0.0) -> int:
        """Send what waits to be sent (outbox rows at least ``min_age`` seconds old); returns how many."""
        return 0

    def start(self) -> None:
        """Start what this scheduler runs in the background (the server's grading threads)."""

    def close(self) -> None:
        """Stop it and release what it holds."""


def by_submission(points: list[dict]) -> dict[int, list[tuple[int, int]]]:
    """``{submission id: [(task, point), ...]}`` of the sweeper's points, in submission order."""
    grouped: dict[int, list[tuple[int, int]]] = {}
    for p in points:
        grouped.setdefault(p["submission_id"], []).append((p["task"], p["point"]))
    return dict(sorted(grouped.items()))
