"""What several test packages share about the real services they use (PostgreSQL, Redis): where they are,
``require(problem)`` (a missing service fails the test when ``CI`` is set and skips it, with the reason,
otherwise), a fresh PostgreSQL schema and an empty, locked Redis database per test."""
from __future__ import annotations

import functools
import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from db.session import make_engine

POSTGRES_URL = os.environ.get("KDT_GRADE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("KDT_GRADE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
# Without KDT_GRADE_TEST_REDIS_URL the tests take any free one of these databases of the local Redis (so
# that tests of several xdist workers, or of several pytest runs, use Redis at the same time); with it, only
# the database it names.
REDIS_URLS = ((REDIS_URL,) if "KDT_GRADE_TEST_REDIS_URL" in os.environ
              else tuple(f"redis://127.0.0.1:6379/{n}" for n in (*range(14, 7, -1), 15)))


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
def machine_lock(name: str, timeout: float | None = None) -> Iterator[bool]:
    """Hold the machine-wide lock ``name`` (an abstract Unix socket bound to it: no file is left anywhere,
    and the kernel releases it when its process dies). ``timeout=0``: try once; yields whether it is held.
    Blocks (polling) up to ``timeout`` seconds, or forever with None."""
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            try:
                lock.bind(b"\0kdt-grade-test:" + name.encode())
                held = True
                break
            except OSError:
                if deadline is not None and time.monotonic() >= deadline:
                    held = False
                    break
                time.sleep(0.1)
        yield held
    finally:
        lock.close()


@contextmanager
def locked_redis(url: str | None = None) -> Iterator[str]:
    """A Redis database, empty, held under a machine-wide lock (tests of concurrent xdist workers and
    pytest runs each get another one of ``REDIS_URLS``, and wait when all are taken), flushed again
    afterwards. ``url``: exactly that database."""
    import redis

    urls = (url,) if url else REDIS_URLS
    client = redis.Redis.from_url(urls[0], socket_connect_timeout=3)
    try:
        client.ping()
    except Exception as exc:  # any failure means "unavailable"; the reason is reported
        require(f"Redis at {urls[0]} is unreachable: {exc}")
    finally:
        client.close()
    with ExitStack() as stack:
        while True:
            chosen = next((u for u in urls if stack.enter_context(machine_lock(f"redis {u}", timeout=0))), None)
            if chosen is not None:
                break
            stack.close()  # every database is taken: wait a moment and try them all again
            time.sleep(0.5)
        client = redis.Redis.from_url(chosen, socket_connect_timeout=3)
        client.flushdb()
        try:
            yield chosen
        finally:
            client.flushdb()
            client.close()


# The phase ("setup", "call", "teardown") in which a test failed, set by tests/conftest.py; for the steps
# of a scenario (``service_testlib.Scenario``).
FAILED_PHASE = pytest.StashKey[str]()
