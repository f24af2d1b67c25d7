"""Declarative base, constraint naming convention and the UTC timestamp type.

Every model of the `db` package derives from `Base`, so `Base.metadata` holds the whole schema (the
Alembic migrations are compared against it in the tests).

Timestamps are stored with `UTCDateTime`: Python code only ever sees timezone-aware UTC datetimes, on
PostgreSQL (`timestamp with time zone`) and on SQLite (which keeps naive ISO strings) alike.
"""
from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, MetaData
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

# Deterministic constraint names, so that migrations can drop or alter them by name on every backend.
NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """Return the current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A `DateTime(timezone=True)` column that accepts and returns aware UTC datetimes only.

    Binding a naive datetime raises `ValueError`: a naive time has no defined instant, and
    guessing would silently shift submission times. Aware values in other zones are converted to
    UTC. Values read back are always aware UTC (SQLite returns naive ones, which are UTC by
    construction because only UTC is ever written).
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware datetime")
        value = value.astimezone(UTC)
        # SQLite's DateTime storage formats without an offset; keep the stored string naive UTC.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base of every `db` model; its metadata carries `NAMING_CONVENTION`."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
