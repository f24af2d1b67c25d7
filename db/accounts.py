"""Accounts of the contest server: the account columns of `users` (display name, token hash, flags).

The tokens themselves never reach this module: callers pass the token's SHA-256 (`grader.service.accounts`).

Public API: `account_fields`, `create_account`, `get_account`, `find_by_token_hash`, `set_token_hash`,
`set_disabled`, `list_accounts`. Every function takes an open session (the caller commits) and returns
plain dicts `{"id", "name", "display_name", "disabled", "is_admin", "has_token", "created"}`.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from db.base import utcnow
from db.submissions import Submission
from db.users import DISPLAY_NAME_MAX_LENGTH, NAME_MAX_LENGTH, TOKEN_HASH_LENGTH, User


class AccountExists(ValueError):
    """`create_account` for a name that is taken."""


def account_fields(user: User) -> dict[str, Any]:
    """The account view of a `User` row (never the token hash itself, only whether there is one)."""
    return {"id": user.id, "name": user.name, "display_name": user.display_name, "disabled": user.disabled,
            "is_admin": user.is_admin, "has_token": user.token_hash is not None, "created": user.created}


def _check_hash(token_hash: str) -> None:
    if len(token_hash) != TOKEN_HASH_LENGTH or any(c not in "0123456789abcdef" for c in token_hash):
        raise ValueError("token_hash must be 64 lowercase hex digits (a SHA-256)")


def create_account(session: Session, name: str, token_hash: str, display_name: str | None = None,
                   is_admin: bool = False) -> dict[str, Any]:
    """Insert a user with a token hash and return its account dict.

    Raises `AccountExists` if the name is taken (nothing is written; the session stays usable) and
    `ValueError` for a name of more than 100 or a display name of more than 200 characters, or a malformed hash.
    """
    if not name or len(name) > NAME_MAX_LENGTH:
        raise ValueError(f"user name must have 1..{NAME_MAX_LENGTH} characters, got {name!r}")
    if display_name is not None and len(display_name) > DISPLAY_NAME_MAX_LENGTH:
        raise ValueError(f"display name longer than {DISPLAY_NAME_MAX_LENGTH} characters")
    _check_hash(token_hash)
    user = User(name=name, display_name=display_name, token_hash=token_hash, is_admin=is_admin, disabled=False,
                created=utcnow())
    try:
        with session.begin_nested():
            session.add(user)
            session.flush()
    except IntegrityError:
        raise AccountExists(f"a user called {name!r} exists already") from None
    return account_fields(user)


def _by_name(session: Session, name: str) -> User:
    user = session.scalars(select(User).where(User.name == name)).one_or_none()
    if user is None:
        raise LookupError(f"no user called {name!r}")
    return user


def get_account(session: Session, name: str) -> dict[str, Any] | None:
    """The account of user `name`, or None."""
    user = session.scalars(select(User).where(User.name == name)).one_or_none()
    return None if user is None else account_fields(user)


def find_by_token_hash(session: Session, token_hash: str) -> dict[str, Any] | None:
    """The account whose token hash is `token_hash` (an indexed, unique column), or None. The dict also
    carries the stored `"token_hash"`, for the caller's constant-time comparison."""
    user = session.scalars(select(User).where(User.token_hash == token_hash)).one_or_none()
    return None if user is None else {**account_fields(user), "token_hash": user.token_hash}


def set_token_hash(session: Session, name: str, token_hash: str) -> dict[str, Any]:
    """Replace user `name`'s token hash (the old token stops working). `LookupError` for an unknown name."""
    _check_hash(token_hash)
    user = _by_name(session, name)
    user.token_hash = token_hash
    session.flush()
    return account_fields(user)


def set_disabled(session: Session, name: str, disabled: bool) -> dict[str, Any]:
    """Disable or enable user `name` (a disabled user's token answers 403). `LookupError` if unknown."""
    user = _by_name(session, name)
    user.disabled = disabled
    session.flush()
    return account_fields(user)


def list_accounts(session: Session) -> list[dict[str, Any]]:
    """Every user, by name, with `"submissions"`: how many submissions it has."""
    counts = (select(Submission.user_id, func.count().label("n")).group_by(Submission.user_id).subquery())
    rows = session.execute(
        select(User, func.coalesce(counts.c.n, 0)).outerjoin(counts, counts.c.user_id == User.id).order_by(User.name)
    )
    return [{**account_fields(user), "submissions": int(n)} for user, n in rows]
