"""Leases: a named lock held by one process until it expires, on SQLite and PostgreSQL alike.

The automatic sweeper runs in every worker and in the server, but one at a time: each round it calls
``acquire_lease("sweeper", holder, ttl)``. The lease is taken when nobody holds it, when it expired (its
holder died) or when the caller already holds it (renewal). One statement does it:
``INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE expires_at < now OR holder = me RETURNING holder``;
a row comes back only when the caller got the lease, and the database serialises concurrent callers.

Public API: `Lease`, `acquire_lease`, `release_lease`, `live_leases`.

The compile step holds `compile N` while it compiles submission N (renewed like a heartbeat), so the
sweeper does not re-queue a compile that is under way.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import String, delete, or_, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow
from db.dialects import upsert_insert


class Lease(Base):
    """Who holds the lock ``name`` (``holder``: ``host:pid``) and until when (aware UTC)."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str] = mapped_column(String(255))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())


_TABLE = Lease.__table__


def acquire_lease(session: Session, name: str, holder: str, ttl: timedelta, now: datetime | None = None) -> bool:
    """Take or renew the lease ``name`` for ``ttl``; True if ``holder`` has it now (the caller commits)."""
    now = now or utcnow()
    insert = upsert_insert(session, _TABLE).values(name=name, holder=holder, expires_at=now + ttl)
    statement = insert.on_conflict_do_update(
        index_elements=["name"],
        set_={"holder": insert.excluded.holder, "expires_at": insert.excluded.expires_at},
        where=or_(_TABLE.c.expires_at < now, _TABLE.c.holder == holder),
    ).returning(_TABLE.c.holder)
    return session.execute(statement).scalar_one_or_none() == holder


def release_lease(session: Session, name: str, holder: str) -> None:
    """Give the lease up if ``holder`` has it."""
    session.execute(delete(_TABLE).where(_TABLE.c.name == name, _TABLE.c.holder == holder))


def live_leases(session: Session, prefix: str, now: datetime | None = None) -> set[str]:
    """The names starting with `prefix` whose lease has not expired."""
    rows = session.scalars(select(_TABLE.c.name).where(_TABLE.c.name.startswith(prefix),
                                                      _TABLE.c.expires_at >= (now or utcnow())))
    return set(rows)
