"""The standings as each audience may see them: the public leaderboard (frozen from the freeze in force,
``grader.service.contest.Rules.leaderboard_cutoff``), what the freeze hides of one contestant (for their
own eyes), and the organisers' board that ignores the freeze.

Public API: ``public_leaderboard``, ``hidden_submissions``, ``jury_leaderboard``.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

import db.contest as contest_db
from db.base import utcnow
from db.leaderboard import leaderboard as leaderboard_query

from .contest import Rules
from .database import Database
from .rows import iso, plain_rows


def public_leaderboard(database: Database, now: datetime | None = None) -> dict[str, Any]:
    """The public leaderboard: ``{"frozen": bool, "freeze_at": ISO or None (while frozen: the freeze in
    force; else the scheduled one), "rows": [...]}`` with the rows
    of ``db.leaderboard`` (times as ISO strings), counting only submissions before the freeze while frozen.
    Organisers' accounts are not on it (their submissions are tests of the judge, not entries)."""
    now = now or utcnow()
    with database.read_session() as session:
        rules = Rules.from_row(contest_db.get_contest(session))
        cutoff = rules.leaderboard_cutoff(now)
        rows = leaderboard_query(session, created_before=cutoff)
    return {"frozen": cutoff is not None, "freeze_at": iso(cutoff or rules.freeze_at), "rows": plain_rows(rows)}


def hidden_submissions(database: Database, user_id: int, now: datetime | None = None) -> dict[str, Any] | None:
    """While the public leaderboard is frozen, what it hides of user ``user_id``: ``{"count": how many of
    the user's submissions were made at or after the freeze in force, "since": that freeze's time (ISO)}``
    (count 0 when none); None when it is not frozen. For the user's own eyes only."""
    now = now or utcnow()
    with database.read_session() as session:
        cutoff = Rules.from_row(contest_db.get_contest(session)).leaderboard_cutoff(now)
        if cutoff is None:
            return None
        return {"count": len(contest_db.recent_submissions(session, user_id, cutoff)), "since": iso(cutoff)}


def jury_leaderboard(database: Database, now: datetime | None = None) -> dict[str, Any]:
    """The organisers' leaderboard, the freeze ignored (every submission counts, ``queries.leaderboard``'s
    ranking): ``{"frozen", "freeze_at"`` (the public board's), ``"rows"``: each with ``public_rank`` and
    ``public_total``, the same user's on the public board now (None: not on it)}``."""
    public = public_leaderboard(database, now)
    with database.read_session() as session:
        rows = plain_rows(leaderboard_query(session))
    shown = {row["user_id"]: row for row in public["rows"]}
    for row in rows:
        seen = shown.get(row["user_id"])
        row["public_rank"], row["public_total"] = (seen["rank"], seen["total"]) if seen else (None, None)
    return {"frozen": public["frozen"], "freeze_at": public["freeze_at"], "rows": rows}
