"""Fixtures for the `db` tests: every database test runs on SQLite and on PostgreSQL.

SQLite: a fresh file in the test's temp directory. PostgreSQL: the server at
`$KDT_GRADE_TEST_POSTGRES_URL` (default `postgresql://postgres@127.0.0.1:5432/test`), in a fresh
schema per test (selected with `search_path` in the URL), dropped afterwards. If PostgreSQL is
unreachable, the PostgreSQL cases fail when `$CI` is set and are skipped, with the reason, otherwise.

Both get the schema from the Alembic migrations, like the service does.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from db.migrate import upgrade
from db.session import make_engine, make_session_factory, session_scope
from db.submissions import create_submission
from db.users import get_or_create_user
from tests.shared_services import fresh_postgres_schema

# The contest's numbers (judging.md) come from the judger package, as in production.
from judger.tasks import POINTS_PER_TASK, WEIGHTS  # noqa: E402,F401


@pytest.fixture
def postgresql_url() -> Iterator[str]:
    """A PostgreSQL URL whose default schema is a fresh, empty schema, dropped after the test."""
    with fresh_postgres_schema("kdt_test") as url:
        yield url


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
