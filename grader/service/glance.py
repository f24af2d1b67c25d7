"""The submissions lists at a glance (the contestant's "My submissions", the organisers' list): each row's
test point verdicts counted, how many points are still to be judged, and whether it is the submission
that counts on the leaderboard for its user (``db.best_submissions``: the user's best whole submission,
chosen as ``db.leaderboard`` chooses it, with every submission counted as after the freeze is lifted).

Public API: ``at_a_glance(database, rows)``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import db
from grader.judging.pipeline import ALL_POINTS
from judger.verdicts import VERDICTS

from .database import Database


def at_a_glance(database: Database, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (submission rows with ``submission_id`` and ``user_id``: ``visibility.submissions_for``,
    ``search.search``) each with ``verdicts`` (``{verdict: count}`` of its finished points, in
    ``VERDICTS`` order), ``pending`` (points not judged yet) and ``counts`` (True: the submission the
    leaderboard counts for its user; organisers' never count), read from one snapshot."""
    rows = list(rows)
    with database.read_session() as session:
        counts = db.verdict_counts(session, (r["submission_id"] for r in rows))
        best = db.best_submissions(session, {r["user_id"] for r in rows})
    out = []
    for row in rows:
        found = counts.get(row["submission_id"], {})
        verdicts = {v: found[v] for v in VERDICTS if found.get(v)}
        out.append({**row, "verdicts": verdicts, "pending": len(ALL_POINTS) - sum(verdicts.values()),
                    "counts": best.get(row["user_id"]) == row["submission_id"]})
    return out
