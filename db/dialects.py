"""Dialect-specific `INSERT ... ON CONFLICT` constructors for the two supported backends.

Public API: `upsert_insert(session, table) -> Insert` with `.on_conflict_do_update()` and
`.on_conflict_do_nothing()`; `SUPPORTED_DIALECTS`.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

SUPPORTED_DIALECTS = ("sqlite", "postgresql")

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def dialect_name(session: Session) -> str:
    """Return the dialect name ("sqlite" or "postgresql") of the session's bind.

    Raises `NotImplementedError` for any other backend: the upserts below rely on `ON CONFLICT`.
    """
    name = session.get_bind().dialect.name
    if name not in _INSERTS:
        raise NotImplementedError(f"database backend {name!r} is not supported; use one of {SUPPORTED_DIALECTS}")
    return name


def upsert_insert(session: Session, table: Any) -> Any:
    """Return the dialect's `insert(table)` construct, which supports `ON CONFLICT` clauses.

    Inputs: a session bound to SQLite or PostgreSQL, and a mapped class or `Table`.
    Raises `NotImplementedError` for other backends.
    """
    return _INSERTS[dialect_name(session)](table)
