"""Rejudges of a set of submissions that organisers asked for on the admin page, with each submission's
total *before* the rejudge (migration 0010), so the page can compare it with the total after.

`rejudge_batches`: one row per request (when, by whom, the filter in words); `rejudge_batch_items`: one row
per submission of it, with the stored total at the time of the request (NULL: none yet). The totals after
are the submissions' own (`submissions.total`), read when shown.

Public API: `RejudgeBatch`, `RejudgeBatchItem`, `DESCRIPTION_MAX_LENGTH`, `create_batch(session, ...) ->
int`, `get_batch(session, id) -> dict | None`, `batch_items(session, id) -> list[dict]`.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Integer, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow
from db.status import status_expression
from db.submissions import Submission
from db.users import User

DESCRIPTION_MAX_LENGTH = 500


class RejudgeBatch(Base):
    """One organiser's rejudge of a set of submissions."""

    __tablename__ = "rejudge_batches"

    id: Mapped[int] = mapped_column(primary_key=True)
    created: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    requested_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    description: Mapped[str] = mapped_column(String(DESCRIPTION_MAX_LENGTH))


class RejudgeBatchItem(Base):
    """A submission of a batch and its total when the rejudge was requested."""

    __tablename__ = "rejudge_batch_items"

    batch_id: Mapped[int] = mapped_column(ForeignKey("rejudge_batches.id", ondelete="CASCADE"), primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    total_before: Mapped[float | None] = mapped_column(Float)


def create_batch(session: Session, requested_by: int | None, description: str, submission_ids: Iterable[int],
                 created: datetime | None = None) -> int:
    """Record a batch of the given submissions with their stored totals as they are now, in the caller's
    transaction (before the rejudge starts, in the same one); return its id. The caller checks the
    description's length."""
    batch = RejudgeBatch(requested_by=requested_by, description=description, created=created or utcnow())
    session.add(batch)
    session.flush()
    ids = sorted(set(submission_ids))
    totals = dict(session.execute(select(Submission.id, Submission.total).where(Submission.id.in_(ids))).all()) \
        if ids else {}
    session.add_all(RejudgeBatchItem(batch_id=batch.id, submission_id=i, total_before=totals.get(i)) for i in ids)
    session.flush()
    return int(batch.id)


def get_batch(session: Session, batch_id: int) -> dict[str, Any] | None:
    """`{"id", "created", "requested_by", "requested_by_name", "description", "count"}` or None."""
    row = session.execute(select(RejudgeBatch, User.name).outerjoin(User, User.id == RejudgeBatch.requested_by)
                          .where(RejudgeBatch.id == batch_id)).first()
    if row is None:
        return None
    batch, name = row
    count = len(session.scalars(select(RejudgeBatchItem.submission_id)
                                .where(RejudgeBatchItem.batch_id == batch_id)).all())
    return {"id": batch.id, "created": batch.created, "requested_by": batch.requested_by,
            "requested_by_name": name, "description": batch.description, "count": count}


def batch_items(session: Session, batch_id: int) -> list[dict[str, Any]]:
    """The submissions of a batch, by id: `{"submission_id", "user_name", "display_name", "status",
    "total_before", "total"}` (`total`: the stored total now; `status` derived, see `db.status`)."""
    statement = (
        select(RejudgeBatchItem.submission_id, User.name.label("user_name"), User.display_name,
               status_expression().label("status"), RejudgeBatchItem.total_before, Submission.total)
        .join(Submission, Submission.id == RejudgeBatchItem.submission_id)
        .join(User, User.id == Submission.user_id)
        .where(RejudgeBatchItem.batch_id == batch_id)
        .order_by(RejudgeBatchItem.submission_id.asc())
    )
    return [dict(row) for row in session.execute(statement).mappings()]
