"""The organisers' submission search (`db.search`) and the rejudge batches' before totals
(`db.rejudge_batches`), on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from db.rejudge import start_rejudge
from db.rejudge_batches import batch_items, create_batch, get_batch
from db.results import record_result
from db.search import SubmissionFilter, count_submissions, matching_ids, search_submissions
from db.session import session_scope
from db.submissions import Submission
from db.users import User

T0 = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def _graded(factory, submission_id, verdicts: dict[tuple[int, int], str], task1=None, total=None):
    """Store the given points' verdicts (generation 0) and scores."""
    with session_scope(factory) as session:
        for (task, point), verdict in verdicts.items():
            record_result(session, submission_id, task, point, verdict, None, 0.0, "", "w1")
        submission = session.get(Submission, submission_id)
        submission.task1, submission.total = task1, total


def _people(factory, add_submission):
    """alice: #1 (T0, WA on 2.0), #2 (T0+1h, AC 1.0, task1 5); bob ("Bob B."): #3 (T0+2h, CE on 3.1)."""
    first = add_submission("alice", T0)
    second = add_submission("alice", T0 + timedelta(hours=1))
    third = add_submission("bob", T0 + timedelta(hours=2))
    with session_scope(factory) as session:
        session.query(User).filter(User.name == "bob").update({"display_name": "Bob B."})
    _graded(factory, first, {(2, 0): "WA"}, total=0.0)
    _graded(factory, second, {(1, 0): "AC"}, task1=5.0, total=5.0)
    _graded(factory, third, {(3, 1): "CE"}, total=0.0)
    return first, second, third


def _ids(factory, **conditions):
    with session_scope(factory) as session:
        return [r["submission_id"] for r in search_submissions(session, SubmissionFilter(**conditions))]


def test_filters_by_user_verdict_task_and_time_newest_first(factory, add_submission):
    first, second, third = _people(factory, add_submission)
    assert _ids(factory) == [third, second, first]
    assert _ids(factory, user_name="alice") == [second, first]
    assert _ids(factory, user_name="nobody") == []
    assert _ids(factory, verdict="WA") == [first]
    assert _ids(factory, verdict="CE", task=3) == [third] and _ids(factory, verdict="CE", task=2) == []
    assert _ids(factory, task=1) == [second]  # a task alone: a score above 0 on it
    assert _ids(factory, since=T0 + timedelta(hours=1)) == [third, second]
    assert _ids(factory, since=T0, until=T0 + timedelta(hours=1)) == [first]  # until is exclusive
    assert _ids(factory, up_to_id=second) == [second, first]
    with session_scope(factory) as session:
        rows = search_submissions(session, SubmissionFilter(), offset=1, limit=1)
        assert [(r["submission_id"], r["user_name"], r["display_name"], r["status"]) for r in rows] == [
            (second, "alice", None, "done")]
        assert search_submissions(session, SubmissionFilter(user_name="bob"))[0]["display_name"] == "Bob B."
        assert count_submissions(session, SubmissionFilter(verdict="AC")) == 1
        assert matching_ids(session, SubmissionFilter(user_name="alice")) == [first, second]


def test_a_verdict_of_an_older_generation_no_longer_matches(factory, add_submission):
    first, _, _ = _people(factory, add_submission)
    with session_scope(factory) as session:
        start_rejudge(session, first)
    assert _ids(factory, verdict="WA") == []


def test_a_batch_keeps_the_totals_before_the_rejudge(factory, add_submission):
    first, second, _ = _people(factory, add_submission)
    with session_scope(factory) as session:
        root = session.query(User).filter(User.name == "alice").one().id
        batch = create_batch(session, root, "submissions of alice", [second, first])
        for submission_id in (first, second):
            start_rejudge(session, submission_id)
    with session_scope(factory) as session:
        session.get(Submission, second).total = 7.5  # the new grading's total lands
    with session_scope(factory) as session:
        info = get_batch(session, batch)
        assert (info["description"], info["requested_by_name"], info["count"]) == ("submissions of alice", "alice", 2)
        assert [(r["submission_id"], r["total_before"], r["total"]) for r in batch_items(session, batch)] == [
            (first, 0.0, 0.0), (second, 5.0, 7.5)]
        assert get_batch(session, batch + 1) is None
