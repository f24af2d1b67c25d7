"""The life of one test point, the same in the embedded mode and on the Celery workers.

``begin_point`` claims it (skip a point that already has a verdict of the current generation, or that
another worker is judging with a live heartbeat; ``db.claim_attempt`` and commit; past ``max_attempts``
the point ends as ``IE``; a point whose submission spent its simulation budget,
``KDT_GRADE_SIM_BUDGET_SECONDS``, is ``TLE`` without simulation; a point whose kernel an identical
submission's simulation already judged takes that result, ``reuse.lookup``; else hand back its compiled
point),
``grader.judging.pipeline.judge`` judges it
(anywhere), ``finish_point`` records the result and commits, then tries the totals in a new transaction
(``finalize``), so the last point to finish stores them. ``judge_point`` is the whole life in this
process, a heartbeat beating from the claim until the result is recorded; which point a free worker
takes is ``grader.service.next_point``'s question.

Every step takes ids and re-reads rows, and every write is idempotent, so a task may run twice. Database
errors are retried with backoff (``Service.retry``): an outage costs no attempt; only a claim (a worker
that actually starts judging) does.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

import db
from db.base import utcnow
from grader.judging import pipeline
from grader.runtime.heartbeat import Heartbeat
from grader.runtime.processes import worker_gone, worker_name
from judger.clocks import WallClockBackstop
from judger.scoring import task_score
from judger.tasks import POINTS_PER_TASK, WEIGHTS
from judger.verdicts import PointResult, Verdict

from . import reuse
from .compiling import compiled_point
from .results import record

if TYPE_CHECKING:
    from .facade import Service

log = logging.getLogger(__name__)


def begin_point(service: Service, submission_id: int, task: int, point: int, worker: str):
    """Claim a test point. Returns None if there is nothing to do (it already has a verdict of the
    current generation, or another worker is judging it), a final ``PointResult`` (``IE``) if its
    graders died ``max_attempts`` times, else the compiled point to judge."""
    return claim_point(service, submission_id, task, point, worker)[0]


def claim_point(service: Service, submission_id: int, task: int, point: int, worker: str,
                take_over: bool = False, owned: list | None = None):
    """``begin_point``'s outcome and the generation the claim belongs to (``take_over``: claim even a
    point with a live heartbeat; the sweeper decided it is stuck). ``owned``: the list a ``Heartbeat``
    beats; the point is added to it as soon as its claim is committed, so that it beats while its
    compiled point is loaded and until its result is recorded, however long the database is away."""
    tried: list = []
    outcome, claim = service.retry(lambda: _claim(service, submission_id, task, point, worker, take_over, tried),
                                   f"claiming test point {task}.{point} of submission {submission_id}")
    if outcome == "done":
        service.retry(lambda: service.finalize(submission_id), "storing totals")  # a lost finalize, if any
        return None, None
    if outcome == "elsewhere":
        return None, None
    attempts, generation = claim
    if owned is not None:
        owned.append((task, point))
    if attempts > service.settings.max_attempts:
        return _died_too_often(task, point, attempts - 1), generation
    compiled = service.retry(lambda: compiled_point(service, submission_id, task, point),
                             f"loading compiled point {task}.{point} of submission {submission_id}")
    reused = service.retry(lambda: reuse.lookup(service, compiled), f"looking up the result of point {task}.{point}")
    if reused is not None:  # costs no simulation: before the budget
        return reused, generation
    over = service.retry(lambda: _over_budget(service, submission_id, task, point, generation),
                         f"reading the simulation budget of submission {submission_id}")
    return (compiled if over is None else over), generation


def _died_too_often(task: int, point: int, died: int) -> PointResult:
    return PointResult(task, point, Verdict.IE, None, 0.0,
                       f"internal error of the judge: the grading process died {died} times on this "
                       "test point (not necessarily your fault; an organiser will look at it)")


def _over_budget(service: Service, submission_id: int, task: int, point: int, generation: int) -> PointResult | None:
    """A ``TLE`` without simulation when the submission's finished points of ``generation`` spent its
    simulation budget (``KDT_GRADE_SIM_BUDGET_SECONDS``; 0: none), else None."""
    budget = service.settings.sim_budget_seconds
    if not budget:
        return None
    with service.session() as session:
        spent = db.spent_seconds(session, submission_id, generation)
    if spent < budget:
        return None
    return PointResult(task, point, Verdict.TLE, None, 0.0,
                       f"not simulated: this submission's test points already took {spent:.0f} s of "
                       f"simulation, its budget is {budget:g} s (KDT_GRADE_SIM_BUDGET_SECONDS)\n"
                       "Simulation timeout")


def _claim(service: Service, submission_id: int, task: int, point: int, worker: str, take_over: bool = False,
           tried: list | None = None):
    """One transaction: ``("done", None)`` (a verdict of the current generation exists),
    ``("elsewhere", None)`` (another worker judges it with a live heartbeat, or claimed it between
    this transaction's read and its write), else ``("claimed", (attempts, generation))``.

    ``tried``: the claim times of this same claim's earlier tries (each is appended before its
    write). When the connection broke after a try's commit reached the database but before its
    reply came back, the retry finds that claim (this worker, one of those ``started_at``) and
    returns it instead of counting a second attempt."""
    with service.session() as session:
        sub = db.get_submission(session, submission_id)
        if sub is None:
            raise LookupError(f"no submission with id {submission_id}")
        generation = sub["generation"]
        row = db.get_result(session, submission_id, task, point)
        if row is not None and row["generation"] == generation:
            if row["finished_at"] is not None:
                return "done", None
            if tried and row["worker"] == worker and row["started_at"] in tried:
                return "claimed", (row["attempts"], generation)  # an earlier try committed after all
            if row["worker"] != worker and not take_over and _alive(service, row):
                return "elsewhere", None
        now = utcnow()
        if tried is not None:
            tried.append(now)
        attempts = db.claim_attempt(session, submission_id, task, point, worker, now=now,
                                    generation=generation, seen=row)
        if attempts is None:
            return "elsewhere", None
        return "claimed", (attempts, generation)


def _alive(service: Service, row: dict) -> bool:
    """Whether the worker of an unfinished row still judges it: not a process of this host that is
    gone (``worker_gone``), and its heartbeat is fresh."""
    if worker_gone(row["worker"]):
        return False
    seen = row["heartbeat_at"] or row["started_at"]
    return seen is not None and utcnow() - seen < timedelta(seconds=service.settings.heartbeat_stale_seconds)


def finish_point(service: Service, submission_id: int, result: PointResult, worker: str,
                 generation: int | None = None, trace: bytes | None = None, key: str | None = None) -> dict | None:
    """Record a test point's result and its trace (``pipeline.judge_traced``; None deletes an old one)
    in one transaction (idempotent), with the result kept for reuse under ``key`` (its compiled point's,
    when it was simulated), then try the totals in a new transaction; both are retried while the
    database is away."""
    if generation is None:
        with service.session() as session:
            generation = db.get_submission(session, submission_id)["generation"]

    def write():
        with service.session() as session:
            record(session, submission_id, result, worker, generation, trace, key=key)

    service.retry(write, f"recording test point {result.task}.{result.point} of submission {submission_id}")
    return service.retry(lambda: service.finalize(submission_id), f"storing the totals of submission {submission_id}")


def finalize(service: Service, submission_id: int) -> dict | None:
    """Store the totals if every point has finished (``db.finalize_submission`` with the judger's
    ``task_score``); None while points are missing."""
    with service.session() as session:
        return db.finalize_submission(session, submission_id, WEIGHTS, POINTS_PER_TASK, task_score=task_score)


def judge_point(service: Service, submission_id: int, task: int, point: int, worker: str | None = None,
                run: Callable | None = None):
    """The whole life of one test point in this process: begin, judge, finish, the point beating from
    its claim until its result is recorded. ``run(task, point, compiled point, settings)`` judges
    (default ``pipeline.judge_traced`` here; the embedded server passes its pool's); what it raises
    propagates with the point left claimed. Returns the ``PointResult``, or None when there was
    nothing to do."""
    worker = worker or worker_name()
    owned: list = []  # the point once claimed: it beats until its result is recorded
    with Heartbeat(service, submission_id, owned, worker):
        for attempt in range(1, service.settings.max_attempts + 1):
            begun, generation = claim_point(service, submission_id, task, point, worker, owned=owned)
            if begun is None:
                return None
            key = None
            if isinstance(begun, PointResult):
                result, trace = begun, None
                break
            try:
                result, trace = (run or pipeline.judge_traced)(task, point, begun, service.settings)
                key = begun.get("key")
                break
            except WallClockBackstop as exc:  # the machine's fault: claimed again (one more attempt)
                result, trace = _overloaded(task, point, exc), None
                log.warning("test point %s.%s of submission %s: %s (attempt %s)", task, point, submission_id,
                            exc, attempt)
                time.sleep(min(10.0, float(attempt)))  # the load may pass
        service.finish_point(submission_id, result, worker, generation, trace, key)
    return result


def _overloaded(task: int, point: int, exc: WallClockBackstop) -> PointResult:
    """The ``IE`` of a point whose every attempt passed the wall-clock backstop (``judger.clocks``)."""
    return PointResult(task, point, Verdict.IE, None, 0.0,
                       f"internal error of the judge (not your fault): {exc}; an organiser will grade it again")
