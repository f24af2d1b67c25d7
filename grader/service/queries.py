"""What the service tells about submissions, as plain JSON-able data (times as ISO strings, ``rows``).

Every read is one snapshot (``Service.read_session``), so a status never says ``done`` without its
scores. ``status`` is the status document (``kdt-grade status --json``, ``GET /api/v1/submissions/ID``);
``grading_queue`` and ``recent_workers`` are what the organisers see of the graders; ``trace_records``
and ``trace_record`` are the stored traces the timeline pictures are drawn from.
"""
from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import db
from db.activity import recent_workers as workers_since, running_points
from db.base import utcnow
from grader.judging.pipeline import ALL_POINTS
from grader.judging.trace_record import decode
from grader.runtime.polling import poll_until_final
from judger.scoring import mxm_utilisation
from judger.tasks import POINTS_PER_TASK, TASKS, get_point, get_task

from .database import Database
from .rows import iso, plain, plain_rows
from .rules_text import cycles_needed

if TYPE_CHECKING:
    from .facade import Service

WORKERS_WINDOW = timedelta(hours=1)  # a worker is "seen" when it claimed or finished a point this recently


def status(service: Database, submission_id: int) -> dict:
    """Everything about one submission: the submission, its derived status, one entry per test point
    (``state`` queued / running / done, with the cycles it needs for 100 and for 10 more points:
``rules_text.cycles_needed``) and the stored totals, all read from one snapshot: the status
    and the scores always agree, even while the totals are being written."""
    with service.read_session() as session:
        sub = db.get_submission(session, submission_id)
        if sub is None:
            raise LookupError(f"no submission with id {submission_id}")
        user = db.get_user(session, sub["user_id"])
        state = db.submission_status(session, submission_id)
        rows = {(r["task"], r["point"]): r for r in db.list_results(session, submission_id)}
    current = {k: r for k, r in rows.items() if r["generation"] == sub["generation"]}
    return {
        "id": sub["id"], "user": user["name"], "file_name": sub["file_name"], "sha256": sub["sha256"],
        "created": iso(sub["created"]), "status": state.value,
        "points": [_point_entry(task, point, current.get((task, point))) for task, point in ALL_POINTS],
        "tasks": {task_id: {"name": t.name, "weight": t.weight, "score": sub[f"task{task_id}"]}
                  for task_id, t in TASKS.items()},
        "total": sub["total"],
        # True while a rejudge is under way: ``tasks`` and ``total`` are still the previous grading's.
        "rejudging": sub["generation"] > 0 and state.value in ("queued", "running") and sub["total"] is not None,
    }


def _point_entry(task: int, point: int, row: dict | None) -> dict:
    if row is None:
        state = "queued"
    else:
        state = "done" if row["finished_at"] is not None else "running"
    row = row or {}
    cycles = row.get("cycles")
    return {
        "task": task, "point": point, "state": state, "verdict": row.get("verdict"), "cycles": cycles,
        "score": row.get("score"), "utilisation": utilisation(task, point, cycles) if state == "done" else None,
        "message": row.get("message") or "", "attempts": row.get("attempts", 0), "worker": row.get("worker"),
        "started_at": iso(row.get("started_at")), "finished_at": iso(row.get("finished_at")),
        "wall_seconds": row.get("wall_seconds"), "reused": bool(row.get("reused")) and state == "done",
        **cycles_needed(task, point, row.get("verdict") if state == "done" else None, row.get("score")),
    }


def utilisation(task: int, point: int, cycles: int | None) -> float | None:
    """The MXM utilisation of a test point (tasks 2-4) from its cycles, with the judger's formula."""
    work = get_task(task).mxm_work(get_point(task, point))
    if not cycles or work is None:
        return None
    return mxm_utilisation(work, cycles, get_task(task).num_sms)


def submission_source(service: Database, submission_id: int) -> str:
    """The submitted file's text (``LookupError`` if there is no such submission)."""
    with service.read_session() as session:
        sub = db.get_submission(session, submission_id, include_source=True)
    if sub is None:
        raise LookupError(f"no submission with id {submission_id}")
    return sub["source"]


def wait(service: Service, submission_id: int, on_progress: Callable[[dict], None] | None = None,
         timeout: float | None = None, poll: float = 0.5) -> dict:
    """Poll ``status`` until the submission is ``done`` or ``failed``; ``on_progress(status)`` after
    each poll. Raises ``TimeoutError`` after ``timeout`` seconds."""
    return poll_until_final(lambda: service.status(submission_id), submission_id, on_progress, timeout, poll)


def leaderboard(service: Database) -> list[dict]:
    """Each contestant's best scored submission, best first (ties: the earlier submission); organisers'
    accounts are not on it."""
    with service.read_session() as session:
        return plain_rows(db.leaderboard(session))


def all_submissions(service: Database) -> list[dict]:
    """Every submission of every user, oldest first (admin CSV)."""
    with service.read_session() as session:
        return plain_rows(db.all_submissions(session))


def grading_queue(service: Database, now: datetime | None = None) -> dict:
    """The grading queue: ``{"queued": points nobody claimed yet, "running": [{"submission_id", "task",
    "point", "worker", "started_at", "attempts", "age_seconds", "stuck"}], "stuck_after": seconds}``. A
    running point is stuck once it has run longer than ``stuck_after_seconds`` (the manual sweep's age)."""
    now = now or utcnow()
    stuck_after = service.settings.stuck_after_seconds
    with service.read_session() as session:
        pending = db.pending_points(session, timedelta(0), POINTS_PER_TASK, now=now)
        running = running_points(session)
    rows = []
    for row in running:
        age = (now - row["started_at"]).total_seconds() if row["started_at"] else 0.0
        rows.append({**plain(row), "age_seconds": age, "stuck": age > stuck_after})
    return {"queued": sum(1 for p in pending if p["reason"] == "missing"), "running": rows,
            "stuck_after": stuck_after}


def recent_workers(service: Database, now: datetime | None = None, window: timedelta = WORKERS_WINDOW) -> list[dict]:
    """The workers that claimed or finished a test point in the last ``window``, most recently seen first:
    ``{"name", "last_seen", "age_seconds", "graded" (points finished), "running" (unfinished claims)}``,
    read from the result rows."""
    now = now or utcnow()
    with service.read_session() as session:
        workers = workers_since(session, now - window)
    return [{"name": w["worker"], "last_seen": iso(w["last_seen"]),
             "age_seconds": (now - w["last_seen"]).total_seconds(), "graded": w["graded"], "running": w["running"]}
            for w in workers]


def trace_records(service: Database, submission_id: int) -> dict[tuple[int, int], dict]:
    """The decoded trace records (``grader.judging.trace_record``) of a submission's graded points, keyed
    by (task, point)."""
    with service.read_session() as session:
        blobs = db.get_traces(session, submission_id)
    return {key: decode(blob) for key, blob in blobs.items()}


def trace_record(service: Database, submission_id: int, task: int, point: int) -> dict | None:
    """The decoded trace record of one graded point, or None if none is stored (``TraceFormatError`` for
    a corrupt row)."""
    with service.read_session() as session:
        blob = db.get_trace(session, submission_id, task, point)
    return None if blob is None else decode(blob)
