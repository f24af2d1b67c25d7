"""A submission's status, derived from its result rows and stored scores; never stored itself.

Only the rows of the submission's current generation count (a rejudge starts a new one, see
`db.rejudge`); scores are *current* when `scored_generation` is the current generation (NULL with stored
scores counts as current: rows written before generations existed). Rules, first match wins:

1. `running`: some current row is unfinished (claimed, `finished_at` NULL).
2. `failed`: the scores are current and some current point ended `IE`: the judge failed, not the
   contestant; an admin should look and rejudge.
3. `done`: the scores are current.
4. `running`: some current rows exist, but the totals are not stored yet.
5. `queued`: no current rows (a fresh submission, or a rejudge whose new grading has not started:
   the old totals stay on the leaderboard meanwhile).

`verdict_counts` tells how the finished points of the current generation ended, per submission (the
submissions lists' verdicts at a glance).

Public API: `SubmissionStatus`, `status_expression()`, `scores_current()`, `submission_status(session, id)`,
`verdict_counts(session, ids)`.
"""
from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from sqlalchemy import ColumnElement, and_, case, exists, func, select
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
    """EXISTS over the current submission's current-generation rows, correlated to `Submission.id`."""
    where = and_(TestPointResult.submission_id == Submission.id,
                 TestPointResult.generation == Submission.generation, *conditions)
    return exists().where(where)


def scores_current() -> ColumnElement[bool]:
    """SQL: the submission's stored scores belong to its current generation."""
    return and_(Submission.total.is_not(None),
                func.coalesce(Submission.scored_generation, Submission.generation) == Submission.generation)


def status_expression() -> ColumnElement[str]:
    """Return a SQL expression of the status of `Submission` rows, for use in a SELECT over them."""
    scored = scores_current()
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


def verdict_counts(session: Session, submission_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """How many finished test points of each submission's current generation ended with each verdict:
    ``{submission_id: {"AC": 8, "WA": 2}}`` (a submission with none finished is left out)."""
    ids = sorted(set(submission_ids))
    if not ids:
        return {}
    statement = (
        select(TestPointResult.submission_id, TestPointResult.verdict, func.count())
        .join(Submission, and_(Submission.id == TestPointResult.submission_id,
                               Submission.generation == TestPointResult.generation))
        .where(TestPointResult.submission_id.in_(ids), TestPointResult.finished_at.is_not(None))
        .group_by(TestPointResult.submission_id, TestPointResult.verdict)
    )
    counts: dict[int, dict[str, int]] = {}
    for submission_id, verdict, count in session.execute(statement):
        counts.setdefault(submission_id, {})[verdict] = count
    return counts
