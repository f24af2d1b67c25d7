"""The PointTrace aggregate: the compressed trace record of one graded test point (``grader.judging.trace_record``).

Written by the trusted judge step together with the point's result (``store_trace`` in the same
transaction as ``db.results.record_result``), so the stored picture always belongs to the stored verdict:
a result without a trace (``CE``, ``SV``, a launch that failed before any job ran) deletes the old one.
Rows go with their submission (``ON DELETE CASCADE``); after a rejudge each point's new result replaces
its trace (the pages show a trace only for a finished point). The blob is opaque here (at most ``grader.judging.trace_record.MAX_BLOB_BYTES``).

Public API: ``PointTrace``, ``store_trace``, ``get_trace``, ``get_traces``, ``traced_points``, ``delete_traces``.
"""
from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, LargeBinary, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base
from db.dialects import upsert_insert


class PointTrace(Base):
    """The trace blob of one test point of one submission (``data``: compressed JSON bytes)."""

    __tablename__ = "point_traces"
    __table_args__ = (UniqueConstraint("submission_id", "task", "point"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    task: Mapped[int] = mapped_column(Integer)
    point: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)


_TABLE = PointTrace.__table__
_KEY = ("submission_id", "task", "point")


def _where(submission_id: int, task: int, point: int):
    return (_TABLE.c.submission_id == submission_id, _TABLE.c.task == task, _TABLE.c.point == point)


def store_trace(session: Session, submission_id: int, task: int, point: int, data: bytes | None) -> None:
    """Insert or replace the trace of a test point; ``None`` deletes it (the caller commits).

    Raises ``TypeError`` for data that is not bytes; ``sqlalchemy.exc.IntegrityError`` if the submission
    does not exist."""
    if data is None:
        session.execute(delete(_TABLE).where(*_where(submission_id, task, point)))
        return
    if not isinstance(data, bytes):
        raise TypeError(f"a trace is bytes, got {type(data).__name__}")
    insert = upsert_insert(session, _TABLE).values(submission_id=submission_id, task=task, point=point, data=data)
    session.execute(insert.on_conflict_do_update(index_elements=list(_KEY), set_={"data": insert.excluded.data}))


def get_trace(session: Session, submission_id: int, task: int, point: int) -> bytes | None:
    """The stored trace blob of a test point, or None."""
    return session.scalars(select(_TABLE.c.data).where(*_where(submission_id, task, point))).one_or_none()


def traced_points(session: Session, submission_id: int) -> set[tuple[int, int]]:
    """The (task, point) keys of a submission that have a stored trace (blobs are not loaded)."""
    rows = session.execute(select(_TABLE.c.task, _TABLE.c.point).where(_TABLE.c.submission_id == submission_id))
    return {(task, point) for task, point in rows}


def get_traces(session: Session, submission_id: int) -> dict[tuple[int, int], bytes]:
    """Every stored trace blob of a submission, keyed by (task, point)."""
    rows = session.execute(select(_TABLE.c.task, _TABLE.c.point, _TABLE.c.data)
                           .where(_TABLE.c.submission_id == submission_id))
    return {(task, point): data for task, point, data in rows}


def delete_traces(session: Session, submission_id: int) -> int:
    """Delete every trace of a submission; return how many rows went."""
    return session.execute(delete(_TABLE).where(_TABLE.c.submission_id == submission_id)).rowcount or 0
