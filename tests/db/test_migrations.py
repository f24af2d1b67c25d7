"""The Alembic migrations (`db.migrate`) against the models, on SQLite and PostgreSQL."""
from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from db.migrate import downgrade, upgrade
from db.models import metadata
from db.session import make_engine

TABLES = {"users", "submissions", "test_point_results", "compiled_points", "contest_settings", "outbox", "leases",
          "point_traces"}


def _differences(url):
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "compare_server_default": True}
            )
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def _tables(url):
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_migrated_schema_matches_the_models(db_url):
    upgrade(db_url)
    assert _differences(db_url) == []
    assert _tables(db_url) == TABLES | {"alembic_version"}


def test_upgrade_is_repeatable_and_downgrade_removes_everything(db_url):
    upgrade(db_url)
    upgrade(db_url)  # `admin init-db` twice is harmless
    downgrade(db_url, "base")
    assert _tables(db_url) == {"alembic_version"}
    upgrade(db_url)
    assert _differences(db_url) == []


def test_an_empty_database_differs_from_the_models(db_url):
    # Guards the comparison itself: it must see missing tables.
    added = {diff[1].name for diff in _differences(db_url) if diff[0] == "add_table"}
    assert added == TABLES
