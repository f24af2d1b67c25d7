"""The contest's rules, kept in the database so that every server and worker process agrees (migration 0003).

One row (`id` = 1) of `contest_settings`: the name, the window (`starts_at`, `ends_at`), the scoreboard
freeze (the scheduled `freeze_at`, and `unfrozen` once an organiser has lifted it; `frozen_since`, the
start of a freeze an organiser began by hand, migration 0009, kept apart so the schedule survives it), and the per-user submission limits
(`min_interval_seconds`, `max_per_hour`, `max_pending`), and how many clarification requests a user may
make in any hour (`max_questions_per_hour`, migration 0008). NULL means "no limit"; with no row at all every
value is NULL, which is the behaviour of a service without a contest.

Also the per-user queries the limits need: `lock_user` (serialises one user's intakes), `recent_submissions`,
`last_submission` and `pending_count`. What the rules *mean* is `grader.service.contest`'s; this module only
stores and counts.

Public API: `ContestSettings`, `FIELDS`, `get_contest`, `update_contest`, `lock_user`, `recent_submissions`,
`last_submission`, `pending_count`.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, CheckConstraint, Float, Integer, String, false, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow
from db.dialects import dialect_name, upsert_insert
from db.status import SubmissionStatus, status_expression
from db.submissions import Submission
from db.users import User

NAME_MAX_LENGTH = 200
SETTINGS_ID = 1


class ContestSettings(Base):
    """The single row of contest rules; see the module docstring. Times are aware UTC."""

    __tablename__ = "contest_settings"
    __table_args__ = (
        CheckConstraint("id = 1", name="single_row"),
        CheckConstraint("min_interval_seconds >= 0", name="min_interval_nonnegative"),
        CheckConstraint("max_per_hour >= 1", name="max_per_hour_positive"),
        CheckConstraint("max_pending >= 1", name="max_pending_positive"),
        CheckConstraint("max_questions_per_hour >= 1", name="max_questions_per_hour_positive"),
        CheckConstraint("ends_at > starts_at", name="window_order"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str | None] = mapped_column(String(NAME_MAX_LENGTH))
    starts_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    freeze_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    unfrozen: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    frozen_since: Mapped[datetime | None] = mapped_column(UTCDateTime())
    min_interval_seconds: Mapped[float | None] = mapped_column(Float)
    max_per_hour: Mapped[int | None] = mapped_column(Integer)
    max_pending: Mapped[int | None] = mapped_column(Integer)
    max_questions_per_hour: Mapped[int | None] = mapped_column(Integer)
    updated: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


FIELDS = ("name", "starts_at", "ends_at", "freeze_at", "unfrozen", "frozen_since", "min_interval_seconds",
          "max_per_hour", "max_pending", "max_questions_per_hour")
_DEFAULTS: dict[str, Any] = {field: None for field in FIELDS} | {"unfrozen": False, "updated": None}
_TABLE = ContestSettings.__table__


def get_contest(session: Session) -> dict[str, Any]:
    """The contest rules as a dict with the keys of `FIELDS` plus `updated` (all None/False if never set)."""
    row = session.get(ContestSettings, SETTINGS_ID)
    if row is None:
        return dict(_DEFAULTS)
    return {field: getattr(row, field) for field in (*FIELDS, "updated")}


def update_contest(session: Session, **changes: Any) -> dict[str, Any]:
    """Set the given fields (keys of `FIELDS`; None clears a value), creating the row if needed; return
    the rules after the change. Raises `KeyError` for an unknown field; `sqlalchemy.exc.IntegrityError`
    when a check fails (e.g. the end not after the start)."""
    unknown = set(changes) - set(FIELDS)
    if unknown:
        raise KeyError(f"unknown contest fields {sorted(unknown)}; known: {FIELDS}")
    values = {**changes, "updated": utcnow()}
    insert = upsert_insert(session, _TABLE).values(id=SETTINGS_ID, **values)
    session.execute(insert.on_conflict_do_update(index_elements=["id"], set_=values))
    session.flush()
    session.expire_all()
    return get_contest(session)


def lock_user(session: Session, user_id: int) -> None:
    """Hold user `user_id`'s row until the transaction ends, so that one user's intakes (limit check, then
    insert) run one after the other. PostgreSQL: `SELECT ... FOR UPDATE`; SQLite: every transaction already
    holds the write lock (`BEGIN IMMEDIATE`, `db.session`)."""
    if dialect_name(session) == "postgresql":
        session.execute(select(User.id).where(User.id == user_id).with_for_update())


def recent_submissions(session: Session, user_id: int, since: datetime) -> list[datetime]:
    """The creation times of user `user_id`'s submissions at or after `since`, oldest first."""
    rows = session.scalars(select(Submission.created).where(Submission.user_id == user_id,
                                                             Submission.created >= since)
                           .order_by(Submission.created))
    return list(rows)


def last_submission(session: Session, user_id: int) -> datetime | None:
    """The creation time of user `user_id`'s newest submission, or None."""
    return session.scalar(select(func.max(Submission.created)).where(Submission.user_id == user_id))


def pending_count(session: Session, user_id: int) -> int:
    """How many of user `user_id`'s submissions are not graded yet (status queued or running)."""
    pending = (SubmissionStatus.QUEUED.value, SubmissionStatus.RUNNING.value)
    return int(session.scalar(select(func.count()).select_from(Submission)
                              .where(Submission.user_id == user_id, status_expression().in_(pending))) or 0)
