"""Alembic environment of the `db` package; driven by `db.migrate` (see there), not by an ini file."""
from __future__ import annotations

from alembic import context

from db.base import UTCDateTime
from db.models import metadata
from db.session import make_engine

config = context.config


def _url() -> object:
    return config.attributes.get("url") or config.get_main_option("sqlalchemy.url")


def render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    """Render the app's column types as plain SQLAlchemy types, so revisions don't import `db`."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def run_migrations_offline() -> None:
    """Emit the migration SQL without a connection (`alembic upgrade --sql`)."""
    context.configure(
        url=_url(), target_metadata=metadata, literal_binds=True, render_as_batch=True, render_item=render_item
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run the migrations on a connection with the same setup as the service's engines."""
    engine = make_engine(_url())
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=metadata,
                render_item=render_item,
                # SQLite can't ALTER most things: future revisions copy-and-move tables instead.
                render_as_batch=connection.dialect.name == "sqlite",
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
