"""Heartbeats: while a worker judges test points, a thread writes their ``heartbeat_at`` every
``KDT_GRADE_HEARTBEAT_SECONDS``; the sweeper re-queues a point whose heartbeat stopped (its worker died).

A failed write (database away) is logged and tried again on the next beat: judging goes on, and the
sweeper does not count a heartbeat as stopped while it could not reach the database itself.
"""
from __future__ import annotations

import logging
import threading

import db

log = logging.getLogger(__name__)


class Heartbeat:
    """``with Heartbeat(service, submission_id, points, worker): ...`` beats ``points`` (a list of
    ``(task, point)``, which may shrink while it runs) until the block ends."""

    def __init__(self, service, submission_id: int, points: list, worker: str):
        self.service, self.submission_id, self.points, self.worker = service, submission_id, points, worker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{submission_id}", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        interval = self.service.settings.heartbeat_seconds
        while not self._stop.wait(interval):
            try:
                with self.service.session() as session:
                    db.beat(session, self.submission_id, list(self.points), self.worker)
            except Exception as exc:  # the database is away: judging goes on, the next beat tries again
                log.warning("heartbeat of submission %s failed: %s", self.submission_id, exc)
