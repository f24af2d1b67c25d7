"""The transactional outbox: what must be sent to the broker, written in the transaction it follows from.

A row is the durable form of one Celery message: ``"compile N"`` (compile submission N) or
``"judge N t.p"`` (judge test point t.p of submission N). Intake writes ``compile N`` in the same
transaction as the submission; the compile step writes one ``judge`` row per test point in the same
transaction as the compiled points; a rejudge writes ``compile N`` in the same transaction as its reset.
The outbox sender (``grader.runtime.outbox``) sends the rows and deletes each one after the broker took it; while
the broker is down the rows wait here, so nothing is lost between the database and the broker.

``key`` is unique: asking twice for the same message keeps one row (``INSERT ... ON CONFLICT DO
NOTHING``). A message sent twice (a sender died between send and delete) is harmless: every task is
idempotent.

Public API: `OutboxRow`, `outbox_key`, `add_outbox`, `list_outbox`, `delete_outbox`, `outbox_keys`,
`note_outbox_failure`.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Integer, String, Text, delete, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow
from db.dialects import upsert_insert

KINDS = ("compile", "judge")


class OutboxRow(Base):
    """One message to send: ``kind`` ``compile`` (``task``/``point`` NULL) or ``judge``."""

    __tablename__ = "outbox"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    task: Mapped[int | None] = mapped_column(Integer)
    point: Mapped[int | None] = mapped_column(Integer)
    created: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_error: Mapped[str | None] = mapped_column(Text)


_TABLE = OutboxRow.__table__


def outbox_key(kind: str, submission_id: int, task: int | None = None, point: int | None = None) -> str:
    """``"compile N"`` or ``"judge N t.p"``. Raises ``ValueError`` for an unknown kind or a judge row
    without its test point."""
    if kind == "compile":
        return f"compile {submission_id}"
    if kind == "judge" and task is not None and point is not None:
        return f"judge {submission_id} {task}.{point}"
    raise ValueError(f"bad outbox entry: kind {kind!r} task {task!r} point {point!r}")


def add_outbox(session: Session, kind: str, submission_id: int, task: int | None = None,
               point: int | None = None) -> str:
    """Ask, in the caller's transaction, for one message to be sent; return its key (idempotent)."""
    key = outbox_key(kind, submission_id, task, point)
    session.execute(
        upsert_insert(session, _TABLE)
        .values(key=key, kind=kind, submission_id=submission_id, task=task, point=point, created=utcnow(),
                attempts=0)
        .on_conflict_do_nothing(index_elements=["key"])
    )
    return key


def list_outbox(session: Session, keys: Iterable[str] | None = None, limit: int = 1000) -> list[dict[str, Any]]:
    """The unsent rows (oldest first), all of them or only ``keys``: dicts of the columns."""
    statement = select(_TABLE).order_by(_TABLE.c.id).limit(limit)
    if keys is not None:
        statement = statement.where(_TABLE.c.key.in_(list(keys)))
    return [dict(row) for row in session.execute(statement).mappings()]


def delete_outbox(session: Session, row_id: int) -> None:
    """Forget a row once the broker has taken its message."""
    session.execute(delete(_TABLE).where(_TABLE.c.id == row_id))


def note_outbox_failure(session: Session, row_ids: Iterable[int], error: str) -> None:
    """Count a failed send of these rows and keep the last error (``admin doctor`` shows it)."""
    ids = list(row_ids)
    if ids:
        session.execute(update(_TABLE).where(_TABLE.c.id.in_(ids))
                        .values(attempts=_TABLE.c.attempts + 1, last_error=error[:2000]))


def outbox_keys(session: Session) -> set[tuple]:
    """Every unsent message as ``(kind, submission_id, task, point)`` (the sweeper's "in flight")."""
    rows = session.execute(select(_TABLE.c.kind, _TABLE.c.submission_id, _TABLE.c.task, _TABLE.c.point))
    return {tuple(row) for row in rows}
