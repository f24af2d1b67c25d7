"""The background loop of every worker and of the server in broker mode: the outbox and the sweeper.

``Background(host).start()`` runs in a daemon thread: every ``KDT_GRADE_DISPATCH_INTERVAL_SECONDS`` it sends
the outbox rows still unsent (``host.scheduler.flush``), and every ``KDT_GRADE_SWEEP_INTERVAL_SECONDS`` it
sweeps (``grader.runtime.sweeper``) with ``older_than = KDT_GRADE_HEARTBEAT_STALE_SECONDS``, one sweeper at
a time across all processes (the database lease ``sweeper``, ``db.locks``). After the database was
unreachable, the sweeper waits ``older_than`` before it treats a heartbeat as stopped (the workers could not
write theirs either), so an outage spends no attempt. With the defaults a stuck point is queued again
within a minute (15 s + 30 s), no admin action needed.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from sqlalchemy import exc as sa_exc

import db

from .processes import worker_name
from .sweeper import Sweeper

log = logging.getLogger(__name__)
LEASE = "sweeper"


class Background:
    """The outbox flush and (``sweep``) the automatic sweeper in a daemon thread; ``start()`` returns self,
    ``stop()`` ends the thread (waits for a sweep under way). Every error is logged, never raised: the
    loop outlives any outage."""

    def __init__(self, host, sweep: bool = True):
        self.host, self.sweep = host, sweep
        self.sweeper = Sweeper(host)
        self.holder = f"{worker_name()}:{id(self):x}"
        self.last_report: dict | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kdt-grade-background", daemon=True)

    def start(self) -> Background:
        """Start the thread; returns self."""
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """End the loop (after a sweep under way)."""
        self._stop.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        settings = self.host.settings
        next_sweep = time.monotonic() + min(2.0, settings.sweep_interval_seconds)
        while not self._stop.wait(settings.dispatch_interval_seconds):
            try:
                self.host.scheduler.flush(min_age=settings.dispatch_interval_seconds)
                if self.sweep and time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + settings.sweep_interval_seconds
                    self._sweep_once()
                if self.sweeper.db_ok_since is None:
                    self.sweeper.db_ok_since = time.monotonic()
            except Exception as exc:  # database or broker away, or a bug: logged, the loop goes on
                self.sweeper.db_ok_since = None if _database_error(exc) else self.sweeper.db_ok_since
                log.warning("background: %s: %s", type(exc).__name__, exc)

    def _sweep_once(self) -> None:
        """One automatic sweep, if this process gets the lease ``sweeper``."""
        settings = self.host.settings
        ttl = timedelta(seconds=max(60.0, 4 * settings.sweep_interval_seconds))
        with self.host.session() as session:
            if not db.acquire_lease(session, LEASE, self.holder, ttl):
                return
        try:
            self.last_report = self.sweeper.run(settings.heartbeat_stale_seconds)
        finally:
            with self.host.session() as session:
                db.release_lease(session, LEASE, self.holder)


def _database_error(exc: BaseException) -> bool:
    return isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.DBAPIError))
