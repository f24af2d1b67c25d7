"""Leaderboard queries: each user's best scored submission, and all submissions for the admin CSV.

Ranking: higher `total` first; equal totals go to the earlier submission, by `id`: the database assigns
ids in insert order, whereas `created` is stamped by the inserting process before the insert and two
intakes' clocks and commits may disagree.
The same rule picks a user's best submission among their own. Only scored submissions (`total`
not NULL) count, and only contestants': organisers (`users.is_admin`) are not on the leaderboard unless
asked for (`organisers=True`).

Public API: `leaderboard(session, created_before=None, organisers=False) -> list[dict]`,
`best_submissions(session, user_ids=None) -> dict[int, int]` (the submission that counts, per contestant),
`all_submissions(session, user_id=None) -> list[dict]`, `score_history(session, user_ids, created_before=None)
-> list[dict]` (the scored submissions the progress graphs step through).
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import false, func, select
from sqlalchemy.orm import Session

from db.status import status_expression
from db.submissions import Submission
from db.users import User

_SCORE_COLUMNS = (Submission.task1, Submission.task2, Submission.task3, Submission.task4, Submission.total)
# Best first; ties to the earlier submission.
_RANK_ORDER = (Submission.total.desc(), Submission.id.asc())


def _best_per_user(created_before: datetime | None = None, user_ids: Iterable[int] | None = None):
    """A subquery of each user's scored submissions (of `user_ids` only, None: all) ranked by `_RANK_ORDER`
    (`user_rank` 1: the one that counts)."""
    per_user_rank = func.row_number().over(partition_by=Submission.user_id, order_by=_RANK_ORDER)
    counted = Submission.total.is_not(None)
    if created_before is not None:
        counted = counted & (Submission.created < created_before)
    if user_ids is not None:
        counted = counted & Submission.user_id.in_(sorted(set(user_ids)))
    return select(Submission.id, per_user_rank.label("user_rank")).where(counted).subquery()


def best_submissions(session: Session, user_ids: Iterable[int] | None = None) -> dict[int, int]:
    """`{user_id: submission_id}`: the submission that counts on the leaderboard for each contestant (of
    `user_ids`, None: all), chosen exactly as `leaderboard` chooses it (no freeze: every submission counts).
    Organisers and users without a scored submission are left out."""
    ranked = _best_per_user(user_ids=user_ids)
    statement = (
        select(Submission.user_id, Submission.id)
        .join(ranked, ranked.c.id == Submission.id)
        .join(User, User.id == Submission.user_id)
        .where(ranked.c.user_rank == 1, User.is_admin == false())
    )
    return {user_id: submission_id for user_id, submission_id in session.execute(statement)}


def leaderboard(session: Session, created_before: datetime | None = None,
                organisers: bool = False) -> list[dict[str, Any]]:
    """Return one row per contestant who has a scored submission, best first (with `organisers`, the
    organisers' accounts too).

    Output: dicts `{"rank", "user_id", "user_name", "display_name", "submission_id", "created",
    "task1".."task4", "total"}`; `rank` counts from 1 and follows the ranking (tied totals get distinct
    ranks, the earlier submission first). With `created_before` (an aware datetime: the scoreboard
    freeze), only submissions created strictly before it count.
    """
    ranked = _best_per_user(created_before)
    statement = (
        select(
            User.id.label("user_id"),
            User.name.label("user_name"),
            User.display_name,
            Submission.id.label("submission_id"),
            Submission.created,
            *_SCORE_COLUMNS,
        )
        .join(ranked, ranked.c.id == Submission.id)
        .join(User, User.id == Submission.user_id)
        .where(ranked.c.user_rank == 1)
        .order_by(*_RANK_ORDER)
    )
    if not organisers:
        statement = statement.where(User.is_admin == false())
    rows = session.execute(statement).mappings()
    return [{"rank": rank, **row} for rank, row in enumerate(rows, start=1)]


def all_submissions(session: Session, user_id: int | None = None) -> list[dict[str, Any]]:
    """Return every submission of every user (or of user `user_id` only), oldest first, for the admin CSV
    export and a contestant's own list.

    Output: dicts `{"submission_id", "user_id", "user_name", "file_name", "sha256", "created",
    "status", "task1".."task4", "total"}` (scores None until stored; `status` derived, see
    `db.status`). The source text is not included.
    """
    statement = (
        select(
            Submission.id.label("submission_id"),
            User.id.label("user_id"),
            User.name.label("user_name"),
            Submission.file_name,
            Submission.sha256,
            Submission.created,
            status_expression().label("status"),
            *_SCORE_COLUMNS,
        )
        .join(User, User.id == Submission.user_id)
        .order_by(Submission.created.asc(), Submission.id.asc())
    )
    if user_id is not None:
        statement = statement.where(Submission.user_id == user_id)
    return [dict(row) for row in session.execute(statement).mappings()]


def score_history(session: Session, user_ids: Iterable[int],
                  created_before: datetime | None = None) -> list[dict[str, Any]]:
    """The scored submissions (`total` not NULL) of the users `user_ids`, in the order the leaderboard's
    tie rule reads them (`created`, then `id`): dicts `{"user_id", "submission_id", "created", "task1"..
    "task4", "total"}`. With `created_before` (the scoreboard freeze), only those created strictly before
    it, exactly as `leaderboard` counts them."""
    ids = sorted(set(user_ids))
    if not ids:
        return []
    counted = Submission.total.is_not(None) & Submission.user_id.in_(ids)
    if created_before is not None:
        counted = counted & (Submission.created < created_before)
    statement = (
        select(Submission.user_id, Submission.id.label("submission_id"), Submission.created, *_SCORE_COLUMNS)
        .where(counted)
        .order_by(Submission.created.asc(), Submission.id.asc())
    )
    return [dict(row) for row in session.execute(statement).mappings()]
