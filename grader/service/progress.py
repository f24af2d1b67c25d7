"""The series the plots draw (the pages' SVGs, the JSON API and the CSV downloads), as plain data: times as
ISO 8601 strings, scores in points (0..100, a task's at most its weight), cycles as integers.

- ``submission_cycles(state)``: every test point of a status document (``queries.status``, through
  ``visibility.status_for``: the caller's own) with its cycles, its threshold and the cycles for 10 more
  points;
- ``own_progress(database, account)``: the caller's scored submissions over time, per task and in total,
  with the best total so far (a contestant sees their own results in full, frozen or not);
- ``scoreboard_progress(database, now)``: the public top ``TOP``'s best total over contest time (as
  DOMjudge's and Codeforces' progress graphs), read exactly as ``standings.public_leaderboard`` reads the
  board: while frozen only the submissions made before the freeze in force count, and the graph ends there;
- ``grading_activity(database, now)``: the organisers' last hour in whole minutes: the test points in the
  queue (queued or running) at each minute's end, the points graded in it and their verdicts.

The best-so-far steps follow the leaderboard's rule (``db.leaderboard``): a higher total replaces the best, an
equal one later does not. Each series has its CSV (``*_csv``, ``grader.csv_format``).

Public API: the functions above, their ``*_csv`` and the ``*_COLUMNS``, ``best_steps``, ``activity_minutes``,
``TOP``, ``WINDOW``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import db.contest as contest_db
from db.activity import finished_since, queue_history
from db.base import utcnow
from db.leaderboard import leaderboard as leaderboard_query, score_history
from grader.csv_format import PROGRESS_COLUMNS, csv_text, progress_csv
from grader.judging.pipeline import ALL_POINTS
from judger.tasks import TASKS
from judger.verdicts import VERDICTS

from .contest import Rules
from .database import Database
from .rows import iso

if TYPE_CHECKING:
    from .accounts import Account

TOP = 10                        # users on the scoreboard's progress graph
WINDOW = timedelta(hours=1)     # the admin page's graphs
MINUTE = timedelta(minutes=1)
_TASK_KEYS = [f"task{t}" for t in TASKS]

CYCLES_COLUMNS = ["task", "point", "state", "verdict", "cycles", "score", "cycles_for_100", "cycles_for_plus_10"]
OWN_COLUMNS = ["submission_id", "created", *_TASK_KEYS, "total", "best"]
SCOREBOARD_COLUMNS = PROGRESS_COLUMNS
ACTIVITY_COLUMNS = ["start", "end", "queue", "graded", *VERDICTS]


def submission_cycles(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The test points of status document ``state``, in its order: ``{"task", "point", "state", "verdict",
    "cycles", "score", "cycles_for_100" (the threshold), "cycles_for_plus_10"}`` (None where the status
    document has none: a point not judged, not AC, or at 100 already)."""
    return [{key: p[key] for key in CYCLES_COLUMNS} for p in state["points"]]


def submission_cycles_csv(state: Mapping[str, Any]) -> str:
    """``submission_cycles`` as CSV in ``CYCLES_COLUMNS``."""
    return csv_text(submission_cycles(state), CYCLES_COLUMNS)


def best_steps(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The submissions of ``rows`` (one user's scored submissions in the leaderboard's order: ``created``,
    then id) at which the best total rises: ``{"at": created (ISO), "submission_id", "total"}``; the first
    scored submission always starts it. The last step's total is the user's leaderboard total."""
    steps: list[dict[str, Any]] = []
    for row in rows:
        if not steps or row["total"] > steps[-1]["total"]:
            steps.append({"at": iso(row["created"]), "submission_id": row["submission_id"], "total": row["total"]})
    return steps


def own_progress(database: Database, account: Account) -> dict[str, Any]:
    """The caller's scored submissions, oldest first: ``{"user", "submissions": [{"submission_id", "created"
    (ISO), "task1".."task4", "total", "best" (the best total up to and including this one)}]}``. Only their
    own, whatever the freeze (their own results are theirs to see); unscored submissions are left out."""
    with database.read_session() as session:
        rows = score_history(session, [account.id])
    out, best = [], None
    for row in rows:
        best = row["total"] if best is None else max(best, row["total"])
        out.append({"submission_id": row["submission_id"], "created": iso(row["created"]),
                    **{key: row[key] for key in _TASK_KEYS}, "total": row["total"], "best": best})
    return {"user": account.name, "submissions": out}


def own_progress_csv(progress: Mapping[str, Any]) -> str:
    """``own_progress``'s submissions as CSV in ``OWN_COLUMNS``."""
    return csv_text(progress["submissions"], OWN_COLUMNS)


def scoreboard_progress(database: Database, now: datetime | None = None, top: int = TOP) -> dict[str, Any]:
    """The public board's first ``top`` users and how their best total rose: ``{"frozen", "freeze_at"`` (as
    ``standings.public_leaderboard``), ``"start"``, ``"end"`` (ISO: the graph's time axis: from the contest's
    start, else the first step; to the freeze in force while frozen, else now, or the contest's end once
    past), ``"users": [{"rank", "user_name", "display_name", "total", "steps": best_steps}]}`` in rank
    order. One snapshot; exactly the submissions the public board counts (organisers are not on it)."""
    now = now or utcnow()
    with database.read_session() as session:
        rules = Rules.from_row(contest_db.get_contest(session))
        cutoff = rules.leaderboard_cutoff(now)
        board = leaderboard_query(session, created_before=cutoff)[:top]
        history = score_history(session, [r["user_id"] for r in board], created_before=cutoff)
    users = []
    for row in board:
        steps = best_steps(h for h in history if h["user_id"] == row["user_id"])
        users.append({"rank": row["rank"], "user_name": row["user_name"], "display_name": row["display_name"],
                      "total": row["total"], "steps": steps})
    end = cutoff or (min(now, rules.ends_at) if rules.ends_at else now)
    firsts = [h["created"] for h in history]
    start = rules.starts_at or (min(firsts) if firsts else end)
    end = max([end, *firsts])  # never before a step (a contest end moved back)
    return {"frozen": cutoff is not None, "freeze_at": iso(cutoff or rules.freeze_at), "start": iso(min(start, end)),
            "end": iso(end), "users": users}


def scoreboard_progress_csv(progress: Mapping[str, Any]) -> str:
    """``scoreboard_progress`` as CSV in ``SCOREBOARD_COLUMNS``: one line per step, users in rank order
    (``grader.csv_format.progress_csv``, also the CLI's)."""
    return progress_csv(progress)


def activity_minutes(history: list[Mapping[str, Any]], finished: list[Mapping[str, Any]], since: datetime,
                     minutes: int, points: int = len(ALL_POINTS), now: datetime | None = None) -> list[dict]:
    """``minutes`` one-minute spans from ``since``: ``{"start", "end" (ISO), "queue", "graded", "verdicts":
    {verdict: count, every one of VERDICTS}}``. ``graded``: the points of ``finished`` (``db.activity.
    finished_since`` rows) finished in [start, end). ``queue``: the points to grade at ``end``, from
    ``history`` (``db.activity.queue_history``): each submission's ``points`` less those finished by then
    (a scored one's: its rows not finished by then; it has no other point to wait for), counted from its
    creation (a rejudged one's, generation above 0: from its first claim since, else from ``now``, when it is
    known to wait)."""
    now = now or since + minutes * MINUTE
    waits = []
    for sub in history:
        rows = sub["rows"]
        begin = sub["created"] if sub["generation"] == 0 else min(
            (r["started_at"] for r in rows if r["started_at"] is not None), default=now)
        expected = len(rows) if sub.get("scored") else points
        waits.append((begin, expected, [r["finished_at"] for r in rows if r["finished_at"] is not None]))
    out = []
    for k in range(minutes):
        start, end = since + k * MINUTE, since + (k + 1) * MINUTE
        queue = sum(max(0, expected - sum(1 for f in done if f <= end))
                    for begin, expected, done in waits if begin <= end)
        verdicts = dict.fromkeys(VERDICTS, 0)
        for row in finished:
            if start <= row["finished_at"] < end and row["verdict"] in verdicts:
                verdicts[row["verdict"]] += 1
        out.append({"start": iso(start), "end": iso(end), "queue": queue, "graded": sum(verdicts.values()),
                    "verdicts": verdicts})
    return out


def grading_activity(database: Database, now: datetime | None = None, window: timedelta = WINDOW) -> dict[str, Any]:
    """The last ``window`` in whole UTC minutes, the current one (so far) last: ``{"start", "end" (ISO: the
    first minute's start, the current minute's end), "minutes": activity_minutes, "graded": points graded in
    all, "verdicts": {verdict: count}}``. The same minutes however often it is asked within a minute. For the
    organisers only (the routes check it)."""
    now = now or utcnow()
    count = max(1, int(window / MINUTE))
    end = now.replace(second=0, microsecond=0) + MINUTE
    since = end - count * MINUTE
    with database.read_session() as session:
        history = queue_history(session, since)
        finished = finished_since(session, since)
    minutes = activity_minutes(history, finished, since, count, now=now)
    totals = {v: sum(m["verdicts"][v] for m in minutes) for v in VERDICTS}
    return {"start": iso(since), "end": iso(end), "minutes": minutes, "graded": sum(totals.values()),
            "verdicts": totals}


def grading_activity_csv(activity: Mapping[str, Any]) -> str:
    """``grading_activity``'s minutes as CSV in ``ACTIVITY_COLUMNS`` (one count column per verdict)."""
    return csv_text(({**m, **m["verdicts"]} for m in activity["minutes"]), ACTIVITY_COLUMNS)
