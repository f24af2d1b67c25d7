"""Resetting submissions for a rejudge: back to the state of a freshly accepted file.

A reset deletes the submission's result rows and compiled points and clears its stored scores, in the
caller's transaction; the caller commits and only then enqueues the submission again. Its status
(derived, see `db.status`) reads `queued` afterwards, and it drops off the leaderboard until its new
totals are stored, so the leaderboard follows the rejudge.

Public API: `submission_ids(session, user_name=None) -> list[int]`, `reset_submission(session, id)`.
"""
from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from db.compiled import delete_compiled
from db.results import TestPointResult
from db.submissions import SCORE_COLUMNS, Submission
from db.users import User


def submission_ids(session: Session, user_name: str | None = None) -> list[int]:
    """Return the ids of every submission, or of one user's (none if there is no such user), oldest first."""
    statement = select(Submission.id).order_by(Submission.created.asc(), Submission.id.asc())
    if user_name is not None:
        statement = statement.join(User, User.id == Submission.user_id).where(User.name == user_name)
    return list(session.scalars(statement))


def reset_submission(session: Session, submission_id: int) -> None:
    """Delete a submission's results and compiled points and clear its scores (the caller commits).

    Raises `LookupError` if the submission does not exist.
    """
    cleared = session.execute(
        update(Submission)
        .where(Submission.id == submission_id)
        .values({column: None for column in SCORE_COLUMNS})
    ).rowcount
    if not cleared:
        raise LookupError(f"no submission with id {submission_id}")
    session.execute(delete(TestPointResult).where(TestPointResult.submission_id == submission_id))
    delete_compiled(session, submission_id)
