"""Task scores and totals (`db.totals.finalize_submission`), on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from db.results import claim_attempt, record_result
from db.session import session_scope
from db.submissions import Submission, get_submission
from db.totals import finalize_submission
from judger.scoring import task_score

# A concrete submission: (task, point) -> (verdict, score).
EXAMPLE = {
    (1, 0): ("AC", 100.0), (1, 1): ("AC", 55.0),
    (2, 0): ("AC", 100.0), (2, 1): ("WA", 0.0),
    (3, 0): ("TLE", 0.0), (3, 1): ("CE", 0.0),
    (4, 0): ("AC", 100.0), (4, 1): ("AC", 80.0), (4, 2): ("AC", 60.0), (4, 3): ("RE", 0.0),
}
# task1 = (100 + 55) / 2 * 10 / 100; task2 = 50 * 0.2; task3 = 0; task4 = 60 * 0.4.
EXPECTED = {"task1": 7.75, "task2": 10.0, "task3": 0.0, "task4": 24.0, "total": 41.75}


def _record(factory, submission_id, points):
    with session_scope(factory) as session:
        for (task, point), (verdict, score) in points.items():
            record_result(session, submission_id, task, point, verdict, None, score, "", "w")


def _stored(factory, submission_id):
    with session_scope(factory) as session:
        row = get_submission(session, submission_id)
    return {key: row[key] for key in EXPECTED}


def test_finalize_stores_task_scores_and_total(factory, submission_id, weights, points_per_task):
    _record(factory, submission_id, EXAMPLE)
    with session_scope(factory) as session:
        returned = finalize_submission(session, submission_id, weights, points_per_task)
    assert returned == pytest.approx(EXPECTED)
    assert _stored(factory, submission_id) == returned
    assert returned["task1"] == 7.75


def test_finalize_is_idempotent(factory, submission_id, weights, points_per_task):
    _record(factory, submission_id, EXAMPLE)
    results = []
    for _ in range(2):
        with session_scope(factory) as session:
            results.append(finalize_submission(session, submission_id, weights, points_per_task))
    assert results[0] == results[1]
    assert _stored(factory, submission_id) == results[0]


def test_finalize_waits_for_missing_and_running_points(factory, submission_id, weights, points_per_task):
    incomplete = dict(EXAMPLE)
    del incomplete[(4, 3)]
    _record(factory, submission_id, incomplete)
    with session_scope(factory) as session:
        assert finalize_submission(session, submission_id, weights, points_per_task) is None
    with session_scope(factory) as session:
        claim_attempt(session, submission_id, 4, 3, "w")
        assert finalize_submission(session, submission_id, weights, points_per_task) is None
    assert set(_stored(factory, submission_id).values()) == {None}

    _record(factory, submission_id, {(4, 3): ("RE", 0.0)})
    with session_scope(factory) as session:
        assert finalize_submission(session, submission_id, weights, points_per_task) == pytest.approx(EXPECTED)


def test_finalize_recomputes_after_a_rejudged_point(factory, submission_id, weights, points_per_task):
    _record(factory, submission_id, EXAMPLE)
    with session_scope(factory) as session:
        finalize_submission(session, submission_id, weights, points_per_task)
    _record(factory, submission_id, {(4, 3): ("AC", 100.0)})
    with session_scope(factory) as session:
        totals = finalize_submission(session, submission_id, weights, points_per_task)
    assert totals["task4"] == pytest.approx(34.0)
    assert totals["total"] == pytest.approx(51.75)


def test_finalize_with_a_subset_of_tasks_and_the_judgers_formula(factory, submission_id):
    _record(factory, submission_id, {(1, 0): ("AC", 100.0), (1, 1): ("AC", 55.0)})
    with session_scope(factory) as session:
        totals = finalize_submission(
            session, submission_id, {1: 10}, {1: 2}, task_score=lambda scores, weight: max(scores) * weight / 100
        )
    assert totals == {"task1": 10.0, "task2": None, "task3": None, "task4": None, "total": 10.0}


def test_finalize_rejects_bad_input(factory, submission_id, weights, points_per_task):
    with session_scope(factory) as session:
        with pytest.raises(LookupError):
            finalize_submission(session, 999_999, weights, points_per_task)
        with pytest.raises(ValueError, match="different tasks"):
            finalize_submission(session, submission_id, {1: 10}, {1: 2, 2: 2})
        with pytest.raises(ValueError, match="no score column"):
            finalize_submission(session, submission_id, {5: 10}, {5: 1})
        with pytest.raises(ValueError, match="at least one"):
            finalize_submission(session, submission_id, {1: 10}, {1: 0})
        assert session.scalar(select(Submission.total).where(Submission.id == submission_id)) is None


def test_the_task_score_finalize_uses_by_default():
    assert task_score([100.0, 55.0], 10) == 7.75
    assert task_score([100.0] * 4, 40) == 40.0
    with pytest.raises(ValueError):
        task_score([], 10)
