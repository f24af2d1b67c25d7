"""Fixtures of the grading service tests: real Redis, real PostgreSQL, real Celery worker processes.

- Redis: `$KDT_GRADE_TEST_REDIS_URL`, or else a free one of databases 8-15 of `127.0.0.1:6379`
  (`shared_services.REDIS_URLS`), flushed before and after each test and held under a machine-wide lock
  meanwhile, so that concurrent tests (xdist workers, other pytest runs) never share a database.
- PostgreSQL: `$KDT_GRADE_TEST_POSTGRES_URL` (default `postgresql://postgres@127.0.0.1:5432/test`), a fresh
  schema per test (as in tests/db), dropped afterwards.
- Workers: `kdt-grade worker` subprocesses (Celery prefork), stopped at the end of the test.
A missing service fails the test when `$CI` is set and skips it otherwise (`service_testlib.require`).

`local_results` runs `kdt-grade local FILE --json` once per session and file; the service tests assert that
the service gives exactly those numbers.
"""
from __future__ import annotations

import json

import pytest

from service_testlib import Workers, clean_env, local_results, make_deployment, run_cli, workers  # noqa: F401 (fixtures)
from tests.shared_services import fresh_postgres_schema, locked_redis


@pytest.fixture
def redis_url():
    """A test Redis database, empty; held under a machine-wide lock for the test's duration."""
    with locked_redis() as url:
        yield url


@pytest.fixture
def postgresql_url():
    """A PostgreSQL URL whose default schema is new and empty (dropped after the test)."""
    with fresh_postgres_schema("kdt_service") as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'service.sqlite3'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request):
    """An empty database, once per backend."""
    return request.getfixturevalue(f"{request.param}_url")


