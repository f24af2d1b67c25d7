"""Run the Alembic migrations of `db/migrations/` programmatically (no alembic.ini needed).

`admin init-db` calls `upgrade(url)`; running it again is a no-op once the database is at head.
To write a new revision after changing the models:
`alembic.command.revision(alembic_config(url), message="...", autogenerate=True)` against a
database at head, then review the generated file in `db/migrations/versions/`.

Public API: `MIGRATIONS_DIR`, `alembic_config(url)`, `upgrade(url, revision="head")`,
`downgrade(url, revision)`.
"""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import URL

from db.session import resolve_url

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def alembic_config(url: str | URL) -> Config:
    """Return an Alembic `Config` for this package's migrations against the database at `url`.

    The URL is handed to `env.py` in `config.attributes["url"]` (the ini-style main option would
    need every "%" doubled) and also set as `sqlalchemy.url` for tools that read it.
    Raises `sqlalchemy.exc.ArgumentError` for a malformed URL.
    """
    resolved = resolve_url(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", resolved.render_as_string(hide_password=False).replace("%", "%%"))
    config.attributes["url"] = resolved
    return config


def upgrade(url: str | URL, revision: str = "head") -> None:
    """Migrate the database at `url` up to `revision` (default: the newest).

    Raises `sqlalchemy.exc.OperationalError` if the database cannot be reached, and whatever
    a failing migration raises (its transaction is rolled back on PostgreSQL).
    """
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str | URL, revision: str) -> None:
    """Migrate the database at `url` down to `revision` ("base" drops every table of the package)."""
    command.downgrade(alembic_config(url), revision)
