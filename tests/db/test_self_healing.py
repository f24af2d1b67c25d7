"""The self-healing tables and rules (issue 11), on SQLite and PostgreSQL: the outbox, leases,
generations (a rejudge keeps the old totals until the new ones land), heartbeats and the sweeper's
queries for missing totals and running points."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from db.leaderboard import leaderboard
from db.locks import acquire_lease, live_leases, release_lease
from db.outbox import add_outbox, delete_outbox, list_outbox, outbox_keys
from db.pending import pending_points, running_points, unscored_complete
from db.rejudge import start_rejudge
from db.results import beat, claim_attempt, get_result, record_result
from db.session import session_scope
from db.status import SubmissionStatus, submission_status
from db.totals import finalize_submission

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _grade_all(factory, submission_id, points_per_task, generation=0, score=100.0):
    with session_scope(factory) as session:
        for task, count in points_per_task.items():
            for point in range(count):
                record_result(session, submission_id, task, point, "AC" if score else "WA", 10, score, "", "w",
                              generation=generation)


def test_the_outbox_keeps_one_row_per_message_until_it_is_sent(factory, submission_id):
    with session_scope(factory) as session:
        assert add_outbox(session, "compile", submission_id) == f"compile {submission_id}"
        assert add_outbox(session, "compile", submission_id) == f"compile {submission_id}"
        assert add_outbox(session, "judge", submission_id, 4, 3) == f"judge {submission_id} 4.3"
    with session_scope(factory) as session:
        rows = list_outbox(session)
        assert [(r["key"], r["kind"], r["task"], r["point"], r["attempts"]) for r in rows] == [
            (f"compile {submission_id}", "compile", None, None, 0), (f"judge {submission_id} 4.3", "judge", 4, 3, 0)]
        assert outbox_keys(session) == {("compile", submission_id, None, None), ("judge", submission_id, 4, 3)}
        delete_outbox(session, rows[0]["id"])
    with session_scope(factory) as session:
        assert [r["key"] for r in list_outbox(session)] == [f"judge {submission_id} 4.3"]


def test_a_lease_has_one_holder_until_it_expires_or_is_released(factory):
    ttl = timedelta(seconds=30)
    with session_scope(factory) as session:
        assert acquire_lease(session, "sweeper", "a:1", ttl, now=NOW)
    with session_scope(factory) as session:
        assert not acquire_lease(session, "sweeper", "b:2", ttl, now=NOW + timedelta(seconds=10))
        assert acquire_lease(session, "sweeper", "a:1", ttl, now=NOW + timedelta(seconds=10))  # renewal
        assert live_leases(session, "swe", now=NOW + timedelta(seconds=39)) == {"sweeper"}
        assert live_leases(session, "swe", now=NOW + timedelta(seconds=41)) == set()
    with session_scope(factory) as session:  # a:1 died: after expiry b:2 takes it
        assert acquire_lease(session, "sweeper", "b:2", ttl, now=NOW + timedelta(seconds=41))
    with session_scope(factory) as session:
        release_lease(session, "sweeper", "a:1")  # not the holder: nothing happens
        assert not acquire_lease(session, "sweeper", "c:3", ttl, now=NOW + timedelta(seconds=42))
        release_lease(session, "sweeper", "b:2")
    with session_scope(factory) as session:
        assert acquire_lease(session, "sweeper", "c:3", ttl, now=NOW + timedelta(seconds=42))


def test_a_rejudge_keeps_the_old_totals_until_the_new_generation_lands(factory, submission_id, weights,
                                                                       points_per_task):
    _grade_all(factory, submission_id, points_per_task)
    with session_scope(factory) as session:
        assert finalize_submission(session, submission_id, weights, points_per_task)["total"] == 100.0
        assert start_rejudge(session, submission_id) == 1
    with session_scope(factory) as session:
        assert submission_status(session, submission_id) is SubmissionStatus.QUEUED
        assert [r["total"] for r in leaderboard(session)] == [100.0]  # still on the leaderboard
        # The old generation's rows do not count; the totals wait for the new generation.
        assert finalize_submission(session, submission_id, weights, points_per_task) is None
        assert claim_attempt(session, submission_id, 1, 0, "w2", generation=1) == 1  # attempts start again
    with session_scope(factory) as session:
        assert submission_status(session, submission_id) is SubmissionStatus.RUNNING
    _grade_all(factory, submission_id, points_per_task, generation=1, score=0.0)
    with session_scope(factory) as session:  # a late result of generation 0 cannot overwrite generation 1
        assert record_result(session, submission_id, 1, 0, "AC", 10, 100.0, "", "old", generation=0) is None
        assert finalize_submission(session, submission_id, weights, points_per_task)["total"] == 0.0
    with session_scope(factory) as session:
        assert submission_status(session, submission_id) is SubmissionStatus.DONE
        assert [r["total"] for r in leaderboard(session)] == [0.0]
        assert get_result(session, submission_id, 1, 0)["worker"] == "w"


def test_heartbeats_and_the_sweepers_queries(factory, add_submission, weights, points_per_task):
    old = add_submission("alice", NOW - timedelta(hours=1))
    _grade_all(factory, old, points_per_task)  # every point final, totals never stored
    beating = add_submission("bob", NOW - timedelta(hours=1))
    with session_scope(factory) as session:
        claim_attempt(session, beating, 1, 0, "w1", now=NOW - timedelta(minutes=30))
        claim_attempt(session, beating, 1, 1, "w2", now=NOW - timedelta(minutes=30))
    with session_scope(factory) as session:
        assert beat(session, beating, [(1, 0)], "w1", now=NOW - timedelta(seconds=5)) == 1
        assert beat(session, beating, [(1, 1)], "someone else", now=NOW) == 0
    with session_scope(factory) as session:
        assert unscored_complete(session, points_per_task) == [old]
        stuck = [(p["task"], p["point"]) for p in pending_points(session, timedelta(seconds=30), points_per_task,
                                                                 now=NOW) if p["reason"] == "stuck"]
        assert stuck == [(1, 1)]  # 1.0's heartbeat is 5 s old
        assert sorted((r["task"], r["point"], r["worker"]) for r in running_points(session)) == [
            (1, 0, "w1"), (1, 1, "w2")]
        finalize_submission(session, old, weights, points_per_task)
    with session_scope(factory) as session:
        assert unscored_complete(session, points_per_task) == []
