"""The organisers' page queries (`db.activity`): running points and the workers seen recently, on SQLite
and PostgreSQL; and `db.traces` (a trace per point, replaced and deleted)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from db.activity import recent_workers, running_points
from db.results import claim_attempt, record_result
from db.session import session_scope
from db.traces import delete_traces, get_trace, get_traces, store_trace, traced_points

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def test_running_points_and_recent_workers(factory, add_submission):
    sid = add_submission("alice")
    with session_scope(factory) as session:
        claim_attempt(session, sid, 1, 0, "host-a:11", now=NOW - timedelta(minutes=20))
        claim_attempt(session, sid, 1, 1, "host-b:22", now=NOW - timedelta(minutes=5))
        claim_attempt(session, sid, 2, 0, "host-b:22", now=NOW - timedelta(minutes=4))
        record_result(session, sid, 2, 0, "AC", 100, 50.0, "", "host-b:22", finished_at=NOW - timedelta(minutes=3))
        claim_attempt(session, sid, 3, 0, "host-old:33", now=NOW - timedelta(hours=3))
        record_result(session, sid, 3, 0, "WA", 100, 0.0, "", "host-old:33", finished_at=NOW - timedelta(hours=2))
    with session_scope(factory) as session:
        running = running_points(session)
        workers = recent_workers(session, NOW - timedelta(hours=1))
    assert [(r["task"], r["point"], r["worker"], r["started_at"], r["attempts"]) for r in running] == [
        (1, 0, "host-a:11", NOW - timedelta(minutes=20), 1), (1, 1, "host-b:22", NOW - timedelta(minutes=5), 1)]
    assert workers == [
        {"worker": "host-b:22", "last_seen": NOW - timedelta(minutes=3), "graded": 1, "running": 1},
        {"worker": "host-a:11", "last_seen": NOW - timedelta(minutes=20), "graded": 0, "running": 1},
    ]  # host-old was last seen two hours ago


def test_traces_are_stored_replaced_and_deleted(factory, add_submission):
    sid, other = add_submission("alice"), add_submission("bob")
    with session_scope(factory) as session:
        store_trace(session, sid, 1, 0, b"first")
        store_trace(session, sid, 1, 0, b"second")
        store_trace(session, sid, 2, 1, b"x" * 100_000)
        store_trace(session, other, 1, 0, b"bob's")
    with session_scope(factory) as session:
        assert get_trace(session, sid, 1, 0) == b"second"
        assert traced_points(session, sid) == {(1, 0), (2, 1)}
        assert get_traces(session, sid) == {(1, 0): b"second", (2, 1): b"x" * 100_000}
        store_trace(session, sid, 1, 0, None)
    with session_scope(factory) as session:
        assert traced_points(session, sid) == {(2, 1)} and get_trace(session, sid, 1, 0) is None
        assert delete_traces(session, sid) == 1
    with session_scope(factory) as session:
        assert get_traces(session, sid) == {} and get_traces(session, other) == {(1, 0): b"bob's"}
