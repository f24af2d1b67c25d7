"""The HTTP processes of ``kdt-grade serve``: each spawned with a listening socket of its own on the one port.

``listening_sockets(host, port, n)`` binds ``n`` sockets with ``SO_REUSEPORT``, so the kernel spreads new
connections over the processes (by a hash of the client's address and port). With one shared socket the
first process to wake accepts every waiting connection at once: under a burst one process takes most of
the connections, and the other cores wait. Linux lets only the same user
bind such a port again, so no other user's process (a submission's sandbox runs as another) can take a
share of the connections.

``HttpProcesses(target, sockets).run()`` starts one process per socket (forked from ``multiprocessing``'s
fork server, ``grader.runtime.pool.start_forkserver``: a clean interpreter with the app imported, nothing inherited
from the grading process but the socket) and supervises them until
SIGINT or SIGTERM: one that dies is started again on its socket (the connections waiting there are
kept); five deaths in a row within ``QUICK_DEATH_SECONDS`` of their start, or uvicorn's start-up
failure status, end the server with ``HttpProcessesFailed``. At the end each process gets SIGTERM
(uvicorn finishes the requests under way), then SIGKILL after ``STOP_SECONDS``.
"""
from __future__ import annotations

import errno
import fcntl
import logging
import multiprocessing
import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from uvicorn.config import STARTUP_FAILURE

from grader.runtime.pool import start_forkserver

log = logging.getLogger("kdt_grade.web.server")
multiprocessing.allow_connection_pickling()  # sockets travel to the processes through the fork server

QUICK_DEATH_SECONDS = 10.0
QUICK_DEATHS = 5
STOP_SECONDS = 30.0
BACKLOG = 2048


class HttpProcessesFailed(RuntimeError):
    """The HTTP processes cannot start (the app fails to load, the log says why)."""


def port_lock(port: int) -> int:
    """Hold (for as long as the returned descriptor stays open) this user's lock of TCP ``port``: a file
    ``kdt-grade-serve-<uid>-port-<port>.lock`` in the temporary directory, flocked. Two servers started at
    the same moment both pass the plain bind of ``listening_sockets`` (SO_REUSEADDR sockets share an
    address until one listens); only one gets this lock. Raises ``OSError`` (EADDRINUSE) when another
    process holds it."""
    path = Path(tempfile.gettempdir()) / f"kdt-grade-serve-{os.geteuid()}-port-{port}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OSError(errno.EADDRINUSE, "Address already in use (another kdt-grade serve holds it)") from None
    return fd


def listening_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` TCP sockets listening on ``host``:``port`` (port 0: one free port for all), each with
    ``SO_REUSEPORT``. Raises ``OSError`` when the address cannot be bound: not local, or in use, also by
    another ``kdt-grade serve`` of the same user (``SO_REUSEPORT`` alone would let it share the port
    silently, and send part of the contestants to the other contest: a plain bind first refuses that)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # old connections in TIME_WAIT are fine
        probe.bind((host, port))  # EADDRINUSE while anything listens there, SO_REUSEPORT or not
        port = probe.getsockname()[1]
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
            port = sock.getsockname()[1]
            sock.listen(BACKLOG)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class HttpProcesses:
    """One process per socket running ``target(sock)`` (a module-level function: it is pickled),
    supervised by ``run()`` (see the module docstring). ``run`` must be called in the main thread (it
    handles SIGINT and SIGTERM while it runs)."""

    def __init__(self, target: Callable[[socket.socket], None], sockets: list[socket.socket]):
        self.target, self.sockets = target, sockets
        self._processes: list = [None] * len(sockets)
        self._started: list[float] = [0.0] * len(sockets)
        self._quick_deaths = 0
        self._stop = threading.Event()

    def run(self) -> None:
        """Start the processes and keep them running until SIGINT/SIGTERM; then stop them. Raises
        ``HttpProcessesFailed`` (after stopping the others) when they keep dying at start."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for index in range(len(self.sockets)):
                self._start(index)
            while not self._stop.wait(0.5):
                for index in range(len(self.sockets)):
                    self._check(index)
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, _frame) -> None:
        log.info("received %s: stopping the HTTP processes, then grading", signal.Signals(signum).name)
        self._stop.set()

    def _start(self, index: int) -> None:
        process = start_forkserver().Process(target=self.target, args=(self.sockets[index],), name=f"kdt-grade-http-{index}")
        process.start()
        self._processes[index], self._started[index] = process, time.monotonic()

    def _check(self, index: int) -> None:
        process = self._processes[index]
        if process.is_alive():
            if time.monotonic() - self._started[index] > QUICK_DEATH_SECONDS:
                self._quick_deaths = 0
            return
        process.join()
        if process.exitcode == STARTUP_FAILURE:
            raise HttpProcessesFailed(f"an HTTP process could not start the app (exit status {STARTUP_FAILURE}); "
                                      "the log above says why")
        quick = time.monotonic() - self._started[index] < QUICK_DEATH_SECONDS
        self._quick_deaths = self._quick_deaths + 1 if quick else 0
        if self._quick_deaths >= QUICK_DEATHS:
            raise HttpProcessesFailed(f"{QUICK_DEATHS} HTTP processes in a row died within "
                                      f"{QUICK_DEATH_SECONDS:.0f} s of their start; the log above says why")
        log.warning("HTTP process %s ended (exit status %s); starting another", process.pid, process.exitcode)
        self._start(index)

    def _stop_all(self) -> None:
        running = [p for p in self._processes if p is not None and p.is_alive()]
        for process in running:
            process.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for process in running:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                log.warning("HTTP process %s did not stop in %.0f s: killed", process.pid, STOP_SECONDS)
                process.kill()
                process.join()
