"""What several test packages share about the real services they use (PostgreSQL here; Redis in
tests/service): where they are, and ``require(problem)``: a missing service fails the test when ``CI`` is
set and skips it, with the reason, otherwise."""
from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from db.session import make_engine

POSTGRES_URL = os.environ.get("KDT_GRADE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


def require(problem: str | None) -> None:
    """Fail (with ``CI`` set) or skip when something the test needs is missing; ``None``: all there."""
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{problem} (CI is set: these tests must run)")
    pytest.skip(problem)


@functools.cache
def postgres_problem() -> str | None:
    """Why PostgreSQL at ``POSTGRES_URL`` cannot be used, or None if it answers."""
    engine = make_engine(make_url(POSTGRES_URL).update_query_dict({"connect_timeout": "5"}))
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as error:  # any failure to connect means "unavailable"; the reason is reported
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {error}"
    finally:
        engine.dispose()
    return None


@contextmanager
def fresh_postgres_schema(prefix: str) -> Iterator[str]:
    """A PostgreSQL URL whose default schema is new and empty; the schema is dropped afterwards."""
    require(postgres_problem())
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = make_engine(POSTGRES_URL)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(POSTGRES_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
