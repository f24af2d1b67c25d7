"""The workers' tasks: thin wrappers that pass ids to ``grader.service.Service`` (plain data in and out).

- ``kdt.compile_submission(submission_id)``: audit and compile every test point once (sandboxed), store
  the compiled points and the outbox rows "judge N t.p" in one transaction, then send them, so a
  submission's ten points spread over all workers.
- ``kdt.judge_point(submission_id, task, point)``: claim (attempt counter), judge with a heartbeat,
  record the result and try the totals. A redelivered task whose point already has a verdict, or is
  being judged elsewhere, does nothing.

Both are idempotent, so a redelivery is harmless. The database or the broker being away is retried
inside the service's steps (``grader.transient``); if it stays away longer than
``KDT_GRADE_TRANSIENT_RETRY_SECONDS`` the task goes back to the queue (``Reject(requeue=True)``)
instead of being acknowledged as done.
"""
import logging
import os

from celery.exceptions import Reject

from grader.broker import COMPILE_TASK, JUDGE_TASK
from grader.service import Service
from grader.transient import is_transient

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


def _give_back(exc: Exception, what: str):
    log.error("%s: the infrastructure stayed unreachable (%s); the task goes back to the queue", what, exc)
    raise Reject(str(exc), requeue=True) from exc


@app.task(name=COMPILE_TASK, bind=True)
def compile_submission(self, submission_id: int) -> None:
    try:
        service().compile(submission_id, queue=True)
    except LookupError:
        log.warning("submission %s does not exist (deleted?): nothing to compile", submission_id)
    except Exception as exc:
        if is_transient(exc):
            _give_back(exc, f"compile {submission_id}")
        raise


@app.task(name=JUDGE_TASK, bind=True)
def judge_point(self, submission_id: int, task: int, point: int) -> None:
    try:
        service().judge_point(submission_id, task, point, worker=f"{self.request.hostname}:{os.getpid()}")
    except LookupError:
        log.warning("submission %s does not exist (deleted?): nothing to judge", submission_id)
    except Exception as exc:
        if is_transient(exc):
            _give_back(exc, f"judge {submission_id} {task}.{point}")
        raise
