"""Heartbeats: while a worker owns test points, a thread writes their ``heartbeat_at`` every
``KDT_GRADE_HEARTBEAT_SECONDS``; the sweeper re-queues a point whose heartbeat stopped (its worker died).
A point is owned from its committed claim until its result is recorded (``Service.judge_point``), not
only while it is judged: a result that waits out a database outage (its write retried with backoff) keeps
beating as soon as the database answers again, so the sweeper does not take it for dead.
While a worker compiles submission N it holds and renews the lease ``compile N`` the same way
(``CompileLease``), so the sweeper leaves a compile under way alone.

A failed write (database away) is logged and tried again on the next beat: judging goes on, and the
sweeper does not count a heartbeat as stopped while it could not reach the database itself.
"""
from __future__ import annotations

import logging
import threading

from datetime import timedelta

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


class CompileLease:
    """``with CompileLease(service, submission_id, worker) as held:`` takes the lease ``compile N``
    (``held`` is False when another live process holds it) and renews it until the block ends."""

    def __init__(self, service, submission_id: int, worker: str):
        self.service, self.worker = service, worker
        self.name = f"compile {submission_id}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def _take(self) -> bool:
        ttl = timedelta(seconds=self.service.settings.heartbeat_stale_seconds)
        with self.service.session() as session:
            return db.acquire_lease(session, self.name, self.worker, ttl)

    def __enter__(self) -> bool:
        held = self.service.retry(self._take, f"taking the lease {self.name}")
        if held:
            self._thread.start()
        return held

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)
            try:
                with self.service.session() as session:
                    db.release_lease(session, self.name, self.worker)
            except Exception as error:  # the lease expires by itself
                log.warning("releasing %s failed: %s", self.name, error)

    def _run(self) -> None:
        while not self._stop.wait(self.service.settings.heartbeat_seconds):
            try:
                self._take()
            except Exception as exc:  # the database is away: the next beat tries again
                log.warning("renewing %s failed: %s", self.name, exc)
