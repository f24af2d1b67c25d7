"""The User aggregate: a contestant, identified by a unique name.

Public API: `User`, `get_or_create_user(session, name) -> dict`, `get_user(session, user_id) -> dict`.
Functions return plain dicts (see `User.to_dict`), never ORM objects, so that results can cross
process boundaries.

The account columns (`display_name`, `token_hash`, `disabled`, `is_admin`; migration 0003) belong to the
contest server's accounts, read and written by `db.accounts`. A user created by a local `kdt-grade submit`
has no token and cannot log in until `admin users reset-token` gives it one.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, String, false, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow
from db.dialects import upsert_insert

NAME_MAX_LENGTH = 100
DISPLAY_NAME_MAX_LENGTH = 200
TOKEN_HASH_LENGTH = 64  # hex SHA-256


class User(Base):
    """A contestant. `name` is unique; `created` is an aware UTC datetime."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_MAX_LENGTH), unique=True)
    created: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    display_name: Mapped[str | None] = mapped_column(String(DISPLAY_NAME_MAX_LENGTH))
    # Only the SHA-256 of the bearer token is stored (grader.service.accounts explains why that suffices).
    token_hash: Mapped[str | None] = mapped_column(String(TOKEN_HASH_LENGTH), unique=True)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    def to_dict(self) -> dict[str, Any]:
        """Return the row as plain data: `{"id", "name", "created"}`."""
        return {"id": self.id, "name": self.name, "created": self.created}


def get_or_create_user(session: Session, name: str) -> dict[str, Any]:
    """Return the user called `name`, creating it if missing; safe under concurrent callers.

    Inputs: an open session (the caller commits) and a non-empty name of at most 100 characters.
    Output: `User.to_dict()` of the existing or new row.
    Raises `ValueError` for an empty or too long name.
    """
    if not name or len(name) > NAME_MAX_LENGTH:
        raise ValueError(f"user name must have 1..{NAME_MAX_LENGTH} characters, got {name!r}")
    # ON CONFLICT DO NOTHING rather than select-then-insert: two intakes for a new user can race.
    session.execute(
        upsert_insert(session, User)
        .values(name=name, created=utcnow())
        .on_conflict_do_nothing(index_elements=["name"])
    )
    user = session.scalars(select(User).where(User.name == name)).one()
    return user.to_dict()


def get_user(session: Session, user_id: int) -> dict[str, Any] | None:
    """Return `User.to_dict()` of user `user_id`, or None if there is no such user."""
    user = session.get(User, user_id)
    return None if user is None else user.to_dict()
