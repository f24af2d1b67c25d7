"""Where a committed submission goes to be graded: one ``Scheduler`` per process, chosen here.

==========================================  ========================  =====================================
process                                     embedded (no broker)      broker (``KDT_GRADE_BROKER_URL``)
==========================================  ========================  =====================================
a command (``submit``, ``admin rejudge``)   ``InlineScheduler``:      ``OutboxScheduler``: outbox rows,
                                            graded in this thread     sent to the Celery workers
``serve``'s grading process (or an app      ``Dispatcher``: grading   ``OutboxScheduler`` (``quiet``: a
served alone)                               threads, a shared pool    failed send is logged)
an HTTP process of ``serve``                ``RelayScheduler``: the   ``OutboxScheduler`` (``quiet``)
                                            id to the grading
                                            process
==========================================  ========================  =====================================

The service's intake (``Service.enqueue``), rejudges and the sweeper all go through ``Service.scheduler``.
"""
from __future__ import annotations

from .base import Scheduler
from .grading_threads import Dispatcher
from .inline import InlineScheduler
from .outbox import OutboxScheduler
from .relayed import RelayScheduler

__all__ = ["Dispatcher", "InlineScheduler", "OutboxScheduler", "RelayScheduler", "Scheduler", "scheduler_for"]


def scheduler_for(service, relay: str | None = None, server: bool = False) -> Scheduler:
    """The scheduler of a process (the table of the module docstring): ``relay``, the grading process's
    socket for an HTTP process of ``serve``; ``server``, any process of the contest server."""
    if not service.settings.embedded:
        return OutboxScheduler(service, quiet=server or relay is not None)
    if relay is not None:
        return RelayScheduler(relay)
    if server:
        return Dispatcher(service)
    return InlineScheduler(service)
