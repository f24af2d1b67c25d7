"""Fault injection with our own tools, for the fault tests and benchmarks/chaos.py (issue 11).

- ``TCPProxy(host, port)``: a loopback TCP proxy in front of a service (Redis, PostgreSQL). ``cut()``
  closes every connection through it and refuses new ones (accepted and closed at once, as a dead
  server looks to a client); ``restore()`` lets connections through again. The shared services are
  never touched.
- ``PrivateRedis()``: a ``redis-server`` of the test's own on a free port, without persistence;
  ``restart()`` stops it and starts an empty one on the same port (what a Redis restart without
  persistence does to the queue).
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TCPProxy:
    """Forwards ``127.0.0.1:self.port`` to ``(host, port)`` until cut (see the module docstring)."""

    def __init__(self, host: str, port: int):
        self.target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._up = threading.Event()
        self._up.set()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name=f"proxy-{self.port}").start()

    @property
    def up(self) -> bool:
        return self._up.is_set()

    def cut(self) -> None:
        """Drop every connection and refuse new ones."""
        self._up.clear()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                _close(s)

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._listener)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._up.is_set():
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data or not self._up.is_set():
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            _close(source)
            _close(sink)
            with self._lock:
                self._pairs = [p for p in self._pairs if source not in p]


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


class PrivateRedis:
    """``redis-server`` on a free loopback port, no persistence (``url``); ``stop()`` at the end."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="kdt-redis-")
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"redis-server on port {self.port} did not start")
            time.sleep(0.1)

    def restart(self) -> None:
        """Stop (SIGKILL: nothing saved) and start empty on the same port."""
        self._kill()
        self.start()

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        self._kill()
        shutil.rmtree(self.dir, ignore_errors=True)
