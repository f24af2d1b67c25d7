"""Engines and transactions (`db.session`); per-backend setup is tested on its own backend."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from db.session import make_engine, make_session_factory, resolve_url, session_scope
from db.submissions import Submission, create_submission, get_submission
from db.users import get_or_create_user, get_user


def test_session_scope_commits_and_rolls_back(factory):
    with session_scope(factory) as session:
        get_or_create_user(session, "kept")
    with pytest.raises(RuntimeError), session_scope(factory) as session:
        get_or_create_user(session, "dropped")
        raise RuntimeError("boom")
    with session_scope(factory) as session:
        names = set(session.scalars(text("SELECT name FROM users")))
    assert names == {"kept"}


def test_foreign_keys_are_enforced(factory):
    with pytest.raises(IntegrityError), session_scope(factory) as session:
        create_submission(session, 777, "kernel.py", "0" * 64, "")


def test_timestamps_are_aware_utc(factory):
    created = datetime(2026, 11, 1, 14, 30, tzinfo=timezone(timedelta(hours=2)))
    with session_scope(factory) as session:
        user_id = get_or_create_user(session, "alice")["id"]
        submission_id = create_submission(session, user_id, "k.py", "1" * 64, "src", created=created)["id"]
    with session_scope(factory) as session:
        row = get_submission(session, submission_id)
        user = get_user(session, user_id)
    assert row["created"] == created
    assert row["created"].utcoffset() == timedelta(0)
    assert user["created"].tzinfo is not None
    with pytest.raises(Exception, match="naive datetime"), session_scope(factory) as session:
        session.add(Submission(user_id=user_id, file_name="k.py", sha256="2" * 64, source="",
                               created=datetime(2026, 11, 1)))


def test_sqlite_connections_use_wal_busy_timeout_and_foreign_keys(sqlite_url):
    engine = make_engine(sqlite_url, busy_timeout_ms=1234)
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1234
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        engine.dispose()


def test_sqlite_transactions_take_the_write_lock_at_begin(sqlite_url):
    """A second writer waits for the first (busy timeout), then succeeds: no 'database is locked'."""
    engine = make_engine(sqlite_url, busy_timeout_ms=200)
    other = make_engine(sqlite_url, busy_timeout_ms=0)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
        with engine.begin() as connection:
            connection.exec_driver_sql("SELECT 1")  # even a read-only transaction holds the lock
            with pytest.raises(Exception, match="locked"), other.begin():
                pass
        with other.begin() as connection:
            connection.exec_driver_sql("INSERT INTO t VALUES (1)")
    finally:
        engine.dispose()
        other.dispose()


def test_postgresql_urls_get_an_installed_driver():
    url = resolve_url("postgresql://postgres@127.0.0.1:5432/test")
    assert url.drivername in {"postgresql+psycopg", "postgresql+psycopg2"}
    assert resolve_url("postgresql+psycopg2://h/db").drivername == "postgresql+psycopg2"
    assert resolve_url("sqlite:///x.sqlite3").drivername == "sqlite"


def test_postgresql_connections_give_up_after_a_timeout_unless_the_url_says_otherwise():
    """A PostgreSQL server that does not answer (a network cut) fails a connection after 10 s, not after
    the kernel's two minutes of retries; a ``connect_timeout`` in the URL wins. Checked on what reaches
    the driver, and with the URL's 1 s on a listening socket that never answers."""
    import socket
    import time

    from sqlalchemy import event
    from sqlalchemy.exc import OperationalError

    class Stop(Exception):
        pass

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # the kernel accepts connections; nobody ever answers on them
    port = silent.getsockname()[1]
    try:
        default = make_engine(f"postgresql://nobody@127.0.0.1:{port}/x")
        seen = []

        def record(_dialect, _record, _args, params):
            seen.append(params.get("connect_timeout"))
            raise Stop  # what the driver would be given is all this case needs
        event.listen(default, "do_connect", record)
        with pytest.raises(Stop):
            default.connect()
        assert seen == [10]
        default.dispose()

        chosen = make_engine(f"postgresql://nobody@127.0.0.1:{port}/x?connect_timeout=1")
        t0 = time.monotonic()
        with pytest.raises(OperationalError, match="timeout"):
            chosen.connect()
        assert time.monotonic() - t0 < 8
        chosen.dispose()
    finally:
        silent.close()


def test_other_backends_are_refused():
    with pytest.raises(NotImplementedError):
        make_engine("mysql://root@127.0.0.1/test")


def test_session_factory_from_a_url(sqlite_url):
    factory = make_session_factory(sqlite_url)
    try:
        with session_scope(factory) as session:
            assert session.execute(text("SELECT 1")).scalar() == 1
    finally:
        factory.kw["bind"].dispose()


def test_a_read_only_scope_sees_a_snapshot_without_waiting_for_a_writer_and_refuses_writes(factory):
    """SQLite: a writer holds the write lock (BEGIN IMMEDIATE) while a read-only scope reads the committed
    rows at once; PostgreSQL: the same rows. A write in a read-only scope fails (SQLite: query_only) and
    leaves nothing behind; the next ordinary scope on the same pooled connection writes again."""
    import threading

    with session_scope(factory) as session:
        get_or_create_user(session, "committed")
    writing, release = threading.Event(), threading.Event()

    def writer():
        with session_scope(factory) as session:
            get_or_create_user(session, "in-flight")
            session.flush()
            writing.set()
            release.wait(30)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert writing.wait(30)
        with session_scope(factory, read_only=True) as session:
            assert set(session.scalars(text("SELECT name FROM users"))) == {"committed"}
    finally:
        release.set()
        thread.join()
    if factory.kw["bind"].dialect.name == "sqlite":
        with pytest.raises(Exception, match="readonly"), session_scope(factory, read_only=True) as session:
            get_or_create_user(session, "refused")
    else:  # PostgreSQL: REPEATABLE READ, READ ONLY
        with pytest.raises(Exception, match="read-only transaction"), session_scope(factory, read_only=True) as session:
            get_or_create_user(session, "refused")
    with session_scope(factory) as session:
        get_or_create_user(session, "after")
        names = set(session.scalars(text("SELECT name FROM users")))
    assert names == {"committed", "in-flight", "after"}


def test_many_writer_threads_of_one_process_all_commit(factory):
    """The in-process writer queue (SQLite) hands the lock over: 40 threads each commit one user, none
    fails with "database is locked" or is lost."""
    import concurrent.futures

    def add(i):
        with session_scope(factory) as session:
            return get_or_create_user(session, f"writer{i:02d}")["name"]
    with concurrent.futures.ThreadPoolExecutor(40) as pool:
        added = sorted(pool.map(add, range(40)))
    with session_scope(factory, read_only=True) as session:
        names = sorted(session.scalars(text("SELECT name FROM users")))
    assert added == names == [f"writer{i:02d}" for i in range(40)]


WRITER_SCRIPT = """
import sys, time
from sqlalchemy import text
from db.session import make_session_factory, session_scope
from db.users import get_or_create_user
factory = make_session_factory(sys.argv[1])
hold = float(sys.argv[3])
for i in range(int(sys.argv[4])):
    with session_scope(factory) as session:
        get_or_create_user(session, f"{sys.argv[2]}-{i:02d}")
        if hold:
            print("holding", flush=True)
            time.sleep(hold)
"""


def test_writers_of_several_processes_queue_on_the_lock_file(tmp_path):
    """SQLite on disk: a writer holds an exclusive flock of ``<database>-writer.lock`` for its transaction,
    so writers of other processes (the server's HTTP and grading processes) queue there instead of in
    SQLite's sleeping busy handler; 3 processes x 30 transactions all commit."""
    import fcntl
    import subprocess
    import sys
    from pathlib import Path

    from db.migrate import upgrade

    database = tmp_path / "kdt.sqlite3"
    url = f"sqlite:///{database}"
    upgrade(url)
    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, url, "holder", "1.5", "1"], cwd=root,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "holding\n"
    with open(f"{database}-writer.lock", "rb") as lock:
        with pytest.raises(BlockingIOError):  # held by the other process's open transaction
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert holder.wait(30) == 0
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released with its commit
        fcntl.flock(lock, fcntl.LOCK_UN)
    writers = [subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, url, f"p{n}", "0", "30"], cwd=root)
               for n in range(3)]
    assert [w.wait(120) for w in writers] == [0, 0, 0]
    factory = make_session_factory(url)
    with session_scope(factory, read_only=True) as session:
        names = set(session.scalars(text("SELECT name FROM users")))
    assert names == {"holder-00"} | {f"p{n}-{i:02d}" for n in range(3) for i in range(30)}
