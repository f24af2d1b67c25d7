"""The organisers' search over submissions: filtered, newest first, one page at a time.

A `SubmissionFilter` narrows every submission by its user's login name, a test point verdict (some point
of the submission's *current* generation ended with it; with `task`, a point of that task), a task alone
(a stored score above 0 on it: the submission solves some of it) and a creation time range (`since`
inclusive, `until` exclusive); `up_to_id` keeps only ids up to it (the set an organiser confirmed, without
what came in since). The values are checked by the caller (`grader.service.search`); here they are only
bound as parameters.

Public API: `SubmissionFilter`, `search_submissions(session, filter, offset, limit) -> list[dict]`,
`count_submissions(session, filter) -> int`, `matching_ids(session, filter) -> list[int]`.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, select
from sqlalchemy.orm import Session

from db.results import TestPointResult
from db.status import status_expression
from db.submissions import SCORE_COLUMNS, Submission
from db.users import User


@dataclass(frozen=True)
class SubmissionFilter:
    """What to keep (None: no condition); see the module docstring."""

    user_name: str | None = None
    verdict: str | None = None
    task: int | None = None
    since: datetime | None = None
    until: datetime | None = None
    up_to_id: int | None = None


def _conditions(chosen: SubmissionFilter) -> list[ColumnElement[bool]]:
    """The WHERE conditions of a filter, over `Submission` joined with its `User`."""
    conditions: list[ColumnElement[bool]] = []
    if chosen.user_name is not None:
        conditions.append(User.name == chosen.user_name)
    if chosen.verdict is not None:
        point = and_(TestPointResult.submission_id == Submission.id,
                     TestPointResult.generation == Submission.generation,
                     TestPointResult.finished_at.is_not(None), TestPointResult.verdict == chosen.verdict)
        if chosen.task is not None:
            point = and_(point, TestPointResult.task == chosen.task)
        conditions.append(exists().where(point))
    elif chosen.task is not None:
        conditions.append(getattr(Submission, f"task{chosen.task}") > 0)
    if chosen.since is not None:
        conditions.append(Submission.created >= chosen.since)
    if chosen.until is not None:
        conditions.append(Submission.created < chosen.until)
    if chosen.up_to_id is not None:
        conditions.append(Submission.id <= chosen.up_to_id)
    return conditions


def search_submissions(session: Session, chosen: SubmissionFilter, offset: int = 0,
                       limit: int | None = None, newest_first: bool = True) -> list[dict[str, Any]]:
    """The submissions `chosen` keeps, newest first (by id; `newest_first=False`: oldest first), from the
    `offset`-th on, at most `limit` of them (None: all).

    Output: dicts `{"submission_id", "user_id", "user_name", "display_name", "file_name", "sha256",
    "created", "status", "task1".."task4", "total"}` (the source is not included)."""
    order = Submission.id.desc() if newest_first else Submission.id.asc()
    statement = (
        select(Submission.id.label("submission_id"), User.id.label("user_id"), User.name.label("user_name"),
               User.display_name, Submission.file_name, Submission.sha256, Submission.created,
               status_expression().label("status"), *(getattr(Submission, c) for c in SCORE_COLUMNS))
        .join(User, User.id == Submission.user_id)
        .where(*_conditions(chosen))
        .order_by(order).offset(offset).limit(limit)
    )
    return [dict(row) for row in session.execute(statement).mappings()]


def count_submissions(session: Session, chosen: SubmissionFilter) -> int:
    """How many submissions `chosen` keeps."""
    statement = (select(func.count()).select_from(Submission).join(User, User.id == Submission.user_id)
                 .where(*_conditions(chosen)))
    return int(session.scalar(statement) or 0)


def matching_ids(session: Session, chosen: SubmissionFilter) -> list[int]:
    """The ids of the submissions `chosen` keeps, oldest first."""
    statement = (select(Submission.id).join(User, User.id == Submission.user_id).where(*_conditions(chosen))
                 .order_by(Submission.id.asc()))
    return list(session.scalars(statement))
