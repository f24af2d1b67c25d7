"""Idempotent result writes and attempt counting (`db.results`), on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from db.results import TestPointResult, claim_attempt, get_result, list_results, record_result
from db.session import session_scope

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _row_count(factory, submission_id):
    with session_scope(factory) as session:
        return session.scalar(
            select(func.count()).select_from(TestPointResult).where(TestPointResult.submission_id == submission_id)
        )


def test_record_result_twice_keeps_one_row_with_the_new_values(factory, submission_id):
    with session_scope(factory) as session:
        record_result(session, submission_id, 2, 1, "WA", None, 0.0, "mismatch at C[0, 0]", "w1", finished_at=T0)
    with session_scope(factory) as session:
        returned = record_result(
            session, submission_id, 2, 1, "AC", 60000, 97.5, "", "w2", wall_seconds=3.25,
            finished_at=T0 + timedelta(minutes=1),
        )

    assert _row_count(factory, submission_id) == 1
    with session_scope(factory) as session:
        row = get_result(session, submission_id, 2, 1)
    assert row == returned
    assert (row["verdict"], row["cycles"], row["score"], row["message"], row["worker"]) == (
        "AC", 60000, 97.5, "", "w2"
    )
    assert row["finished_at"] == T0 + timedelta(minutes=1)
    assert row["wall_seconds"] == 3.25
    assert row["attempts"] == 0


def test_claim_attempt_counts_one_two_three(factory, submission_id):
    counts = []
    for worker in ("w1", "w2", "w3"):
        with session_scope(factory) as session:
            counts.append(claim_attempt(session, submission_id, 4, 3, worker))
    assert counts == [1, 2, 3]
    with session_scope(factory) as session:
        row = get_result(session, submission_id, 4, 3)
    assert (row["attempts"], row["worker"], row["verdict"], row["finished_at"]) == (3, "w3", None, None)
    assert _row_count(factory, submission_id) == 1


def test_a_claim_made_on_the_row_it_saw_fails_once_another_claim_or_result_came_between(factory, submission_id):
    with session_scope(factory) as session:
        assert claim_attempt(session, submission_id, 3, 0, "w1", seen=None) == 1
    with session_scope(factory) as session:
        assert claim_attempt(session, submission_id, 3, 0, "w2", seen=None) is None  # w1 created it meanwhile
        first = get_result(session, submission_id, 3, 0)
    with session_scope(factory) as session:
        assert claim_attempt(session, submission_id, 3, 0, "w2", seen=first) == 2
    with session_scope(factory) as session:
        assert claim_attempt(session, submission_id, 3, 0, "w3", seen=first) is None  # w2 claimed meanwhile
        second = get_result(session, submission_id, 3, 0)
    with session_scope(factory) as session:
        record_result(session, submission_id, 3, 0, "AC", 10, 100.0, "", "w2")
    with session_scope(factory) as session:
        assert claim_attempt(session, submission_id, 3, 0, "w3", seen=second) is None  # a result came
        row = get_result(session, submission_id, 3, 0)
    assert (row["attempts"], row["worker"], row["verdict"]) == (2, "w2", "AC")
    with session_scope(factory) as session:  # the row as it is now: claimed (e.g. the sweeper's retry)
        assert claim_attempt(session, submission_id, 3, 0, "w3", seen=row) == 3
    assert _row_count(factory, submission_id) == 1


def test_claim_then_record_keeps_attempts_and_start_time(factory, submission_id):
    with session_scope(factory) as session:
        claim_attempt(session, submission_id, 1, 0, "w1", queued_at=T0, now=T0 + timedelta(seconds=5))
    with session_scope(factory) as session:
        record_result(
            session, submission_id, 1, 0, "AC", 1000, 100.0, "", "w1",
            finished_at=T0 + timedelta(seconds=9), wall_seconds=4.0,
        )
    with session_scope(factory) as session:
        row = get_result(session, submission_id, 1, 0)
    assert row["attempts"] == 1
    assert row["queued_at"] == T0
    assert row["started_at"] == T0 + timedelta(seconds=5)
    assert row["finished_at"] == T0 + timedelta(seconds=9)
    assert row["started_at"].tzinfo is not None and row["started_at"].utcoffset() == timedelta(0)


def test_claim_after_a_result_clears_the_outcome_until_the_next_record(factory, submission_id):
    with session_scope(factory) as session:
        record_result(session, submission_id, 1, 1, "IE", None, 0.0, "simulator crashed", "w1", queued_at=T0)
    with session_scope(factory) as session:
        assert claim_attempt(session, submission_id, 1, 1, "w2", queued_at=T0 + timedelta(hours=1)) == 1
    with session_scope(factory) as session:
        row = get_result(session, submission_id, 1, 1)
    assert (row["verdict"], row["score"], row["cycles"], row["message"], row["finished_at"]) == (
        None, None, None, "", None
    )
    assert row["queued_at"] == T0  # the first queue time is kept


def test_list_results_orders_by_task_and_point(factory, submission_id):
    with session_scope(factory) as session:
        for task, point in [(3, 1), (1, 1), (3, 0), (1, 0)]:
            record_result(session, submission_id, task, point, "WA", None, 0.0, "", "w")
    with session_scope(factory) as session:
        rows = list_results(session, submission_id)
    assert [(r["task"], r["point"]) for r in rows] == [(1, 0), (1, 1), (3, 0), (3, 1)]
    assert all(type(r) is dict for r in rows)


@pytest.mark.parametrize(
    ("verdict", "score", "cycles", "match"),
    [
        ("OK", 0.0, None, "unknown verdict"),
        ("AC", 100.5, 10, "within 0..100"),
        ("AC", -1.0, 10, "within 0..100"),
        ("WA", 5.0, None, "only AC scores above zero"),
        ("AC", 50.0, -1, "cycles"),
    ],
)
def test_record_result_rejects_invalid_outcomes(factory, submission_id, verdict, score, cycles, match):
    with session_scope(factory) as session, pytest.raises(ValueError, match=match):
        record_result(session, submission_id, 1, 0, verdict, cycles, score, "", "w")
    assert _row_count(factory, submission_id) == 0


def test_invalid_points_are_rejected(factory, submission_id):
    with session_scope(factory) as session:
        with pytest.raises(ValueError, match="invalid test point"):
            claim_attempt(session, submission_id, 0, 0, "w")
        with pytest.raises(ValueError, match="invalid test point"):
            record_result(session, submission_id, 1, -1, "WA", None, 0.0, "", "w")


def test_results_need_an_existing_submission(factory):
    with pytest.raises(IntegrityError), session_scope(factory) as session:
        record_result(session, 12345, 1, 0, "WA", None, 0.0, "", "w")
    with pytest.raises(IntegrityError), session_scope(factory) as session:
        claim_attempt(session, 12345, 1, 0, "w")


def test_database_checks_reject_bad_verdicts_written_directly(factory, submission_id):
    with pytest.raises(IntegrityError), session_scope(factory) as session:
        session.add(TestPointResult(submission_id=submission_id, task=1, point=0, verdict="XX"))
