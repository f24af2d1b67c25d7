"""One process's database handle: the settings, a lazily made engine, transactions, the schema.

``Database(settings)`` is what every part of the service layer opens transactions with (``session()``,
``read_session()``); ``grader.service.Service`` is one, and the functions of ``accounts``, ``contest``,
``visibility`` and ``login_sessions`` take any of them. Create it after forking; ``close()`` releases
the engine, ``forget_connections()`` drops the connections a fork inherited without closing the parent's.

In embedded mode the schema is created or upgraded on first use (``ensure_schema``): a new data
directory needs no ``admin init-db``.
"""
from __future__ import annotations

import contextlib
import fcntl
import threading
from collections.abc import Callable
from typing import TypeVar

import db
from db.migrate import upgrade
from db.reuse import purge_other_versions
from grader.config import Settings, load_settings
from grader.judging.reuse import judge_version
from grader.runtime import storage
from grader.runtime.retries import retry_transient

T = TypeVar("T")
_MIGRATED: set[str] = set()
_MIGRATE_LOCK = threading.Lock()


class Database:
    """The settings and database of one process (see the module docstring)."""

    def __init__(self, settings: Settings | None = None):
        self.settings = settings or load_settings()
        self._factory = None

    @property
    def factory(self):
        """The session factory. In embedded mode the schema is created or upgraded on first use."""
        if self._factory is None:
            url = self._database_url()
            if self.settings.embedded:
                ensure_schema(url)
            self._factory = db.make_session_factory(url)
        return self._factory

    def _database_url(self) -> str:
        if self.settings.database_url is None:  # the default SQLite file lives in the data directory
            storage.private_dir(self.settings.data_dir)
        return self.settings.db_url

    def session(self):
        """A transaction scope (commit on success, rollback on error)."""
        return db.session_scope(self.factory)

    def read_session(self):
        """A read-only transaction scope: one consistent snapshot that never waits for a writer (SQLite:
        a deferred transaction, writes refused; PostgreSQL: REPEATABLE READ, READ ONLY; ``db.session``).
        For status polls, token checks, tables."""
        return db.session_scope(self.factory, read_only=True)

    def retry(self, fn: Callable[[], T], what: str) -> T:
        """``fn()`` with transient database/broker errors retried (``KDT_GRADE_TRANSIENT_RETRY_SECONDS``)."""
        return retry_transient(fn, self.settings.transient_retry_seconds, what)

    def init_db(self) -> int:
        """Create or upgrade the schema (``admin init-db``; the compose file's ``migrate`` step, run at every
        deployment) and drop the reusable results of other judge versions (``db.reuse``: no key of this
        judge can match them); returns how many went."""
        ensure_schema(self._database_url(), force=True)
        with self.session() as session:
            return purge_other_versions(session, judge_version())

    def close(self) -> None:
        """Release the engine (made again on next use)."""
        if self._factory is not None:
            self._factory.kw["bind"].dispose()
            self._factory = None

    def forget_connections(self) -> None:
        """After a fork: drop the inherited connections without closing the parent's."""
        if self._factory is not None:
            self._factory.kw["bind"].dispose(close=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def ensure_schema(url: str, force: bool = False) -> None:
    """Migrate the database at ``url`` to the newest revision, once per process (unless ``force``). For a
    SQLite file, processes take turns (a lock file beside it): two `kdt-grade submit` started at once on a
    new data directory would both create the tables, and one would fail."""
    with _MIGRATE_LOCK:
        if force or url not in _MIGRATED:
            with _migration_file_lock(url):
                upgrade(url)
            _MIGRATED.add(url)


@contextlib.contextmanager
def _migration_file_lock(url: str):
    """An exclusive ``flock`` on ``<database file>.migrate-lock`` for a SQLite file URL; nothing otherwise
    (PostgreSQL: Alembic's migrations run in one transaction each)."""
    parsed = db.resolve_url(url)
    path = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if not path or path == ":memory:":
        yield
        return
    with open(f"{path}.migrate-lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
