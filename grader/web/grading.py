"""Where the server sends an accepted submission: never graded in the request, always in the background.

- Embedded mode (no broker): a few grading threads in this process, each running
  ``Service.grade_embedded`` (the sandboxed compile, then the test points) over one shared process pool
  (``grader.pool.grading_pool``). At start, submissions left unfinished by a previous server process (it
  stopped or crashed while they were queued or running) are queued again, so none is lost.
- Broker mode: ``Service.enqueue`` sends the compile task to the Celery workers. If the broker cannot be
  reached the submission is still stored (the request succeeded); the failure is logged and
  ``kdt-grade admin sweep`` queues it later.
"""
from __future__ import annotations

import concurrent.futures
import logging
import threading
from datetime import timedelta

import db
from grader.pool import grading_pool
from grader.service import Service
from judger.tasks import POINTS_PER_TASK

log = logging.getLogger("kdt_grade.web.grading")


class Dispatcher:
    """Starts grading of committed submissions for one server process (see the module docstring)."""

    def __init__(self, service: Service):
        self.service = service
        self.embedded = service.settings.embedded
        self._threads: concurrent.futures.ThreadPoolExecutor | None = None
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Embedded mode: start the threads and the pool, and queue what a previous process left unfinished."""
        if not self.embedded:
            return
        self._threads = concurrent.futures.ThreadPoolExecutor(self.service.settings.workers,
                                                              thread_name_prefix="kdt-grade")
        self._pool = grading_pool(self.service.settings)
        with self.service.session() as session:
            left = sorted({p["submission_id"] for p in db.pending_points(session, timedelta(0), POINTS_PER_TASK)})
        if left:
            log.info("queueing %d unfinished submission(s) again: %s", len(left), left)
        for submission_id in left:
            self.dispatch(submission_id)

    def dispatch(self, submission_id: int) -> None:
        """Start grading submission ``submission_id`` (committed) and return at once."""
        if self.embedded:
            if self._threads is None:
                raise RuntimeError("the dispatcher is not started")
            self._threads.submit(self._grade, submission_id)
            return
        try:
            with self._lock:  # one Celery producer for all request threads
                self.service.enqueue(submission_id)
        except Exception as exc:  # the broker is down: the row is committed; the sweeper queues it later
            log.error("submission %s is stored but could not be queued (%s); `kdt-grade admin sweep` "
                      "queues it later", submission_id, exc.__class__.__name__)

    def _grade(self, submission_id: int) -> None:
        try:
            self.service.grade_embedded(submission_id, pool=self._shared_pool())
        except Exception:  # logged; the submission stays unfinished and is queued again at the next start
            log.exception("grading submission %s failed", submission_id)

    def _shared_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        """The shared pool, replaced if a dead process broke it (``grade_embedded`` retries such points)."""
        with self._lock:
            if self._pool is None or getattr(self._pool, "_broken", False):
                if self._pool is not None:
                    self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = grading_pool(self.service.settings)
            return self._pool

    def close(self) -> None:
        """Stop the threads and the pool; what was running stays unfinished and is queued again at the next start."""
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
