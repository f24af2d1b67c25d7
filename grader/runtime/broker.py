"""The broker side of the grading service: the Celery app's configuration and sending tasks by name.

``grader`` never imports ``worker``: the service sends tasks by name (``send_task``) with an app made
here, and ``worker.app`` builds the workers' app from the same ``make_app``, adding its tasks. The
database is the source of truth for what must be done (``db.outbox``); the broker only carries it.

Task names: ``COMPILE_TASK`` (args ``[submission_id]``) and ``JUDGE_TASK`` (``[submission_id, task,
point]``). Publishing does not retry by itself (``task_publish_retry=False`` and short socket timeouts):
a broker that is down makes ``send`` raise ``BrokerUnavailable`` at once, and the outbox row that
asked for the message stays for the background loop (``grader.runtime.background``) to send later.

Reliability settings (long, CPU-bound tasks that must never be lost):

- ``task_acks_late`` + ``task_reject_on_worker_lost``: acknowledged after the task, back on the queue
  when its pool process dies; the database counts the attempts (``Service.begin_point``).
- ``worker_prefetch_multiplier = 1``: a pool process reserves one task at a time.
- ``worker_proc_alive_timeout``: a new pool process starts its warm compile template before it takes
  a task (``worker.app``), which may take longer than Celery's default of 4 s.
- Redis ``visibility_timeout`` above the longest task: the last resort for a lost worker's tasks; the
  sweeper's heartbeats re-queue them within a minute.
- JSON only (tasks carry ids), no result backend (results live in SQL).
- Two queues, both consumed by every worker: ``kdt-grade`` (judge) and ``kdt-grade-compile`` (compile).
  Kombu's Redis transport takes from its queues in turn, so a compile never waits behind a backlog of
  judge messages (another contestant's ten time-outs): it gets the next free pool process.
- A judge message is a turn, not an order: the pool process that takes it judges the fairest point it
  can claim (``Service.judge_next``, ``grader.runtime.fair``), the message's own point if none is fairer.
"""
from __future__ import annotations

import json
from base64 import b64decode

from celery import Celery
from kombu import Exchange, Queue

from grader.config import Settings
from grader.errors import ServiceUnavailable

from .urls import safe_url

COMPILE_TASK = "kdt.compile_submission"
JUDGE_TASK = "kdt.judge_point"
QUEUE = "kdt-grade"
COMPILE_QUEUE = "kdt-grade-compile"
QUEUES = (QUEUE, COMPILE_QUEUE)
TASK_TIME_LIMIT = 1800        # seconds; a test point takes at most 3 launches x 20 s plus the compile
VISIBILITY_TIMEOUT = 2 * TASK_TIME_LIMIT
SOCKET_TIMEOUT = 5.0          # seconds: a broker that does not answer counts as down
PROC_ALIVE_TIMEOUT = 150.0    # seconds a new pool process may take to start (its warm template: warm.START_SECONDS)


class BrokerUnavailable(ServiceUnavailable):
    """The broker (Redis) cannot be reached right now; what was to be sent stays in the outbox."""


def make_app(settings: Settings, include: tuple[str, ...] = ()) -> Celery:
    """A Celery app for ``settings.broker_url`` with the settings of the module docstring."""
    app = Celery("kdt_grade", broker=settings.broker_url or "memory://", include=list(include))
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
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT, "socket_timeout": SOCKET_TIMEOUT,
                                  "socket_connect_timeout": SOCKET_TIMEOUT, "max_retries": 0},
        broker_connection_timeout=SOCKET_TIMEOUT,
        task_publish_retry=False,
        task_time_limit=TASK_TIME_LIMIT,
        task_default_queue=QUEUE,
        # Each queue with its own exchange and key: a bare Queue(name) is bound to the default exchange and
        # key ("kdt-grade"), and a message for one would reach both.
        task_queues=[Queue(name, Exchange(name), routing_key=name) for name in QUEUES],
        task_routes={COMPILE_TASK: {"queue": COMPILE_QUEUE}},
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,   # a worker waits for its broker however long it is away
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_max_tasks_per_child=200,
        # A pool process is up once its warm compile template is (worker.app: importing torch in a fresh
        # interpreter, seconds on a loaded machine); Celery's default 4 s would kill it as hung.
        worker_proc_alive_timeout=PROC_ALIVE_TIMEOUT,
        worker_hijack_root_logger=False,
    )
    return app


def task_args(kind: str, submission_id: int, task: int | None = None, point: int | None = None) -> tuple:
    """``(task name, args)`` of an outbox row's message."""
    if kind == "compile":
        return COMPILE_TASK, [submission_id]
    return JUDGE_TASK, [submission_id, task, point]


class Broker:
    """Sends tasks by name; one per process, created lazily. ``close()`` releases the connection."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._app: Celery | None = None

    @property
    def app(self) -> Celery:
        if self._app is None:
            self._app = make_app(self.settings)
        return self._app

    def send(self, kind: str, submission_id: int, task: int | None = None, point: int | None = None) -> None:
        """Publish one task. Raises ``BrokerUnavailable`` when the broker cannot take it."""
        name, args = task_args(kind, submission_id, task, point)
        try:
            self.app.send_task(name, args=args, retry=False)
        except Exception as exc:  # kombu/redis raise many types for "cannot connect"; all mean the same here
            self._reset()
            raise BrokerUnavailable(f"the broker at {safe_url(self.settings.broker_url)} is unreachable "
                                    f"({type(exc).__name__}: {exc})") from exc

    def ping(self) -> None:
        """Raises ``BrokerUnavailable`` unless the broker answers."""
        try:
            with self.app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=0, timeout=SOCKET_TIMEOUT)
        except Exception as exc:
            raise BrokerUnavailable(f"the broker at {safe_url(self.settings.broker_url)} is unreachable "
                                    f"({type(exc).__name__}: {exc})") from exc

    def waiting(self) -> set[tuple]:
        """The tasks waiting in the queue (Redis only): ``{("compile", id, None, None) | ("judge", id, t, p)}``.

        Raises ``BrokerUnavailable`` when the broker cannot be read."""
        import redis

        try:
            client = redis.Redis.from_url(self.settings.broker_url, socket_timeout=SOCKET_TIMEOUT,
                                          socket_connect_timeout=SOCKET_TIMEOUT)
            try:
                raw = [message for name in QUEUES for message in client.lrange(name, 0, -1)]
            finally:
                client.close()
        except Exception as exc:
            raise BrokerUnavailable(f"the broker at {safe_url(self.settings.broker_url)} is unreachable "
                                    f"({type(exc).__name__}: {exc})") from exc
        found = set()
        for message in raw:
            key = _message_key(message)
            if key is not None:
                found.add(key)
        return found

    def _reset(self) -> None:
        if self._app is not None:
            try:
                self._app.close()
            except Exception:  # a broken connection may fail to close; it is dropped either way
                pass
            self._app = None

    def close(self) -> None:
        self._reset()


def _message_key(message: bytes):
    """The outbox-style key of one kombu message (Celery protocol 2), or None if it is not ours."""
    try:
        envelope = json.loads(message)
        name = envelope["headers"]["task"]
        args = json.loads(b64decode(envelope["body"]))[0]
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    if name == COMPILE_TASK and len(args) == 1:
        return ("compile", int(args[0]), None, None)
    if name == JUDGE_TASK and len(args) == 3:
        return ("judge", int(args[0]), int(args[1]), int(args[2]))
    return None
