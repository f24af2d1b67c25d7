"""Where the server sends an accepted submission: never graded in the request, always in the background.

``kdt-grade serve`` runs one grading process (the supervisor, ``grader.web.server``) and one or more HTTP
processes (uvicorn, each on a listening socket of its own on the port, ``grader.web.supervisor``):

- Embedded mode (no broker): the grading process's ``Dispatcher`` grades with a few threads, each running
  ``Service.grade_embedded`` (the sandboxed compile, then the test points) over one shared process pool
  (``grader.pool.grading_pool``). An HTTP process hands each accepted id over with ``Relay`` (one datagram
  on a Unix socket in a private directory); the grading process's ``RelayListener`` receives it. At
  start, submissions left unfinished by a previous server process (it stopped or crashed while they were
  queued or running) are queued again, so none is lost; a grading that fails (the database went away) is
  tried again after a pause (5 s doubling to 60 s), with no admin action.
- Broker mode: ``Service.enqueue`` sends the compile task to the Celery workers, from the HTTP process
  that accepted it. If the broker cannot be reached the submission is still stored (the request
  succeeded); its outbox row is sent by the grading process's background dispatcher once the broker is back.

``create_app(settings)`` without ``relay`` (tests that serve the app in one process) dispatches in its
own process, exactly as the grading process does.
"""
from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import socket
import threading
from datetime import timedelta

import db
from grader.pool import grading_pool, renewed, stop_pool
from grader.service import Service
from judger.tasks import POINTS_PER_TASK

log = logging.getLogger("kdt_grade.web.grading")

RELAY_ENV = "KDT_GRADE_RELAY_SOCKET"  # the grading process's socket path, for its HTTP processes
RETRY_SECONDS = (5.0, 10.0, 20.0, 40.0, 60.0)  # pauses before a failed grading is tried again (then 60 s)
_MAX_DATAGRAM = 32
READY = b"ready "  # + the pid: an HTTP process has started its app


class Dispatcher:
    """Starts grading of committed submissions (see the module docstring). ``relay``: the socket path of
    the grading process, for an HTTP process in embedded mode (``dispatch`` then sends the id there)."""

    def __init__(self, service: Service, relay: str | None = None):
        self.service = service
        self.embedded = service.settings.embedded
        self.relay = Relay(relay) if relay else None
        self._queue: queue.SimpleQueue[int | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._timers: set[threading.Timer] = set()
        self._failures: dict[int, int] = {}

    def start(self) -> None:
        """Embedded mode, grading here: start the threads and the pool, and queue what a previous
        process left unfinished. Nothing to start for a relay or in broker mode."""
        if self.relay is not None:
            self.relay.ready()
            return
        if not self.embedded:
            return
        self._pool = grading_pool(self.service.settings)
        # Daemon threads: stopping the server never waits for a submission being graded (it is graded
        # again at the next start, see close()).
        self._threads = [threading.Thread(target=self._work, name=f"kdt-grade-{i}", daemon=True)
                         for i in range(self.service.settings.workers)]
        for thread in self._threads:
            thread.start()
        with self.service.session() as session:
            left = sorted({p["submission_id"] for p in db.pending_points(session, timedelta(0), POINTS_PER_TASK)})
        if left:
            log.info("queueing %d unfinished submission(s) again: %s", len(left), left)
        for submission_id in left:
            self.dispatch(submission_id)

    def dispatch(self, submission_id: int) -> None:
        """Start grading submission ``submission_id`` (committed) and return at once."""
        if self.embedded and self.relay is not None:
            self.relay.send(submission_id)
            return
        if self.embedded:
            if not self._threads:
                raise RuntimeError("the dispatcher is not started")
            self._queue.put(submission_id)
            return
        try:
            with self._lock:  # one Celery producer for all request threads
                self.service.enqueue(submission_id)
        except Exception as exc:  # the broker is down: the row is committed; the sweeper queues it later
            log.error("submission %s is stored but could not be queued (%s); the outbox dispatcher sends "
                      "it when the broker is back", submission_id, exc.__class__.__name__)

    def _work(self) -> None:
        while (submission_id := self._queue.get()) is not None:
            self._grade(submission_id)

    def _grade(self, submission_id: int) -> None:
        if self._closing.is_set():
            return
        try:
            self.service.grade_embedded(submission_id, pool=self._shared_pool())
        except Exception:
            if self._closing.is_set():  # the pool was stopped under it: graded again at the next start
                return
            failures = self._failures[submission_id] = self._failures.get(submission_id, 0) + 1
            pause = RETRY_SECONDS[min(failures, len(RETRY_SECONDS)) - 1]
            log.exception("grading submission %s failed (%d time(s)); trying again in %g s",
                          submission_id, failures, pause)
            self._later(pause, submission_id)
        else:
            self._failures.pop(submission_id, None)

    def _later(self, seconds: float, submission_id: int) -> None:
        def again():
            with self._lock:
                self._timers.discard(timer)
            if not self._closing.is_set():
                self._queue.put(submission_id)
        timer = threading.Timer(seconds, again)
        timer.daemon = True
        with self._lock:
            self._timers.add(timer)
        timer.start()

    def _shared_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        """The shared pool, replaced if a dead process broke it (``grade_embedded`` retries such points)."""
        with self._lock:
            if self._closing.is_set():
                raise RuntimeError("the server is stopping")
            self._pool = renewed(self._pool, self.service.settings)
            return self._pool

    def close(self) -> None:
        """Stop grading now: the pool's processes are ended (``stop_pool``), the threads stop taking work.
        What was queued or running stays unfinished and is queued again at the next start."""
        self._closing.set()
        self.service.stopping.set()
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
            pool, self._pool = self._pool, None
        for _ in self._threads:
            self._queue.put(None)
        if pool is not None:
            stop_pool(pool)
        if self.relay is not None:
            self.relay.close()


class Relay:
    """An HTTP process's line to the grading process: ``send(id)`` is one datagram on the Unix socket
    ``path`` (see ``RelayListener``). A failed send is logged, never raised: the row is committed, and the
    grading process queues every unfinished submission again when it starts."""

    def __init__(self, path: str):
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

    def send(self, submission_id: int) -> None:
        try:
            self._sock.sendto(str(int(submission_id)).encode(), self.path)
        except OSError as exc:
            log.error("submission %s is stored but the grading process did not take it (%s); it is "
                      "graded when the server starts again", submission_id, exc.__class__.__name__)

    def ready(self) -> None:
        """Tell the grading process that this HTTP process has started its app (``READY``)."""
        try:
            self._sock.sendto(READY + str(os.getpid()).encode(), self.path)
        except OSError as exc:
            log.warning("could not tell the grading process that this HTTP process is ready (%s)",
                        exc.__class__.__name__)

    def close(self) -> None:
        self._sock.close()


class RelayListener:
    """The grading process's end of ``Relay``: binds ``path`` (mode 0600, in a directory only this user
    can enter) and passes each id it receives to ``dispatcher.dispatch`` (embedded mode), and the pid
    of each HTTP process that says ``READY`` to ``on_ready(pid)``; anything else (an id in broker mode,
    not a decimal id below 2**31) is dropped with a warning."""

    def __init__(self, dispatcher: Dispatcher, path: str, on_ready=None):
        self.dispatcher, self.path, self.on_ready = dispatcher, path, on_ready
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        old = os.umask(0o177)
        try:
            self._sock.bind(path)
        finally:
            os.umask(old)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kdt-grade-relay", daemon=True)

    def start(self) -> RelayListener:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while True:
            try:
                data = self._sock.recv(_MAX_DATAGRAM)
            except OSError:
                data = b""
            if self._closed.is_set():  # close() shut the socket down: the server is stopping
                return
            text = data.decode("ascii", "replace")
            if text.startswith(READY.decode()) and text[len(READY):].isdigit():
                if self.on_ready is not None:
                    self.on_ready(int(text[len(READY):]))
                continue
            if not (self.dispatcher.embedded and text.isdigit() and len(text) <= 10 and 0 < int(text) < 2**31):
                log.warning("relay: dropped a message that is not a submission id (%d bytes)", len(data))
                continue
            self.dispatcher.dispatch(int(text))

    def close(self) -> None:
        self._closed.set()
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the receiving thread
        except OSError:
            pass
        if self._thread.is_alive():
            self._thread.join(5)
        self._sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
