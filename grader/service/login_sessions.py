"""Server-side sessions of the pages (``grader.web.http.cookie_session`` puts their id in the cookie).

Logging in with a token creates a session: a random id (``secrets.token_urlsafe(32)``, 256 bits) goes
into the browser's cookie, and only its SHA-256 into the database (``db.web_sessions``), with the user,
its creation, last-seen and expiry times. The raw token is never stored in a cookie: a copied cookie
gives at most one session of ``SESSION_SECONDS``, which its owner can end, and never the token.

A session ends when it expires, when its browser logs out (``log_out`` deletes its row), when the
account's token is reset (``grader.service.accounts.reset_token`` deletes every session of the account) and
when the account is disabled (``set_disabled`` deletes them; a disabled account's session is refused
in any case). Each request looks its session up again, so the end takes effect at once.

Public API: ``SESSION_SECONDS``, ``TOUCH_SECONDS``, ``log_in``, ``account_of``, ``log_out``,
``revoke_user``.
"""
from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

import db.web_sessions as sessions_db
from db.base import utcnow

from .accounts import Account, authenticate
from .database import Database

if TYPE_CHECKING:
    from sqlalchemy.orm import Session


SESSION_SECONDS = 12 * 3600  # a contest day; also the cookie's Max-Age
TOUCH_SECONDS = 300  # last_seen is written at most this often per session (a write per page view would queue writers)
_ID_BYTES = 32
_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{40,64}")


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("ascii")).hexdigest()


def log_in(database: Database, token: str | None) -> tuple[Account, str]:
    """Check ``token`` (``grader.service.accounts.authenticate``: ``NotAuthenticated`` 401, ``Forbidden`` 403) and
    start a session of its account; return ``(account, session id)``: the id is for the cookie only.
    Expired sessions of everyone are deleted on the way."""
    account = authenticate(database, token)
    session_id = secrets.token_urlsafe(_ID_BYTES)
    now = utcnow()
    with database.session() as session:
        sessions_db.delete_expired_web_sessions(session, now)
        sessions_db.create_web_session(session, account.id, _hash(session_id), now,
                                       now + timedelta(seconds=SESSION_SECONDS))
    return account, session_id


def account_of(database: Database, session_id: str | None) -> Account | None:
    """The account of a live session (not expired, not logged out or revoked, account enabled), or None.
    Refreshes the session's ``last_seen`` when it is older than ``TOUCH_SECONDS``."""
    if not session_id or not _ID_PATTERN.fullmatch(session_id):
        return None
    digest = _hash(session_id)
    now = utcnow()
    with database.read_session() as session:
        row = sessions_db.find_web_session(session, digest, now)
    if row is None or row["disabled"]:
        return None
    if (now - row["last_seen"]).total_seconds() > TOUCH_SECONDS:
        with database.session() as session:
            sessions_db.touch_web_session(session, digest, now)
    return Account.from_row(row)


def log_out(database: Database, session_id: str | None) -> None:
    """End the session ``session_id`` (nothing if it is unknown or already over)."""
    if session_id and _ID_PATTERN.fullmatch(session_id):
        with database.session() as session:
            sessions_db.delete_web_session(session, _hash(session_id))


def revoke_user(session: Session, user_id: int) -> int:
    """End every session of user ``user_id`` in the caller's transaction; return how many there were."""
    return sessions_db.delete_user_web_sessions(session, user_id)
