"""Embedded mode: a submission graded in this process, its test points over a process pool.

``grade_embedded`` compiles once (the points not compiled yet; CE and SV points are recorded there),
then claims each point and judges it in the pool (``grader.runtime.pool``), at most as many at a time as
the pool has processes, recording each result as it comes; the points beat meanwhile. A point whose pool
process died is tried again, alone, in a fresh process, until ``max_attempts``. ``judge=False`` (the
contest server) only compiles: its slots judge the ready points fairly (``Service.judge_next``).
``OwnPool`` is the service's own pool, kept warm between submissions.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import db
from grader.config import Settings
from grader.judging import pipeline
from grader.judging.pipeline import ALL_POINTS
from grader.runtime.heartbeat import Heartbeat
from grader.runtime.pool import interrupts_deferred, open_pool, renewed, stop_pool
from grader.runtime.processes import worker_name
from judger.verdicts import PointResult

from .steps import claim_point

if TYPE_CHECKING:
    from .facade import Service


class OwnPool:
    """A service's own grading pool (``grader.runtime.pool.grading_pool``), made on first use and kept
    until ``close``: grading one submission after another (a batch ``submit``, an embedded rejudge) keeps
    its processes and their test-point data warm. Stopped at once (and made anew next time) when grading
    raises, Ctrl-C included, or when a dead process broke it."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    @contextlib.contextmanager
    def use(self) -> Iterator[concurrent.futures.ProcessPoolExecutor]:
        """The pool for a ``with`` block (see the class docstring)."""
        self._pool = renewed(self._pool, self.settings)
        try:
            yield self._pool
        except BaseException:
            pool, self._pool = self._pool, None
            if pool is not None:
                stop_pool(pool)
            raise

    def close(self) -> None:
        """Shut the pool down (its processes finish their points)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def forget(self) -> None:
        """After a fork: the parent's pool is not this process's."""
        self._pool = None


def grade_embedded(service: Service, submission_id: int, points: Iterable[tuple[int, int]] | None = None,
                   pool: concurrent.futures.Executor | None = None,
                   on_result: Callable[[PointResult], None] | None = None,
                   take_over: bool = False, judge: bool = True) -> dict | None:
    """Grade a submission in this process: compile once, judge the points in ``pool`` (default: the
    service's own, ``OwnPool``), record each result as it comes. ``points`` defaults to those without a
    verdict; ``take_over`` claims them even while another process's heartbeat is fresh (the sweeper).
    A point whose pool process died is tried again, alone, in a fresh process, until
    ``max_attempts``. ``judge=False`` (the embedded server) only compiles and records the points that
    need no simulation; the others are left ready for the fair scheduler (``judge_next``). Returns the
    stored totals (None if incomplete)."""
    todo = sorted(points) if points is not None else service.unfinished_points(submission_id)
    with service.session() as session:
        have = db.compiled_points(session, submission_id)
    missing = [p for p in todo if p not in have]
    if missing:
        for result in service.compile(submission_id, missing):
            todo.remove((result.task, result.point))
            if on_result:
                on_result(result)
    if not judge:
        return service.finalize(submission_id)
    worker = worker_name()
    with contextlib.nullcontext(pool) if pool is not None else service.own_pool.use() as batch_pool:
        died = _judge_batch(service, submission_id, todo, batch_pool, worker, on_result, take_over)
    while died and not service.stopping.is_set():  # each point whose process died goes again, alone, in a fresh process
        again = []
        for p in died:
            with open_pool(service.settings, 1) as single:
                again += _judge_batch(service, submission_id, [p], single, worker, on_result)
        died = again
    return service.finalize(submission_id)


def _judge_batch(service: Service, submission_id: int, points, pool, worker: str, on_result,
                 take_over: bool = False) -> list:
    """Claim and judge ``points`` in ``pool``, at most as many at a time as it has processes (a point is
    claimed when a process is free for it, so the simulation budget sees the points before it); their
    heartbeats beat meanwhile. Returns the points whose pool process died."""
    todo, futures, died, beating = list(points), {}, [], []
    width = max(1, getattr(pool, "_max_workers", None) or service.settings.workers)
    with Heartbeat(service, submission_id, beating, worker):
        while todo or futures:
            while todo and len(futures) < width:
                task, point = todo.pop(0)
                begun, generation = claim_point(service, submission_id, task, point, worker, take_over,
                                                owned=beating)
                if begun is None:
                    continue
                if isinstance(begun, PointResult):
                    _finish(service, submission_id, begun, worker, generation, None, on_result)
                    continue
                try:
                    with interrupts_deferred():  # a Ctrl-C waits until the pool process is started
                        future = pool.submit(pipeline.judge_traced, task, point, begun, service.settings)
                except concurrent.futures.BrokenExecutor:
                    died.append((task, point))
                    continue
                futures[future] = (task, point, generation, begun.get("key"))
            if not futures:
                continue
            finished, _ = concurrent.futures.wait(futures, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in finished:
                task, point, generation, key = futures.pop(future)
                try:
                    result, trace = future.result()
                except Exception:  # the pool process died (killed, out of memory): try the point again
                    died.append((task, point))
                    continue
                _finish(service, submission_id, result, worker, generation, trace, on_result, key)
    return sorted(died)


def _finish(service: Service, submission_id: int, result: PointResult, worker: str, generation, trace,
            on_result, key: str | None = None) -> None:
    """``finish_point`` (``key``: the simulated compiled point's, to keep the result for reuse), then
    ``on_result(result)`` if given (progress bars)."""
    service.finish_point(submission_id, result, worker, generation, trace, key)
    if on_result:
        on_result(result)


def unfinished_points(service: Service, submission_id: int) -> list:
    """The test points of a submission that have no verdict of its current generation yet."""
    with service.session() as session:
        generation = db.get_submission(session, submission_id)["generation"]
        done = {(r["task"], r["point"]) for r in db.list_results(session, submission_id)
                if r["finished_at"] is not None and r["generation"] == generation}
    return [p for p in ALL_POINTS if p not in done]
