"""The Alembic migrations (`db.migrate`) against the models, on SQLite and PostgreSQL."""
from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from db.migrate import downgrade, upgrade
from db.models import metadata
from db.session import make_engine

TABLES = {"users", "submissions", "test_point_results", "compiled_points", "contest_settings", "outbox", "leases",
          "point_traces", "web_sessions", "clarifications", "announcements", "message_marks", "rejudge_batches", "rejudge_batch_items",
          "reusable_results"}


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


def test_the_migrated_verdict_constraint_is_the_judgers_verdict_list(db_url):
    """The one verdict list is judger.verdicts.VERDICTS: the model's check constraint is built from it, and
    the database the migrations make accepts exactly those verdicts (a new verdict needs a migration)."""
    from sqlalchemy import text

    from judger.verdicts import VERDICTS
    upgrade(db_url)
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                ddl = conn.execute(text("SELECT sql FROM sqlite_master WHERE name = 'test_point_results'")).scalar()
            else:
                # this test's own schema only: another test's schema may be being dropped meanwhile, and
                # pg_get_constraintdef of one of its constraints fails ("could not open relation with OID")
                ddl = conn.execute(text("SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                                        "WHERE conname = 'ck_test_point_results_verdict' "
                                        "AND connamespace = current_schema()::regnamespace")).scalar()
    finally:
        engine.dispose()
    listed = tuple(v for v in ("AC", "WA", "CE", "RE", "TLE", "MLE", "SV", "IE", "XX") if f"'{v}'" in ddl)
    assert listed == VERDICTS and len(VERDICTS) == 8
    model = next(c for c in metadata.tables["test_point_results"].constraints if getattr(c, "name", "") and
                 "verdict" in str(c.name))
    assert all(f"'{v}'" in str(model.sqltext) for v in VERDICTS)
