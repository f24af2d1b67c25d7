"""Rejudging: `start_rejudge` (what the service does) and `reset_submission` (a full reset).

`start_rejudge` begins a new *generation* of a submission in the caller's transaction: the generation
counter goes up, the compiled points go (the file is compiled again), and the result rows and stored
totals stay. Rows of an older generation are stale: the judge step regrades them, the status ignores
them (`db.status`), and the old totals stay on the leaderboard until the new generation's totals are
stored (`db.totals`), so a rejudge never makes a submission vanish, whatever happens to the broker.
The caller writes the `compile` outbox row in the same transaction (`db.outbox`).

`reset_submission` (a full reset instead of a new generation, for tools and tests) goes back to the state of
a freshly accepted file:

A reset deletes the submission's result rows and compiled points and clears its stored scores, in the
caller's transaction; the caller commits and only then enqueues the submission again. Its status
(derived, see `db.status`) reads `queued` afterwards, and it drops off the leaderboard until its new
totals are stored, so the leaderboard follows the rejudge.

Public API: `submission_ids(session, user_name=None) -> list[int]`, `start_rejudge(session, id) -> int`,
`reset_submission(session, id)`.
"""
from __future__ import annotations

from sqlalchemy import case, delete, func, select, update
from sqlalchemy.orm import Session

from db.compiled import delete_compiled
from db.results import TestPointResult
from db.submissions import SCORE_COLUMNS, Submission
from db.users import User


def submission_ids(session: Session, user_name: str | None = None) -> list[int]:
    """Return the ids of every submission, or of one user's (none if there is no such user), oldest first."""
    statement = select(Submission.id).order_by(Submission.id.asc())
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


def start_rejudge(session: Session, submission_id: int, fresh: bool = False) -> int:
    """Start a new generation of a submission (see the module docstring); return the new generation.
    With `fresh`, that generation simulates every point again (`Submission.fresh_generation`): no
    reused results, no reused compile.

    Raises `LookupError` if the submission does not exist. The caller commits.
    """
    new = session.execute(
        update(Submission)
        .where(Submission.id == submission_id)
        .values(
            generation=Submission.generation + 1,
            # Stored scores keep naming the generation they belong to.
            scored_generation=case((Submission.total.is_(None), None),
                                   else_=func.coalesce(Submission.scored_generation, Submission.generation)),
        )
        .returning(Submission.generation)
    ).scalar_one_or_none()
    if new is None:
        raise LookupError(f"no submission with id {submission_id}")
    if fresh:
        session.execute(update(Submission).where(Submission.id == submission_id).values(fresh_generation=new))
    delete_compiled(session, submission_id)
    return int(new)
