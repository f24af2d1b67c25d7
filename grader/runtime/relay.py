"""The line from ``kdt-grade serve``'s HTTP processes to its grading process (embedded mode).

An HTTP process accepts a submission and hands its id over with ``Relay.send``: one datagram on a Unix
socket in a private directory (the socket's path is ``$KDT_GRADE_RELAY_SOCKET``). The grading process's
``RelayListener`` receives it and passes it to its scheduler. An HTTP process that has started its app
says so with ``Relay.ready`` (``READY`` and its pid), so the server can log when all of them are up.
A lost datagram loses nothing: the row is committed, and the grading process queues every unfinished
submission again when it starts.
"""
from __future__ import annotations

import logging
import os
import socket
import threading

# The server's log configuration shows the ``kdt_grade`` loggers (``grader.serve.server.log_config``).
log = logging.getLogger("kdt_grade.web.grading")

RELAY_ENV = "KDT_GRADE_RELAY_SOCKET"  # the grading process's socket path, for its HTTP processes
READY = b"ready "  # + the pid: an HTTP process has started its app
_MAX_DATAGRAM = 32


class Relay:
    """An HTTP process's line to the grading process: ``send(id)`` is one datagram on the Unix socket
    ``path`` (see ``RelayListener``). A failed send is logged, never raised: the row is committed, and the
    grading process queues every unfinished submission again when it starts."""

    def __init__(self, path: str):
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)

    def send(self, submission_id: int) -> None:
        """Hand ``submission_id`` (committed) to the grading process."""
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
        """Close the socket."""
        self._sock.close()


class RelayListener:
    """The grading process's end of ``Relay``: binds ``path`` (mode 0600, in a directory only this user
    can enter) and passes each id it receives to ``scheduler.dispatch`` (embedded mode), and the pid
    of each HTTP process that says ``READY`` to ``on_ready(pid)``; anything else (an id in broker mode,
    not a decimal id below 2**31) is dropped with a warning."""

    def __init__(self, scheduler, path: str, on_ready=None):
        self.scheduler, self.path, self.on_ready = scheduler, path, on_ready
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        old = os.umask(0o177)
        try:
            self._sock.bind(path)
        finally:
            os.umask(old)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kdt-grade-relay", daemon=True)

    def start(self) -> RelayListener:
        """Start receiving in a daemon thread; returns self."""
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
            self._take(data)

    def _take(self, data: bytes) -> None:
        """One datagram: an HTTP process's readiness, a submission id, or something to drop."""
        text = data.decode("ascii", "replace")
        if text.startswith(READY.decode()) and text[len(READY):].isdigit():
            if self.on_ready is not None:
                self.on_ready(int(text[len(READY):]))
            return
        if not (self.scheduler.embedded and text.isdigit() and len(text) <= 10 and 0 < int(text) < 2**31):
            log.warning("relay: dropped a message that is not a submission id (%d bytes)", len(data))
            return
        self.scheduler.dispatch(int(text))

    def close(self) -> None:
        """Stop receiving, close the socket and remove its file."""
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


def announce_ready(path: str) -> None:
    """An HTTP process's ``Relay.ready`` on the grading process's socket ``path`` (in either mode: the
    server logs that it serves once every HTTP process has said so)."""
    relay = Relay(path)
    try:
        relay.ready()
    finally:
        relay.close()
