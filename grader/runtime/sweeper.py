"""The sweeper: grading heals itself after any outage.

``Sweeper(host).run(older_than)`` does, in order:

1. flush: send the outbox rows still unsent (broker mode);
2. totals: store the totals of submissions whose every point is final but whose totals are missing
   (the connection dropped between the last point and the totals);
3. re-queue, through the host's scheduler (outbox rows then sent in broker mode, graded here in
   embedded mode):
   - ``stuck``: a claimed point whose heartbeat is older than ``older_than`` (its worker died), or
     ``worker gone``: claimed by a process of this host that no longer exists (at once, together with
     the points of that submission nobody claimed yet);
   - ``missing``: an unscored submission older than ``older_than`` with a point nobody claimed;
   only when nothing for it is in flight (a compile under way: its lease ``compile N`` is live; in broker
   mode also an outbox row or a message waiting in the queue). A submission without compiled points
   gets ``compile``, the others ``judge`` per point.
   Re-queueing twice is harmless: a judge task skips a point that is done or beating elsewhere.

The host is the process's ``grader.service.Service`` (anything with ``settings``, ``session()``,
``finalize(id)`` and a ``scheduler``); the sweeper imports nothing of the service layer.
``grader.runtime.background`` runs it every ``KDT_GRADE_SWEEP_INTERVAL_SECONDS``.
"""
from __future__ import annotations

import logging
import time
from datetime import timedelta

import db
from judger.tasks import POINTS_PER_TASK

from .broker import BrokerUnavailable
from .processes import worker_gone

log = logging.getLogger(__name__)


class Sweeper:
    """One sweep over a host (see the module docstring); ``db_ok_since`` (monotonic seconds, or None) is
    when this process last regained the database (``grader.runtime.background.Background`` keeps it)."""

    def __init__(self, host):
        self.host = host
        self.db_ok_since: float | None = None

    def run(self, older_than: float, manual: bool = False) -> dict:
        """One sweep; returns ``{"dispatched": n, "totals": [ids], "points": [re-queued points with
        "reason" and "action"], "notes": [str]}``. ``manual`` (``admin sweep``) sends every outbox row
        and does not wait after a database outage."""
        host, settings = self.host, self.host.settings
        report = {"dispatched": 0, "totals": [], "points": [], "notes": []}
        report["dispatched"] = host.scheduler.flush(min_age=0.0 if manual else settings.dispatch_interval_seconds)
        with host.session() as session:
            complete = db.unscored_complete(session, POINTS_PER_TASK)
        report["totals"] = [sid for sid in complete if host.finalize(sid) is not None]
        if not manual and (self.db_ok_since is None or time.monotonic() - self.db_ok_since < older_than):
            report["notes"].append("the database was unreachable lately: heartbeats are not judged yet")
            return report
        with host.session() as session:  # read before the points: a compile may end in between
            compiling = db.live_leases(session, "compile ")
        pending = self._pending(older_than)
        if not pending:
            return report
        try:
            in_flight = host.scheduler.in_flight()
        except BrokerUnavailable as exc:
            report["notes"].append(f"nothing re-queued: {exc}")
            return report
        chosen = [p for p in pending if not _under_way(p, in_flight, compiling)]
        report["points"] = host.scheduler.requeue(chosen) if chosen else []
        return report

    def _pending(self, older_than: float) -> list[dict]:
        """The points to grade again (module docstring, 3.), each with its ``reason`` and ``action``."""
        with self.host.session() as session:
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
            with self.host.session() as session:
                generation = db.get_submission(session, sid)["generation"]
                claimed = {(r["task"], r["point"]) for r in db.list_results(session, sid)
                           if r["generation"] == generation}
            found += [{"submission_id": sid, "task": t, "point": p, "attempts": 0, "started_at": None,
                       "reason": "missing"} for t, count in sorted(POINTS_PER_TASK.items()) for p in range(count)
                      if (t, p) not in claimed and (sid, t, p) not in known]
        return found


def _under_way(point: dict, in_flight: set[tuple], compiling: set[str]) -> bool:
    """Whether something already takes care of ``point``: its submission's compile, or a message for it."""
    sid = point["submission_id"]
    return (f"compile {sid}" in compiling or ("compile", sid, None, None) in in_flight
            or ("judge", sid, point["task"], point["point"]) in in_flight)
