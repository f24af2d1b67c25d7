"""``Service``: one process's handle on the grading service, and the map of where each operation lives.

    submit: check_source -> user + submission rows + what grading needs (one transaction) -> scheduler
    embedded (no broker):  ``grade_embedded`` in this process, the test points over a process pool (the
                           contest server: compile, then its slots take the fairest ready point)
    broker (redis://...):  Celery task ``compile`` -> compiled points, CE/SV results + outbox "judge N
                           t.p" (one transaction) -> one ``judge`` turn per test point (``worker/``):
                           the fairest point it can claim (``judge_next``)

The database is the source of truth for what must be done; the broker only carries it. Both modes run
the same steps (``compiling``, ``steps``), which only call ``grader.judging.pipeline``; where a committed
submission goes is the process's ``scheduler`` (``grader.service.scheduling``).
"""
from __future__ import annotations

import threading

from grader.config import Settings
from grader.runtime.background import Background

from . import compiling, embedded, healing, intake, next_point, queries, rejudge as rejudging, steps
from .database import Database
from .embedded import OwnPool
from .scheduling import Scheduler, scheduler_for


class Service(Database):
    """The settings, the database (``Database``), this process's scheduler and grading pool, and every
    operation of the service, each defined in the module of its concern (the assignments below). Create
    it after forking; ``close()`` releases what it holds."""

    def __init__(self, settings: Settings | None = None):
        super().__init__(settings)
        self.own_pool = OwnPool(self.settings)
        self._scheduler: Scheduler | None = None
        # Set when the process stops (the server's ``Dispatcher.close``): a point whose pool process was
        # ended then is left for the next start instead of being tried again in a fresh process.
        self.stopping = threading.Event()

    @property
    def scheduler(self) -> Scheduler:
        """Where this process sends a committed submission (default: ``scheduler_for(self)``; the contest
        server sets its own)."""
        if self._scheduler is None:
            self._scheduler = scheduler_for(self)
        return self._scheduler

    @scheduler.setter
    def scheduler(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def start_background(self, sweep: bool = True) -> Background:
        """Start this process's background loop (``grader.runtime.background``: the outbox and the
        automatic sweeper); call ``.stop()`` on it at shutdown. Workers and the server in broker mode
        call this once at start."""
        return Background(self, sweep=sweep).start()

    def close(self) -> None:
        """Stop the scheduler, shut the pool down and release the database and broker connections."""
        self.own_pool.close()
        if self._scheduler is not None:
            self._scheduler.close()
            self._scheduler = None
        super().close()

    def forget_connections(self) -> None:
        """After a fork: drop the inherited pools (connections, grading processes) without closing the
        parent's."""
        self.own_pool.forget()
        super().forget_connections()

    # ---- intake (grader.service.intake) -------------------------------------------------------------
    accept = intake.accept
    enqueue = intake.enqueue
    submit = intake.submit

    # ---- the grading steps, shared by the embedded mode and the workers ---------------------------
    source = compiling.source
    compile = compiling.compile_points
    begin_point = steps.begin_point
    finish_point = steps.finish_point
    finalize = steps.finalize
    judge_point = steps.judge_point
    fair_points = next_point.fair_points
    judge_next = next_point.judge_next
    grade_embedded = embedded.grade_embedded
    unfinished_points = embedded.unfinished_points

    # ---- organisers' operations --------------------------------------------------------------------
    rejudge = rejudging.rejudge
    rejudge_filtered = rejudging.rejudge_filtered
    sweep = healing.sweep
    sweep_report = healing.sweep_report
    resume_interrupted = healing.resume_interrupted

    # ---- queries (grader.service.queries) ----------------------------------------------------------
    status = queries.status
    submission_source = queries.submission_source
    wait = queries.wait
    leaderboard = queries.leaderboard
    all_submissions = queries.all_submissions
