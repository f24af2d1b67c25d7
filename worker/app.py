"""The Celery app of the grading workers (issue 4, "worker/"), configured from ``grader.config.Settings``.

Start workers with ``kdt-grade worker`` (or ``celery -A worker.app worker``). Results live in SQL (``db``),
so there is no result backend. The settings suit long, CPU-bound tasks that must never be lost:

- ``task_acks_late``: a task is acknowledged when it has finished, not when it is received, and
  ``task_reject_on_worker_lost`` puts it back on the queue when its pool process dies (SIGKILL, OOM).
  The database counts the attempts; a test point whose graders died ``KDT_GRADE_MAX_ATTEMPTS`` times
  ends as ``IE`` (``grader.service.Service.begin_point``).
- ``worker_prefetch_multiplier = 1``: a pool process reserves one task at a time, so a long test point
  does not hold others back that an idle worker could take.
- Redis ``visibility_timeout`` above the longest task (``task_time_limit``): a task whose whole worker
  vanished is delivered again after it; ``kdt-grade admin sweep`` re-queues such points sooner.
- JSON only (tasks carry ids, never objects), one queue ``kdt-grade``.

Each pool process gets the grading memory limit (``pipeline.limit_memory``: running out is ``MLE``, not
the OOM killer) and drops database connections inherited from the parent.
"""
from celery import Celery
from celery.signals import worker_process_init

from grader.config import Settings, load_settings

QUEUE = "kdt-grade"
TASK_TIME_LIMIT = 1800        # seconds; a test point takes at most 3 launches x 20 s plus the compile
VISIBILITY_TIMEOUT = 2 * TASK_TIME_LIMIT


def make_app(settings: Settings) -> Celery:
    """A Celery app for ``settings.broker_url`` with the reliability settings of the module docstring."""
    app = Celery("kdt_grade", broker=settings.broker_url or "memory://", include=["worker.tasks"])
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_track_started=True,
        worker_prefetch_multiplier=1,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT},
        task_time_limit=TASK_TIME_LIMIT,
        task_default_queue=QUEUE,
        broker_connection_retry_on_startup=True,
        worker_max_tasks_per_child=200,
        worker_hijack_root_logger=False,
    )
    return app


settings = load_settings()
app = make_app(settings)


@worker_process_init.connect
def _init_pool_process(**_kwargs) -> None:
    from grader.pipeline import limit_memory
    from worker import tasks

    limit_memory(settings.grade_memory_mb)
    tasks.reset_service()
