"""The derived submission status (`db.status`), on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

from db.results import claim_attempt, record_result
from db.session import session_scope
from db.status import SubmissionStatus, submission_status
from db.totals import finalize_submission


def _status(factory, submission_id):
    with session_scope(factory) as session:
        return submission_status(session, submission_id)


def _grade_all(factory, submission_id, points_per_task, verdict_of=lambda task, point: "AC"):
    with session_scope(factory) as session:
        for task, count in points_per_task.items():
            for point in range(count):
                verdict = verdict_of(task, point)
                score = 100.0 if verdict == "AC" else 0.0
                record_result(session, submission_id, task, point, verdict, None, score, "", "w")


def test_status_goes_queued_running_done_and_back_to_running_on_rejudge(
    factory, submission_id, weights, points_per_task
):
    assert _status(factory, submission_id) is SubmissionStatus.QUEUED
    with session_scope(factory) as session:
        claim_attempt(session, submission_id, 1, 0, "w")
    assert _status(factory, submission_id) is SubmissionStatus.RUNNING

    _grade_all(factory, submission_id, points_per_task)
    assert _status(factory, submission_id) is SubmissionStatus.RUNNING  # all finished, totals not stored yet
    with session_scope(factory) as session:
        finalize_submission(session, submission_id, weights, points_per_task)
    assert _status(factory, submission_id) is SubmissionStatus.DONE

    with session_scope(factory) as session:
        claim_attempt(session, submission_id, 2, 1, "w")
    assert _status(factory, submission_id) is SubmissionStatus.RUNNING


def test_internal_error_makes_a_scored_submission_failed(factory, submission_id, weights, points_per_task):
    _grade_all(factory, submission_id, points_per_task, lambda task, point: "IE" if task == 3 else "AC")
    with session_scope(factory) as session:
        finalize_submission(session, submission_id, weights, points_per_task)
    status = _status(factory, submission_id)
    assert status is SubmissionStatus.FAILED
    assert status == "failed"


def test_status_of_a_missing_submission(factory):
    with session_scope(factory) as session, pytest.raises(LookupError):
        submission_status(session, 424242)
