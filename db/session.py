"""Engines, session factories and the transaction scope, from a database URL.

The URL always comes from the caller. The service's default (decided by its config module) is
`$KDT_GRADE_DATABASE_URL`, else `sqlite:///<$KDT_GRADE_DATA_DIR>/kdt-grade.sqlite3`. Supported:
`sqlite:///path` and `postgresql://...`.

SQLite, shared by several worker processes on one machine, is set up on every connection:
- `PRAGMA foreign_keys=ON` (SQLite ignores foreign keys otherwise);
- `PRAGMA journal_mode=WAL`, so that readers never block the one writer, and
  `PRAGMA busy_timeout`, so that a second writer waits instead of failing with "database is locked";
- every transaction starts with `BEGIN IMMEDIATE`: it takes the write lock at the start, where the
  busy timeout applies. A deferred transaction that reads first and writes later can fail at once
  (SQLITE_BUSY_SNAPSHOT) whatever the timeout. It also makes read-then-write steps (totals)
  serialisable, the SQLite counterpart of PostgreSQL's `SELECT ... FOR UPDATE`;
- except a read-only scope (`session_scope(factory, read_only=True)`): a plain deferred `BEGIN`, one
  consistent WAL snapshot that never waits for the writer (token checks, status polls, leaderboards),
  with `PRAGMA query_only` so that a write in it fails instead of silently taking the lock;
- the writers queue before `BEGIN IMMEDIATE`: on a lock of the engine (threads of one process), then,
  for a database file, on an exclusive `flock` of the file `<database>-writer.lock` beside it (the
  processes of one machine: the server's HTTP processes, its grading process, workers). SQLite's own
  busy handler polls with sleeps growing to 100 ms, so many threads waiting for the write lock take turns
  only every few tens of milliseconds; a lock hands over at once.
  A writer that waited `busy_timeout` for the queue goes on anyway and meets SQLite's own lock and
  timeout, as it would without the queue: never a hang.

PostgreSQL: a read-only scope is a `REPEATABLE READ READ ONLY` transaction, so that all its statements
read one snapshot (the default READ COMMITTED gives each statement its own: a status poll could read
the submission row, then the derived status after a totals write had committed, and say `done` with
every score null). A read-only transaction at that level never waits for a writer and never fails
with a serialization error; writers keep READ COMMITTED and their row locks.

PostgreSQL URLs without a driver (`postgresql://`) use psycopg 3 if installed, else psycopg2.
(SQLAlchemy 2.1 would pick psycopg 3 only, and the project depends on psycopg2-binary.)

With a forking worker pool (Celery prefork), create engines in the child process, or call
`engine.dispose(close=False)` after the fork: pooled connections must not be shared across processes.

Public API: `resolve_url`, `make_engine`, `make_session_factory`, `session_scope`.
"""
from __future__ import annotations

import fcntl
import importlib.util
import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

DEFAULT_BUSY_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT_SECONDS = 10  # PostgreSQL: seconds to wait for a connection
READ_ONLY = "kdt_read_only"  # the execution option that marks a read-only scope's connection


def resolve_url(url: str | URL) -> URL:
    """Parse `url`, choosing an installed PostgreSQL driver when the URL names none.

    Raises `sqlalchemy.exc.ArgumentError` for a malformed URL.
    """
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        has_psycopg3 = importlib.util.find_spec("psycopg") is not None
        parsed = parsed.set(drivername="postgresql+psycopg" if has_psycopg3 else "postgresql+psycopg2")
    return parsed


def _install_sqlite_listeners(engine: Engine, busy_timeout_ms: int) -> None:
    """Set the connection pragmas and the `BEGIN IMMEDIATE` transactions described in the module doc."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event emit BEGIN, instead of pysqlite's own deferred BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute("PRAGMA journal_mode = WAL")  # an in-memory database stays "memory"
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        read_only = bool(connection.get_execution_options().get(READ_ONLY))
        connection.exec_driver_sql(f"PRAGMA query_only = {int(read_only)}")
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


class _WriterQueue:
    """The writer queue of one SQLite engine in this process (see the module doc): a re-entrant thread
    lock and, for a database file, the descriptor of its lock file, flocked while the outermost writer
    of this process holds the queue."""

    def __init__(self, lock_path: str | None):
        self.lock = threading.RLock()
        self.depth = 0  # nesting of the thread holding ``lock``
        self.fd = None
        if lock_path:
            try:
                self.fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:  # a directory this process may not write: SQLite's own lock still holds
                self.fd = None

    def acquire(self, deadline: float) -> bool:
        if not self.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        if self.depth == 0 and self.fd is not None and not self._flock(deadline):
            self.lock.release()
            return False
        self.depth += 1
        return True

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0 and self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.lock.release()

    def _flock(self, deadline: float) -> bool:
        """The file lock, polled (a blocking flock cannot time out): at once when free, else every 0.2 ms
        for the first 10 ms, then every 2 ms, until ``deadline``."""
        pause, waited = 0.0002, 0.0
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(pause)
                waited += pause
                if waited > 0.01:
                    pause = 0.002

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


_WRITER_QUEUES: "weakref.WeakKeyDictionary[Engine, _WriterQueue]" = weakref.WeakKeyDictionary()
_QUEUES_LOCK = threading.Lock()


def _forget_queues_after_fork() -> None:
    """In a forked child: a lock held by another thread at the fork stays held there, and the lock file's
    descriptor shares its flock with the parent's; both are dropped (the child makes its own)."""
    global _QUEUES_LOCK
    _QUEUES_LOCK = threading.Lock()
    for queue in list(_WRITER_QUEUES.values()):
        queue.close()
    _WRITER_QUEUES.clear()


os.register_at_fork(after_in_child=_forget_queues_after_fork)


def _writer_queue(factory: sessionmaker[Session]) -> _WriterQueue | None:
    """The writer queue of a SQLite factory's engine (see the module doc); None otherwise."""
    engine = factory.kw.get("bind")
    if not isinstance(engine, Engine) or engine.dialect.name != "sqlite":
        return None
    with _QUEUES_LOCK:
        queue = _WRITER_QUEUES.get(engine)
        if queue is None:
            database = engine.url.database
            on_disk = database not in (None, "", ":memory:") and not database.startswith("file:")
            queue = _WRITER_QUEUES[engine] = _WriterQueue(f"{database}-writer.lock" if on_disk else None)
    return queue


@contextmanager
def _queued_writer(factory: sessionmaker[Session]) -> Iterator[None]:
    """Hold the writer queue (if any) for the block. After the busy timeout without it the block runs
    anyway and meets SQLite's own lock and timeout, as it would without this queue: never a hang."""
    queue = _writer_queue(factory)
    held = queue is not None and queue.acquire(time.monotonic() + DEFAULT_BUSY_TIMEOUT_MS / 1000)
    try:
        yield
    finally:
        if held:
            queue.release()


def make_engine(url: str | URL, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS, **engine_kwargs: Any) -> Engine:
    """Create an engine for `url` with the per-backend setup of the module doc.

    Inputs: a SQLite or PostgreSQL URL; for SQLite, how long a writer waits for the lock; any
    further `sqlalchemy.create_engine` keyword arguments.
    Output: a new `Engine` (the caller disposes of it).
    Raises `NotImplementedError` for other backends; `sqlalchemy.exc.ArgumentError` for a malformed URL.
    """
    resolved = resolve_url(url)
    backend = resolved.get_backend_name()
    if backend == "sqlite":
        engine = create_engine(resolved, **engine_kwargs)
        _install_sqlite_listeners(engine, busy_timeout_ms)
        return engine
    if backend == "postgresql":
        engine_kwargs.setdefault("pool_pre_ping", True)  # long-lived workers outlive server restarts
        # A server that does not answer (a network cut drops the packets) fails a connection after this
        # many seconds instead of the kernel's two minutes of retries; the URL's own value wins.
        if "connect_timeout" not in resolved.query:
            engine_kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_SECONDS,
                                             **engine_kwargs.get("connect_args", {})}
        return create_engine(resolved, **engine_kwargs)
    raise NotImplementedError(f"database backend {backend!r} is not supported; use sqlite or postgresql")


def make_session_factory(bind: Engine | str | URL) -> sessionmaker[Session]:
    """Return a session factory bound to `bind` (an engine, or a URL passed to `make_engine`).

    Sessions keep loaded attributes after commit (`expire_on_commit=False`), so `to_dict()` helpers
    can be called after the transaction ends without another query.
    """
    engine = bind if isinstance(bind, Engine) else make_engine(bind)
    return sessionmaker(bind=engine, expire_on_commit=False)


def _read_only_options(factory: sessionmaker[Session]) -> dict[str, Any]:
    """The execution options of a read-only scope's connection: the marker, and on PostgreSQL one
    snapshot for the whole transaction (``REPEATABLE READ``, ``READ ONLY``; see the module doc)."""
    engine = factory.kw.get("bind")
    if isinstance(engine, Engine) and engine.dialect.name == "postgresql":
        return {READ_ONLY: True, "isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
    return {READ_ONLY: True}


@contextmanager
def session_scope(factory: sessionmaker[Session], read_only: bool = False) -> Iterator[Session]:
    """Yield a new session; commit when the block ends normally, roll back and re-raise on an exception.

    The session is always closed. Enqueue background work only after the block has exited, so
    that a worker never looks for rows that are not committed yet. ``read_only``: the transaction only
    reads, all of it from one snapshot (SQLite: deferred, never waits for a writer, writes refused;
    PostgreSQL: REPEATABLE READ, READ ONLY; see the module doc).
    """
    with nullcontext() if read_only else _queued_writer(factory):
        session = factory()
        try:
            if read_only:
                session.connection(execution_options=_read_only_options(factory))
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()
