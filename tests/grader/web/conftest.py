"""Fixtures of the contest server tests (tests/grader/web): real ``kdt-grade serve`` processes on free loopback
ports, over a SQLite file (embedded mode) or PostgreSQL and Redis with real Celery workers (broker mode).

Redis is ``$KDT_GRADE_TEST_REDIS_URL`` (as in tests/grader/service); a missing service fails with ``CI`` set.
"""
from __future__ import annotations

import json

import pytest

from tests.grader.service.service_testlib import Workers, clean_env, local_results, make_deployment, run_cli, workers  # noqa: F401 (fixtures)
from tests.shared_services import fresh_postgres_schema, locked_redis

from weblib import Server


@pytest.fixture
def redis_url():
    with locked_redis() as url:
        yield url


@pytest.fixture
def postgresql_url():
    with fresh_postgres_schema("kdt_web") as url:
        yield url


@pytest.fixture
def start_server():
    """``start_server(deployment, **extra_env) -> Server``; every server is stopped after the test."""
    servers = []

    def start(deployment, **extra_env) -> Server:
        server = Server(deployment, {k: str(v) for k, v in extra_env.items()})
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


