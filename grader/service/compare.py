"""Two submissions side by side: per test point the verdicts, cycles and scores of both with the change,
per task and in total: what a contestant iterating on one task wants after every submission.

``compare(a, b)`` works on two status documents (``queries.status``) and needs no database; the change is
always "from A to B": ``delta = B - A`` and ``ratio = B / A``. ``comparison`` reads both from the
database (``kdt-grade diff`` without a server), ``comparison_for`` applies ``visibility`` (a contestant's
own submissions only, anyone else's answers 404 exactly as a missing one; organisers any). ``others``
lists what a submission's page offers to compare it with (its author's other submissions) and the default,
the one just before it.

A point's ``change`` is ``better`` or ``worse`` by its score, and when the score is equal (both 100) and
both are ``AC`` by its cycles (fewer is better); ``same`` otherwise, ``pending`` until both are graded. Scores differing
by less than ``EPSILON`` (the stored means' rounding) count as equal.

Public API: ``compare``, ``comparison``, ``comparison_for``, ``others``, ``CHANGES``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import db
from grader.refusals import NotFound

from . import queries, visibility
from .database import Database
from .rows import plain_rows

if TYPE_CHECKING:
    from .accounts import Account

EPSILON = 0.005  # scores are shown with two decimals: a smaller difference is no change
CHANGES = ("better", "worse", "same", "pending")


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The comparison of status documents ``a`` and ``b`` (module docstring): ``{"a", "b"`` (id, user,
    file name, sha256, created, status, total of each), ``"same_file"``, ``"points"``: one entry per test
    point ``{"task", "point", "verdict_a", "verdict_b", "verdict_changed", "cycles_a", "cycles_b",
    "cycles_delta", "cycles_ratio", "score_a", "score_b", "score_delta", "reused_a", "reused_b",
    "change"}``, ``"tasks"``: ``[{"task", "name", "weight", "score_a", "score_b", "delta"}]``,
    ``"total_a"``, ``"total_b"``, ``"total_delta"``, ``"counts"``: how many points of each ``CHANGES``}``.
    A value not known yet (a point still queued, a total not stored) is None, and so is its delta."""
    points_b = {(p["task"], p["point"]): p for p in b["points"]}
    points = [_point(p, points_b[(p["task"], p["point"])]) for p in a["points"] if (p["task"], p["point"]) in points_b]
    tasks = [{"task": int(task), "name": info["name"], "weight": info["weight"], "score_a": info["score"],
              "score_b": b["tasks"][task]["score"], "delta": _delta(info["score"], b["tasks"][task]["score"])}
             for task, info in a["tasks"].items() if task in b["tasks"]]
    return {"a": _side(a), "b": _side(b), "same_file": a["sha256"] == b["sha256"], "points": points, "tasks": tasks,
            "total_a": a["total"], "total_b": b["total"], "total_delta": _delta(a["total"], b["total"]),
            "counts": {change: sum(1 for p in points if p["change"] == change) for change in CHANGES}}


def comparison(database: Database, a: int, b: int) -> dict[str, Any]:
    """``compare`` of submissions ``a`` and ``b`` of the database, whoever made them (``LookupError``
    naming the missing one)."""
    return compare(queries.status(database, a), queries.status(database, b))


def comparison_for(database: Database, account: Account, a: int, b: int) -> dict[str, Any]:
    """``compare`` of submissions ``a`` and ``b`` as ``account`` may see them: ``NotFound`` (404) for
    one that is missing or, for a contestant, not their own (``visibility.status_for``)."""
    return compare(visibility.status_for(database, account, a), visibility.status_for(database, account, b))


def others(database: Database, account: Account, submission_id: int) -> dict[str, Any]:
    """What submission ``submission_id``'s page offers to compare it with: ``{"rows"``: its author's
    other submissions, newest first (``db.all_submissions`` rows, times as ISO), ``"default"``: the id of
    the one made just before it (else the newest other; None when there is none)}``. ``NotFound`` when
    ``account`` may not see the submission."""
    with database.read_session() as session:
        sub = db.get_submission(session, submission_id)
        if sub is None or (sub["user_id"] != account.id and not account.is_admin):
            raise NotFound(f"no submission {submission_id} of yours")
        rows = plain_rows(db.all_submissions(session, user_id=sub["user_id"]))
    rows = [r for r in reversed(rows) if r["submission_id"] != submission_id]
    before = [r["submission_id"] for r in rows if r["submission_id"] < submission_id]
    default = max(before) if before else (rows[0]["submission_id"] if rows else None)
    return {"rows": rows, "default": default}


def _side(state: dict[str, Any]) -> dict[str, Any]:
    return {key: state[key] for key in ("id", "user", "file_name", "sha256", "created", "status", "total")}


def _delta(a: float | int | None, b: float | int | None) -> float | int | None:
    """``b - a`` (scores rounded to 10 decimals against float noise), None when either is unknown."""
    if a is None or b is None:
        return None
    return b - a if isinstance(a, int) and isinstance(b, int) else round(b - a, 10)


def _point(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    done = a["state"] == "done" and b["state"] == "done"
    cycles_a, cycles_b = (a["cycles"], b["cycles"]) if done else (None, None)
    score_a, score_b = (a["score"], b["score"]) if done else (None, None)
    return {"task": a["task"], "point": a["point"], "verdict_a": a["verdict"] if a["state"] == "done" else None,
            "verdict_b": b["verdict"] if b["state"] == "done" else None,
            "verdict_changed": done and a["verdict"] != b["verdict"],
            "cycles_a": a["cycles"], "cycles_b": b["cycles"], "cycles_delta": _delta(cycles_a, cycles_b),
            "cycles_ratio": round(cycles_b / cycles_a, 4) if cycles_a and cycles_b else None,
            "score_a": a["score"], "score_b": b["score"], "score_delta": _delta(score_a, score_b),
            "reused_a": bool(a.get("reused")), "reused_b": bool(b.get("reused")),
            "change": _change(done, _delta(score_a, score_b),
                              _delta(cycles_a, cycles_b) if a["verdict"] == b["verdict"] == "AC" else None)}


def _change(done: bool, score_delta: float | None, cycles_delta: int | None) -> str:
    if not done:
        return "pending"
    if score_delta is not None and abs(score_delta) >= EPSILON:
        return "better" if score_delta > 0 else "worse"
    if cycles_delta:
        return "better" if cycles_delta < 0 else "worse"
    return "same"
