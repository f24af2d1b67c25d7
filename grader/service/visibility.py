"""What a caller may see of submissions: their own in full, nobody else's (architecture.md, "Over the network").

Another user's submission answers exactly as a missing one does (``NotFound``, 404), so ids reveal nothing.
Organisers (admin accounts) see every submission, and also which worker graded each test point; the
contestant's view of the status document leaves the worker (a host name of the judge) out.

Public API: ``status_for``, ``source_for``, ``submissions_for``. Used by the JSON API and the pages alike.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import db
from grader.refusals import NotFound

from . import queries
from .database import Database
from .rows import plain_rows

if TYPE_CHECKING:
    from .accounts import Account


def _missing(submission_id: int) -> NotFound:
    return NotFound(f"no submission {submission_id} of yours")


def status_for(database: Database, account: Account, submission_id: int) -> dict[str, Any]:
    """``Service.status`` of a submission the caller may see (``NotFound`` otherwise); for a contestant
    without the ``worker`` of each test point."""
    try:
        state = queries.status(database, submission_id)
    except LookupError:
        raise _missing(submission_id) from None
    if account.is_admin:
        return state
    if state["user"] != account.name:
        raise _missing(submission_id)
    return {**state, "points": [{**p, "worker": None} for p in state["points"]]}


def source_for(database: Database, account: Account, submission_id: int) -> tuple[str, str]:
    """``(file name, source text)`` of a submission the caller may see (``NotFound`` otherwise)."""
    with database.read_session() as session:
        row = db.get_submission(session, submission_id, include_source=True)
    if row is None or (row["user_id"] != account.id and not account.is_admin):
        raise _missing(submission_id)
    return row["file_name"], row["source"]


def submissions_for(database: Database, account: Account) -> list[dict[str, Any]]:
    """The caller's own submissions, oldest first (``db.all_submissions`` rows, times as ISO strings)."""
    with database.read_session() as session:
        rows = db.all_submissions(session, user_id=account.id)
    return plain_rows(rows)
