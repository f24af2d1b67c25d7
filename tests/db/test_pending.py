"""The sweeper's query (`db.pending.pending_points`), on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from db.pending import pending_points
from db.results import claim_attempt, record_result
from db.session import session_scope
from db.totals import finalize_submission

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
TEN_MINUTES = timedelta(minutes=10)


def _keys(points):
    return [(p["submission_id"], p["task"], p["point"], p["reason"]) for p in points]


def test_missing_and_stuck_points(factory, add_submission, points_per_task):
    old = add_submission("alice", NOW - timedelta(hours=1))
    fresh = add_submission("bob", NOW - timedelta(minutes=1))
    with session_scope(factory) as session:
        for task, count in points_per_task.items():
            for point in range(count):
                if (task, point) == (4, 3):
                    continue  # never claimed: missing
                if (task, point) == (2, 1):
                    claim_attempt(session, old, task, point, "w1", now=NOW - timedelta(minutes=30))  # stuck
                    claim_attempt(session, old, task, point, "w2", now=NOW - timedelta(minutes=20))
                elif (task, point) == (3, 0):
                    claim_attempt(session, old, task, point, "w1", now=NOW - timedelta(minutes=2))  # running
                else:
                    record_result(session, old, task, point, "WA", None, 0.0, "", "w1")
        # A stuck point of a fresh submission counts; its unclaimed points are not missing yet.
        claim_attempt(session, fresh, 1, 0, "w3", now=NOW - timedelta(minutes=11))

    with session_scope(factory) as session:
        points = pending_points(session, TEN_MINUTES, points_per_task, now=NOW)

    assert _keys(points) == [(old, 2, 1, "stuck"), (old, 4, 3, "missing"), (fresh, 1, 0, "stuck")]
    assert points[0]["attempts"] == 2
    assert points[0]["started_at"] == NOW - timedelta(minutes=20)
    assert points[1]["attempts"] == 0 and points[1]["started_at"] is None


def test_an_enqueued_but_unclaimed_submission_is_missing_everything(factory, add_submission, points_per_task):
    lost = add_submission("alice", NOW - timedelta(hours=2))
    with session_scope(factory) as session:
        points = pending_points(session, TEN_MINUTES, points_per_task, now=NOW)
    assert len(points) == sum(points_per_task.values())
    assert {p["submission_id"] for p in points} == {lost}
    assert {p["reason"] for p in points} == {"missing"}


def test_scored_submissions_have_nothing_pending(factory, add_submission, weights, points_per_task):
    done = add_submission("alice", NOW - timedelta(hours=2))
    with session_scope(factory) as session:
        for task, count in points_per_task.items():
            for point in range(count):
                record_result(session, done, task, point, "CE", None, 0.0, "no get_kernel", "w")
    with session_scope(factory) as session:
        assert finalize_submission(session, done, weights, points_per_task) is not None
    with session_scope(factory) as session:
        assert pending_points(session, TEN_MINUTES, points_per_task, now=NOW) == []
        with pytest.raises(ValueError):
            pending_points(session, -TEN_MINUTES, points_per_task, now=NOW)
