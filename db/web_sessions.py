"""The WebSession aggregate: a logged-in browser of the contest server's pages (``grader.service.login_sessions``).

The session cookie carries a random session id; this table keeps only its SHA-256 (``id_hash``), the
user, and three times: ``created``, ``last_seen`` (refreshed at most every few minutes) and
``expires``. A row is the session: deleting it (log out, a token reset, disabling the account) ends the
session at once, whatever cookie the browser still holds. Rows go with their user (``ON DELETE CASCADE``).

Public API: ``WebSession``, ``create_web_session``, ``find_web_session``, ``touch_web_session``,
``delete_web_session``, ``delete_user_web_sessions``, ``delete_expired_web_sessions``. Every function
takes an open session (the caller commits) and returns plain data.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, delete, select, update
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.accounts import account_fields
from db.base import Base, UTCDateTime
from db.users import User

ID_HASH_LENGTH = 64  # hex SHA-256 of the cookie's session id


class WebSession(Base):
    """One logged-in browser: the hash of its cookie's id, its user and its times (aware UTC)."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    id_hash: Mapped[str] = mapped_column(String(ID_HASH_LENGTH), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime())
    expires: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)


_TABLE = WebSession.__table__


def _check_hash(id_hash: str) -> None:
    if len(id_hash) != ID_HASH_LENGTH or any(c not in "0123456789abcdef" for c in id_hash):
        raise ValueError("id_hash must be 64 lowercase hex digits (a SHA-256)")


def create_web_session(session: Session, user_id: int, id_hash: str, now: datetime, expires: datetime) -> None:
    """Insert a session of user ``user_id`` (created and last seen ``now``, ending at ``expires``).
    Raises ``ValueError`` for a malformed hash, ``IntegrityError`` for an unknown user."""
    _check_hash(id_hash)
    session.execute(_TABLE.insert().values(id_hash=id_hash, user_id=user_id, created=now, last_seen=now,
                                           expires=expires))


def find_web_session(session: Session, id_hash: str, now: datetime) -> dict[str, Any] | None:
    """The live session whose id hashes to ``id_hash`` (not expired at ``now``), with its user's account:
    ``{**account fields (db.accounts), "session_hash", "last_seen", "expires"}``; None when there is none
    (also for a malformed hash). A disabled user's session is returned with ``disabled`` True: the caller
    refuses it."""
    if len(id_hash) != ID_HASH_LENGTH:
        return None
    row = session.execute(
        select(User, _TABLE.c.id_hash, _TABLE.c.last_seen, _TABLE.c.expires)
        .join(_TABLE, _TABLE.c.user_id == User.id)
        .where(_TABLE.c.id_hash == id_hash, _TABLE.c.expires > now)
    ).one_or_none()
    if row is None:
        return None
    user, stored, last_seen, expires = row
    return {**account_fields(user), "session_hash": stored, "last_seen": last_seen, "expires": expires}


def touch_web_session(session: Session, id_hash: str, now: datetime) -> None:
    """Set the session's ``last_seen`` to ``now`` (nothing if it is gone)."""
    session.execute(update(_TABLE).where(_TABLE.c.id_hash == id_hash).values(last_seen=now))


def delete_web_session(session: Session, id_hash: str) -> bool:
    """Delete the session whose id hashes to ``id_hash``; True if there was one."""
    return session.execute(delete(_TABLE).where(_TABLE.c.id_hash == id_hash)).rowcount > 0


def delete_user_web_sessions(session: Session, user_id: int) -> int:
    """Delete every session of user ``user_id``; return how many there were."""
    return session.execute(delete(_TABLE).where(_TABLE.c.user_id == user_id)).rowcount


def delete_expired_web_sessions(session: Session, now: datetime) -> int:
    """Delete the sessions that expired before ``now``; return how many."""
    return session.execute(delete(_TABLE).where(_TABLE.c.expires <= now)).rowcount
