"""The workers' tasks: thin wrappers that pass ids to ``grader.service.Service`` (plain data in and out).

- ``kdt.compile_submission(submission_id)``: audit and compile every test point once (sandboxed), store
  the compiled points and the outbox rows "judge N t.p" in one transaction, then send them, so a
  submission's ten points spread over all workers.
- ``kdt.judge_point(submission_id, task, point)``: a turn of this pool process: claim the fairest point
  it can (``Service.judge_next``: round robin across users, ``grader.runtime.fair``), else the named point;
  judge it with a heartbeat, record the result and try the totals. A turn that finds nothing to claim
  (every point done or being judged elsewhere) does nothing.

Both are idempotent, so a redelivery is harmless. The database or the broker being away is retried
inside the service's steps (``grader.runtime.retries``); if it stays away longer than
``KDT_GRADE_TRANSIENT_RETRY_SECONDS`` the task goes back to the queue (``Reject(requeue=True)``)
instead of being acknowledged as done.
"""
import logging
import os

from celery.exceptions import Reject

from grader.runtime.broker import COMPILE_TASK, JUDGE_TASK
from grader.runtime.retries import is_transient

from .app import app
from .process import service

log = logging.getLogger(__name__)


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
        service().judge_next(worker=f"{self.request.hostname}:{os.getpid()}", fallback=(submission_id, task, point))
    except LookupError:
        log.warning("submission %s does not exist (deleted?): nothing to judge", submission_id)
    except Exception as exc:
        if is_transient(exc):
            _give_back(exc, f"judge {submission_id} {task}.{point}")
        raise
