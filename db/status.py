"""A submission's status, derived from its result rows and stored scores; never stored itself.

Rules, first match wins:

1. `running`: some result row is unfinished (claimed, `finished_at` NULL); this includes a rejudge
   of an already scored submission.
2. `failed`: scores are stored (`total` not NULL) and some point ended `IE`: the judge failed, not
   the contestant; an admin should look and rejudge.
3. `done`: scores are stored.
4. `running`: some points have results, but the totals are not stored yet.
5. `queued`: no result rows at all.

Public API: `SubmissionStatus`, `status_expression()`, `submission_status(session, submission_id)`.
"""
from __future__ import annotations

from enum import StrEnum

from sqlalchemy import ColumnElement, and_, case, exists, select
from sqlalchemy.orm import Session

from db.results import TestPointResult
from db.submissions import Submission


class SubmissionStatus(StrEnum):
    """The derived status of a submission (a `str`, so it serialises as its value)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


def _has_result(*conditions: ColumnElement[bool]) -> ColumnElement[bool]:
    """EXISTS over the current submission's result rows, correlated to `Submission.id`."""
    where = and_(TestPointResult.submission_id == Submission.id, *conditions)
    return exists().where(where)


def status_expression() -> ColumnElement[str]:
    """Return a SQL expression of the status of `Submission` rows, for use in a SELECT over them."""
    scored = Submission.total.is_not(None)
    return case(
        (_has_result(TestPointResult.finished_at.is_(None)), SubmissionStatus.RUNNING.value),
        (and_(scored, _has_result(TestPointResult.verdict == "IE")), SubmissionStatus.FAILED.value),
        (scored, SubmissionStatus.DONE.value),
        (_has_result(), SubmissionStatus.RUNNING.value),
        else_=SubmissionStatus.QUEUED.value,
    )


def submission_status(session: Session, submission_id: int) -> SubmissionStatus:
    """Return the derived status of one submission.

    Raises `LookupError` if the submission does not exist.
    """
    value = session.scalars(select(status_expression()).where(Submission.id == submission_id)).one_or_none()
    if value is None:
        raise LookupError(f"no submission with id {submission_id}")
    return SubmissionStatus(value)
