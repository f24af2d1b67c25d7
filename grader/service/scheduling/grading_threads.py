"""Embedded mode in ``kdt-grade serve``'s grading process: the submissions accepted by the HTTP processes
are graded here, in the background, never in a request.

``Dispatcher`` compiles with a few threads, each running ``Service.grade_embedded(..., judge=False)`` (the
sandboxed compile; CE and SV points are recorded there and never wait) on the submission its fair queue
hands out (``grader.runtime.fair.FairQueue``: the user with the fewest compiles running, then
the one served least recently; not arrival order, so one user's many or slow compiles never hold
another's for longer than the compiles running), and judges with one *slot* thread per process of one
shared pool (``grader.runtime.pool.grading_pool``): a free slot takes the fairest ready point of any
submission (``Service.judge_next``, round robin across users), so one contestant's slow points never hold
another's for longer than one point. A point whose pool process died is judged again, alone, in a fresh
process, until ``max_attempts``. At start, submissions left unfinished by a previous server process (it
stopped or crashed while they were queued or running) are queued again, so none is lost; a grading that
fails (the database went away) is tried again after a pause (``RETRY_SECONDS``), with no admin action.
"""
from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from datetime import timedelta

import db
from grader.judging import pipeline
from grader.runtime.fair import FairQueue
from grader.runtime.pool import grading_pool, open_pool, renewed, stop_pool
from grader.runtime.processes import worker_name
from judger.tasks import POINTS_PER_TASK
from judger.verdicts import PointResult

from ..next_point import PointAbandoned
from .base import Scheduler, server_log as log

RETRY_SECONDS = (5.0, 10.0, 20.0, 40.0, 60.0)  # pauses before a failed grading is tried again (then 60 s)


class Dispatcher(Scheduler):
    """The embedded server's grading threads (see the module docstring); ``start()`` before ``dispatch``."""

    def __init__(self, service):
        self.service = service
        self._queue = FairQueue()  # submissions to compile, fair per user
        self._threads: list[threading.Thread] = []
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._ready = threading.Condition()  # notified when points may have become ready
        self._timers: set[threading.Timer] = set()
        self._failures: dict[int, int] = {}

    def start(self) -> None:
        """Start the threads and the pool, and queue what a previous process left unfinished."""
        self._pool = grading_pool(self.service.settings)
        # Daemon threads: stopping the server never waits for a submission being graded (it is graded
        # again at the next start, see close()).
        workers = self.service.settings.workers
        self._threads = [threading.Thread(target=self._work, name=f"kdt-grade-{i}", daemon=True)
                         for i in range(workers)]
        self._threads += [threading.Thread(target=self._judge_loop, args=(i,), name=f"kdt-grade-slot-{i}",
                                           daemon=True) for i in range(workers)]
        for thread in self._threads:
            thread.start()
        with self.service.session() as session:
            left = sorted({p["submission_id"] for p in db.pending_points(session, timedelta(0), POINTS_PER_TASK)})
        if left:
            log.info("queueing %d unfinished submission(s) again: %s", len(left), left)
        for submission_id in left:
            self.dispatch(submission_id)

    def dispatch(self, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> bool:
        """Queue submission ``submission_id`` (committed) for a compile thread and return at once."""
        if not self._threads:
            raise RuntimeError("the dispatcher is not started")
        self._queue.put(submission_id, self._user_of(submission_id))
        return True

    def _work(self) -> None:
        while (taken := self._queue.get()) is not None:
            submission_id, user = taken
            try:
                self._grade(submission_id)
            finally:
                self._queue.done(user)

    def _user_of(self, submission_id: int) -> int | None:
        """The id of the submission's user: its share of the compile queue. None (a share of its own) when
        it cannot be read now (the database is away: the compile is retried later anyway)."""
        try:
            with self.service.read_session() as session:
                row = db.get_submission(session, submission_id)
        except Exception as exc:  # any database failure: the submission is queued all the same
            log.warning("submission %s: its user could not be read (%s); queued in a share of its own",
                        submission_id, exc.__class__.__name__)
            return None
        return None if row is None else row["user_id"]

    def _grade(self, submission_id: int) -> None:
        """Compile a submission (its points become ready for the slots), tried again later on failure."""
        if self._closing.is_set():
            return
        try:
            self.service.grade_embedded(submission_id, judge=False)
        except Exception:
            if self._closing.is_set():  # the server is stopping: graded again at the next start
                return
            failures = self._failures[submission_id] = self._failures.get(submission_id, 0) + 1
            pause = RETRY_SECONDS[min(failures, len(RETRY_SECONDS)) - 1]
            log.exception("grading submission %s failed (%d time(s)); trying again in %g s",
                          submission_id, failures, pause)
            self._later(pause, submission_id)
        else:
            self._failures.pop(submission_id, None)
        self._wake()

    def _wake(self) -> None:
        with self._ready:
            self._ready.notify_all()

    def _judge_loop(self, slot: int) -> None:
        """One slot: judge the fairest ready point in the shared pool, again and again; wait for a wake-up
        (a compile or a point finished) or a second when there is none. Each slot claims under a name of
        its own (``slotN@host:pid``, which ``worker_gone`` reads as this process): two slots never take
        one point for their own."""
        worker = f"slot{slot}@{worker_name()}"
        while not self._closing.is_set():
            try:
                judged = self.service.judge_next(worker, run=self._in_shared_pool)
            except PointAbandoned as dead:
                judged = self._judge_alone(dead, worker)
            except Exception:
                if self._closing.is_set():
                    return
                log.exception("judging failed; trying again in %g s", RETRY_SECONDS[0])
                self._closing.wait(RETRY_SECONDS[0])
                continue
            if judged is not None:
                self._wake()
                continue
            with self._ready:
                self._ready.wait(1.0)

    def _in_shared_pool(self, *args):
        """``pipeline.judge_traced(*args)`` in the shared pool (``Service.judge_next``'s ``run``)."""
        return self._shared_pool().submit(pipeline.judge_traced, *args).result()

    def _judge_alone(self, dead: PointAbandoned, worker: str):
        """A point whose pool process died goes again, alone, in a fresh process (each claim counts an
        attempt, so one that always kills its process ends as IE) unless the server is stopping."""
        while not self._closing.is_set() and not self.service.stopping.is_set():
            with open_pool(self.service.settings, 1) as single:
                try:
                    return self.service.judge_point(dead.submission_id, dead.task, dead.point, worker,
                                                    run=lambda *args: single.submit(pipeline.judge_traced,
                                                                                    *args).result())
                except concurrent.futures.BrokenExecutor:
                    continue
        return None

    def _later(self, seconds: float, submission_id: int) -> None:
        def again():
            with self._lock:
                self._timers.discard(timer)
            if not self._closing.is_set():
                self._queue.put(submission_id, self._user_of(submission_id))
        timer = threading.Timer(seconds, again)
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()

    def _shared_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        """The shared pool, replaced if a dead process broke it (``grade_embedded`` retries such points)."""
        with self._lock:
            if self._closing.is_set():
                raise RuntimeError("the server is stopping")
            self._pool = renewed(self._pool, self.service.settings)
            return self._pool

    def close(self) -> None:
        """Stop grading now: the pool's processes are ended (``stop_pool``), the threads stop taking work.
        What was queued or running stays unfinished and is queued again at the next start."""
        if self._closing.is_set():
            return
        self._closing.set()
        self.service.stopping.set()
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
            pool, self._pool = self._pool, None
        self._queue.close()
        self._wake()
        if pool is not None:
            stop_pool(pool)
