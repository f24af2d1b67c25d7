"""The workers' tasks: thin wrappers that pass ids to ``grader.service.Service`` (plain data in and out).

- ``kdt.compile_submission(submission_id)``: audit and compile every test point once (sandboxed), store
  the compiled points, then send one ``kdt.judge_point`` per test point, so a submission's ten points
  spread over all workers.
- ``kdt.judge_point(submission_id, task, point)``: claim (attempt counter), judge, record the result and
  try the totals. A redelivered task whose point already has a verdict does nothing.

Both are idempotent, so a redelivery after a lost worker is harmless.
"""
import logging
import os

from grader.service import COMPILE_TASK, JUDGE_TASK, Service

from .app import app, settings

log = logging.getLogger(__name__)
_service: Service | None = None


def service() -> Service:
    """This process's ``Service`` (created on first use, after the pool process was forked)."""
    global _service
    if _service is None:
        _service = Service(settings)
    return _service


def reset_service() -> None:
    """Forget a ``Service`` inherited from the parent process (its connections are the parent's)."""
    global _service
    if _service is not None:
        _service.forget_connections()
    _service = None


@app.task(name=COMPILE_TASK, bind=True)
def compile_submission(self, submission_id: int) -> None:
    try:
        points = service().compile(submission_id)
    except LookupError:
        log.warning("submission %s does not exist (deleted?): nothing to compile", submission_id)
        return
    for task, point in points:
        judge_point.delay(submission_id, task, point)


@app.task(name=JUDGE_TASK, bind=True)
def judge_point(self, submission_id: int, task: int, point: int) -> None:
    service().judge_point(submission_id, task, point, worker=f"{self.request.hostname}:{os.getpid()}")
