"""What several test packages share about the real services they use (PostgreSQL, Redis): where they are,
``require(problem)`` (a missing service fails the test when ``CI`` is set and skips it, with the reason,
otherwise), a fresh PostgreSQL schema and an empty, locked Redis database per test."""
from __future__ import annotations

import fcntl
import functools
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from db.session import make_engine

POSTGRES_URL = os.environ.get("KDT_GRADE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("KDT_GRADE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


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


@contextmanager
def locked_redis(url: str = REDIS_URL) -> Iterator[str]:
    """The Redis database at ``url``, empty, held under a machine-wide lock (concurrent pytest runs using
    the same database wait), flushed again afterwards."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=3)
    try:
        client.ping()
    except Exception as exc:  # any failure means "unavailable"; the reason is reported
        require(f"Redis at {url} is unreachable: {exc}")
    with open(f"/tmp/kdt-grade-test-{re.sub(r'[^A-Za-z0-9]+', '_', url)}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        client.flushdb()
        try:
            yield url
        finally:
            client.flushdb()
            client.close()
