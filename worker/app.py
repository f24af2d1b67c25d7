"""The Celery app of the grading workers, configured by ``grader.runtime.broker.make_app``.

Start workers with ``kdt-grade worker`` (or ``celery -A worker.app worker``); the reliability settings are
described in ``grader.runtime.broker``. ``worker`` imports ``grader``, never the reverse; the tasks
(``worker.tasks``) are named to Celery by module path, so this module does not import them.

- Each pool process gets the grading memory limit (``grader.runtime.pool.limit_memory``: running out is
  ``MLE``, not the OOM killer) and drops the ``Service`` and database connections inherited from the
  parent (``worker.process``).
- Each pool process starts its warm compile template (``grader.judging.pipeline.prestart``) before it
  takes a task, so no compile of it starts cold (``KDT_GRADE_COMPILE_WARM=0`` aside): importing numpy
  and torch is part of the process's start, about a second, not of a contestant's first submission.
- ``worker.kombu_patch`` guards a kombu bug that ended the main process during a broker outage.
- The main process runs the background loop (``grader.runtime.background.Background``: the outbox and
  the sweeper, one sweeper at a time across all workers and servers via a database lease) from
  ``worker_ready`` until shutdown.
"""
import logging

from celery.signals import worker_process_init, worker_ready, worker_shutdown

from grader.judging.pipeline import prestart
from grader.runtime.broker import QUEUE, TASK_TIME_LIMIT, VISIBILITY_TIMEOUT, make_app  # noqa: F401 (re-exported)
from grader.runtime.pool import limit_memory
from grader.service import Service
from worker import kombu_patch
from worker.process import reset_service, settings

kombu_patch.install()  # a lost broker must not end the worker (see worker/kombu_patch.py)

log = logging.getLogger(__name__)
app = make_app(settings, include=("worker.tasks",))
_background = {}


@worker_process_init.connect
def _init_pool_process(**_kwargs) -> None:
    inherited = _background.pop("service", None)
    if inherited is not None:  # the parent's loops and connections are the parent's
        inherited.forget_connections()
    _background.clear()
    limit_memory(settings.grade_memory_mb)
    reset_service()
    # This process's warm compile template, before it takes a task: its first compile (a first
    # submission, also after a restart or the pool's recycling) forks from it like every later one.
    prestart(settings.sandbox_limits, wait=True)


@worker_ready.connect
def _start_background(**_kwargs) -> None:
    service = Service(settings)
    _background["service"] = service
    _background["loops"] = service.start_background()


@worker_shutdown.connect
def _stop_background(**_kwargs) -> None:
    loops = _background.pop("loops", None)
    if loops is not None:
        loops.stop()
    service = _background.pop("service", None)
    if service is not None:
        service.close()
