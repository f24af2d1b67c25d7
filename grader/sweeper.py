"""The sweeper and the outbox dispatcher: grading heals itself after any outage (issue 11).

``Sweeper(service).run(older_than)`` does, in order:

1. dispatch: send the outbox rows still unsent (``Service.dispatch``; broker mode);
2. totals: store the totals of submissions whose every point is final but whose totals are missing
   (the connection dropped between the last point and the totals);
3. re-queue, as outbox rows then sent (broker mode) or graded here (embedded mode):
   - ``stuck``: a claimed point whose heartbeat is older than ``older_than`` (its worker died), or
     ``worker gone``: claimed by a process of this host that no longer exists (at once, together with
     the points of that submission nobody claimed yet);
   - ``missing``: an unscored submission older than ``older_than`` with a point nobody claimed;
   in broker mode only when nothing for it is in flight (an outbox row, a message waiting in the
   queue, or a compile under way: its lease ``compile N`` is live). A submission without compiled
   points gets ``compile``, the others ``judge`` per point.
   Re-queueing twice is harmless: a judge task skips a point that is done or beating elsewhere.

``Background(service).start()`` runs it in a thread of every worker and of the server: the dispatcher
every ``KDT_GRADE_DISPATCH_INTERVAL_SECONDS``, the sweeper every ``KDT_GRADE_SWEEP_INTERVAL_SECONDS``
with ``older_than = KDT_GRADE_HEARTBEAT_STALE_SECONDS``, one sweeper at a time across all processes (the
database lease ``sweeper``, ``db.locks``). After the database was unreachable, the automatic sweeper waits
``older_than`` before it treats a heartbeat as stopped (the workers could not write theirs either), so an
outage spends no attempt. Within a minute with the defaults (15 s + 30 s), no admin action needed.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

import db
from judger.tasks import POINTS_PER_TASK

from .broker import BrokerUnavailable
from .service import worker_gone, worker_name

log = logging.getLogger(__name__)
LEASE = "sweeper"


class Sweeper:
    """One sweep over a ``Service`` (see the module docstring); ``db_ok_since`` (monotonic seconds, or
    None) is when this process last regained the database (``Background`` keeps it)."""

    def __init__(self, service):
        self.service = service
        self.db_ok_since: float | None = None

    def run(self, older_than: float, manual: bool = False) -> dict:
        """One sweep; returns ``{"dispatched": n, "totals": [ids], "points": [re-queued points with
        "reason" and "action"], "notes": [str]}``. ``manual`` (``admin sweep``) sends every outbox row
        and does not wait after a database outage."""
        service, settings = self.service, self.service.settings
        report = {"dispatched": 0, "totals": [], "points": [], "notes": []}
        if not settings.embedded:
            report["dispatched"] = service.dispatch(min_age=0.0 if manual else settings.dispatch_interval_seconds)
        with service.session() as session:
            complete = db.unscored_complete(session, POINTS_PER_TASK)
        report["totals"] = [sid for sid in complete if service.finalize(sid) is not None]
        if not manual and (self.db_ok_since is None or time.monotonic() - self.db_ok_since < older_than):
            report["notes"].append("the database was unreachable lately: heartbeats are not judged yet")
            return report
        with service.session() as session:  # read before the points: a compile may end in between
            compiling = db.live_leases(session, "compile ")
        pending = self._pending(older_than)
        if not pending:
            return report
        if settings.embedded:
            report["points"] = self._grade_here([p for p in pending
                                                 if f"compile {p['submission_id']}" not in compiling])
            return report
        try:
            in_flight = self._in_flight()
        except BrokerUnavailable as exc:
            report["notes"].append(f"nothing re-queued: {exc}")
            return report
        report["points"] = self._requeue(pending, in_flight, compiling)
        return report

    def _pending(self, older_than: float) -> list[dict]:
        with self.service.session() as session:
            pending = db.pending_points(session, timedelta(seconds=older_than), POINTS_PER_TASK)
            running = db.running_points(session)
            compiled = {sid: db.compiled_points(session, sid)
                        for sid in {p["submission_id"] for p in pending + running}}
        keys = {(p["submission_id"], p["task"], p["point"]) for p in pending}
        orphaned = set()
        for row in running:
            if worker_gone(row["worker"]):
                orphaned.add(row["submission_id"])
                if (row["submission_id"], row["task"], row["point"]) not in keys:
                    pending.append({**{k: row[k] for k in ("submission_id", "task", "point", "attempts",
                                                           "started_at")}, "reason": "worker gone"})
        pending += self._unclaimed(orphaned, keys | {(p["submission_id"], p["task"], p["point"]) for p in pending})
        for p in pending:
            p["action"] = "judge" if (p["task"], p["point"]) in compiled[p["submission_id"]] else "compile"
        return sorted(pending, key=lambda p: (p["submission_id"], p["task"], p["point"]))

    def _unclaimed(self, submission_ids: set, known: set) -> list[dict]:
        """The points nobody claimed of submissions a gone process was grading (an interrupted embedded run
        claims its points one by one): missing now, not only after ``older_than``."""
        found = []
        for sid in sorted(submission_ids):
            with self.service.session() as session:
                generation = db.get_submission(session, sid)["generation"]
                claimed = {(r["task"], r["point"]) for r in db.list_results(session, sid)
                           if r["generation"] == generation}
            found += [{"submission_id": sid, "task": t, "point": p, "attempts": 0, "started_at": None,
                       "reason": "missing"} for t, count in sorted(POINTS_PER_TASK.items()) for p in range(count)
                      if (t, p) not in claimed and (sid, t, p) not in known]
        return found

    def _in_flight(self) -> set[tuple]:
        with self.service.session() as session:
            keys = db.outbox_keys(session)
        return keys | self.service.broker.waiting()

    def _requeue(self, pending: list[dict], in_flight: set[tuple], compiling: set[str]) -> list[dict]:
        chosen = []
        for p in pending:
            sid = p["submission_id"]
            if (f"compile {sid}" in compiling or ("compile", sid, None, None) in in_flight
                    or ("judge", sid, p["task"], p["point"]) in in_flight):
                continue
            chosen.append(p)
        if not chosen:
            return []
        with self.service.session() as session:
            keys = sorted({db.add_outbox(session, "compile", p["submission_id"]) if p["action"] == "compile"
                           else db.add_outbox(session, "judge", p["submission_id"], p["task"], p["point"])
                           for p in chosen})
        self.service.dispatch(keys)
        log.info("sweeper: re-queued %d test point(s)", len(chosen))
        return chosen

    def _grade_here(self, pending: list[dict]) -> list[dict]:
        by_submission: dict[int, list] = {}
        for p in pending:
            by_submission.setdefault(p["submission_id"], []).append((p["task"], p["point"]))
        for submission_id, keys in sorted(by_submission.items()):
            self.service.grade_embedded(submission_id, keys, take_over=True)
        return pending


class Background:
    """The dispatcher and (``sweep``) the automatic sweeper in a daemon thread; ``start()`` returns self,
    ``stop()`` ends the thread (waits for a sweep under way). Every error is logged, never raised: the
    loop outlives any outage."""

    def __init__(self, service, sweep: bool = True):
        self.service, self.sweep = service, sweep
        self.sweeper = Sweeper(service)
        self.holder = f"{worker_name()}:{id(self):x}"
        self.last_report: dict | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kdt-grade-background", daemon=True)

    def start(self) -> Background:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        settings = self.service.settings
        next_sweep = time.monotonic() + min(2.0, settings.sweep_interval_seconds)
        while not self._stop.wait(settings.dispatch_interval_seconds):
            try:
                if not settings.embedded:
                    self.service.dispatch(min_age=settings.dispatch_interval_seconds)
                if self.sweep and time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + settings.sweep_interval_seconds
                    self._sweep_once()
                if self.sweeper.db_ok_since is None:
                    self.sweeper.db_ok_since = time.monotonic()
            except Exception as exc:  # database or broker away, or a bug: logged, the loop goes on
                self.sweeper.db_ok_since = None if _database_error(exc) else self.sweeper.db_ok_since
                log.warning("background: %s: %s", type(exc).__name__, exc)

    def _sweep_once(self) -> None:
        settings = self.service.settings
        ttl = timedelta(seconds=max(60.0, 4 * settings.sweep_interval_seconds))
        with self.service.session() as session:
            if not db.acquire_lease(session, LEASE, self.holder, ttl):
                return
        try:
            self.last_report = self.sweeper.run(settings.heartbeat_stale_seconds)
        finally:
            with self.service.session() as session:
                db.release_lease(session, LEASE, self.holder)


def _database_error(exc: BaseException) -> bool:
    from sqlalchemy import exc as sa_exc

    return isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.DBAPIError))
