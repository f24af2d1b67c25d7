"""Broker mode: the work goes to the Celery workers, first as outbox rows (``grader.runtime.outbox``).

Every message is a row written in the transaction it follows from (``reserve``), sent after the commit;
while the broker is down the rows wait and the background loop of any worker or server sends them.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

import db
from grader.runtime.broker import Broker
from grader.runtime.outbox import Outbox
from judger.verdicts import PointResult

from .base import Scheduler, server_log

log = logging.getLogger(__name__)


class OutboxScheduler(Scheduler):
    """Sends work to the workers through the outbox. ``quiet`` (the contest server): a failure to send
    after the commit is logged, not raised (the request succeeded, the row is stored and is sent later)."""

    embedded = False

    def __init__(self, service, quiet: bool = False):
        self.service, self.quiet = service, quiet
        self.broker = Broker(service.settings)
        self.outbox = Outbox(service, self.broker)
        self._lock = threading.Lock()  # one Celery producer for all the threads of a server

    def reserve(self, session, submission_id: int, points: Iterable[tuple[int, int]] | None = None) -> list[str]:
        """The outbox rows ``compile N`` (``points`` None) or ``judge N t.p``, in the caller's transaction."""
        if points is None:
            return [db.add_outbox(session, "compile", submission_id)]
        return [db.add_outbox(session, "judge", submission_id, task, point) for task, point in points]

    def send(self, keys: list[str]) -> None:
        """Send the rows ``keys`` now (those the broker does not take wait for the next flush)."""
        if keys:
            with self._lock:
                self.outbox.send(keys)

    def dispatch(self, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> bool:
        """Send the submission's ``compile`` row (written now if missing). False when it could not be sent:
        the row stays and the background loop of any worker or server sends it once the broker is back."""
        try:
            with self._lock:
                return self._enqueue(submission_id)
        except Exception as exc:
            if not self.quiet:
                raise
            server_log.error("submission %s is stored but could not be queued (%s); the outbox dispatcher "
                             "sends it when the broker is back", submission_id, exc.__class__.__name__)
            return False

    def _enqueue(self, submission_id: int) -> bool:
        with self.service.session() as session:
            key = db.add_outbox(session, "compile", submission_id)
        self.outbox.send([key])
        return not self.outbox.pending([key])  # gone: sent, here or by another process's flush

    def requeue(self, points: list[dict]) -> list[dict]:
        """One outbox row per point (``compile N`` for a submission without compiled points), then sent."""
        with self.service.session() as session:
            keys = sorted({key for p in points
                           for key in self.reserve(session, p["submission_id"],
                                                   None if p["action"] == "compile" else [(p["task"], p["point"])])})
        self.send(keys)
        log.info("sweeper: re-queued %d test point(s)", len(points))
        return points

    def in_flight(self) -> set[tuple]:
        """Every outbox row and every message waiting in the broker's queue (``BrokerUnavailable`` when the
        broker cannot be read)."""
        return self.outbox.in_flight()

    def flush(self, min_age: float = 0.0) -> int:
        """Send the rows at least ``min_age`` seconds old; returns how many were sent."""
        with self._lock:
            return self.outbox.send(min_age=min_age)

    def close(self) -> None:
        """Release the broker connection."""
        self.broker.close()
