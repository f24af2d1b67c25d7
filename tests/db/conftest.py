"""Fixtures for the `db` tests: every database test runs on SQLite and on PostgreSQL.

SQLite: a fresh file in the test's temp directory. PostgreSQL: the server at
`$KDT_GRADE_TEST_POSTGRES_URL` (default `postgresql://postgres@127.0.0.1:5432/test`), in a fresh
schema per test (selected with `search_path` in the URL), dropped afterwards. If PostgreSQL is
unreachable, the PostgreSQL cases fail when `$CI` is set and are skipped, with the reason, otherwise.

Both get the schema from the Alembic migrations, like the service does.
"""
from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from db.migrate import upgrade
from db.session import make_engine, make_session_factory, session_scope
from db.submissions import create_submission
from db.users import get_or_create_user

POSTGRES_URL = os.environ.get("KDT_GRADE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")

# The contest's numbers (judging.md); in production they come from the judger package.
WEIGHTS = {1: 10, 2: 20, 3: 30, 4: 40}
POINTS_PER_TASK = {1: 2, 2: 2, 3: 2, 4: 4}


@functools.cache
def _postgres_problem() -> str | None:
    """Return why PostgreSQL can't be used, or None if it answers."""
    engine = make_engine(make_url(POSTGRES_URL).update_query_dict({"connect_timeout": "5"}))
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as error:  # any failure to connect means "unavailable"; the reason is reported
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {error}"
    finally:
        engine.dispose()
    return None


def _require_postgres() -> None:
    problem = _postgres_problem()
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{problem} (CI is set: PostgreSQL tests must run)")
    pytest.skip(problem)


@pytest.fixture
def postgresql_url() -> Iterator[str]:
    """A PostgreSQL URL whose default schema is a fresh, empty schema, dropped after the test."""
    _require_postgres()
    schema = f"kdt_test_{uuid.uuid4().hex[:16]}"
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


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    """A SQLite URL of a new file in the test's temp directory."""
    return f"sqlite:///{tmp_path / 'kdt-grade.sqlite3'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """An empty database's URL, once per backend."""
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """An engine on a database migrated to head."""
    upgrade(db_url)
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def factory(engine: Engine) -> sessionmaker[Session]:
    """A session factory on the migrated database."""
    return make_session_factory(engine)


@pytest.fixture
def weights() -> dict[int, int]:
    """The contest's task weights, as the judger passes them."""
    return dict(WEIGHTS)


@pytest.fixture
def points_per_task() -> dict[int, int]:
    """The contest's number of test points per task, as the judger passes them."""
    return dict(POINTS_PER_TASK)


@pytest.fixture
def add_submission(factory: sessionmaker[Session]) -> Callable[..., int]:
    """Commit a submission of user `user` (created on demand) and return its id."""

    def add(user: str = "alice", created: datetime | None = None, source: str = "def get_kernel(t): ...") -> int:
        with session_scope(factory) as session:
            user_id = get_or_create_user(session, user)["id"]
            row = create_submission(session, user_id, "kernel.py", "ab" * 32, source, created=created)
        return int(row["id"])

    return add


@pytest.fixture
def submission_id(add_submission: Callable[..., int]) -> int:
    """The id of one committed submission."""
    return add_submission()
