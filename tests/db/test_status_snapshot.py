"""``Service.status`` reads one snapshot (issue 20, part 6): a totals write that commits between its
statements is either wholly seen or not at all, on SQLite and on a real PostgreSQL (REPEATABLE READ
read-only transactions; READ COMMITTED said ``done`` with every score null)."""
from __future__ import annotations

import db
from db.results import record_result
from db.session import make_engine, make_session_factory, session_scope
from db.submissions import create_submission
from db.totals import finalize_submission
from db.users import get_or_create_user
from grader.config import load_settings
from grader.service import Service
from judger.tasks import POINTS_PER_TASK, WEIGHTS


def _graded_but_unscored(factory) -> int:
    """A submission whose points are all final but whose totals are not stored yet (status ``running``)."""
    with session_scope(factory) as session:
        user_id = get_or_create_user(session, "alice")["id"]
        submission_id = create_submission(session, user_id, "k.py", "ab" * 32, "def get_kernel(t): ...")["id"]
        for task, count in POINTS_PER_TASK.items():
            for point in range(count):
                record_result(session, submission_id, task, point, "AC", 1000, 100.0, "", "w")
    return submission_id


def test_a_totals_write_between_the_status_reads_is_not_half_seen(db_url, tmp_path, monkeypatch):
    service = Service(load_settings(database_url=db_url, data_dir=tmp_path))
    writer_engine = make_engine(db_url)  # a second connection: the grading side
    writer = make_session_factory(writer_engine)
    try:
        service.factory  # noqa: B018  (the schema)
        submission_id = _graded_but_unscored(writer)
        original, written = db.get_user, []

        def get_user_after_a_totals_write(session, user_id):
            # Service.status has read the submission row; the totals commit now, before its next statements.
            if not written:
                with session_scope(writer) as other:
                    finalize_submission(other, submission_id, dict(WEIGHTS), dict(POINTS_PER_TASK))
                written.append(True)
            return original(session, user_id)

        monkeypatch.setattr(db, "get_user", get_user_after_a_totals_write)
        during = service.status(submission_id)
        assert written == [True]
        # The snapshot of the first statement: not scored yet, and the status says so.
        assert during["status"] == "running" and during["total"] is None
        assert all(task["score"] is None for task in during["tasks"].values())

        after = service.status(submission_id)
        assert after["status"] == "done" and after["total"] == 100.0
        assert all(task["score"] is not None for task in after["tasks"].values())
    finally:
        service.close()
        writer_engine.dispose()


def test_read_only_scopes_are_repeatable_read_and_writers_keep_read_committed(postgresql_url):
    from db.migrate import upgrade
    from sqlalchemy import text

    upgrade(postgresql_url)
    engine = make_engine(postgresql_url, pool_size=1, max_overflow=0)  # one connection: reused by both
    factory = make_session_factory(engine)
    try:
        level = "SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only')"
        for _ in range(2):
            with session_scope(factory, read_only=True) as session:
                assert tuple(session.execute(text(level)).one()) == ("repeatable read", "on")
            with session_scope(factory) as session:
                assert tuple(session.execute(text(level)).one()) == ("read committed", "off")
    finally:
        engine.dispose()
