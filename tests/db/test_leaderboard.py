"""Leaderboard and admin listing (`db.leaderboard`), on SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

from db.leaderboard import all_submissions, leaderboard
from db.results import claim_attempt, record_result
from db.session import session_scope
from db.submissions import Submission

T0 = datetime(2026, 11, 1, 8, 0, tzinfo=UTC)


def _set_scores(factory, submission_id, total, task1=None):
    """Store scores directly: these tests are about ranking, not about computing totals."""
    with session_scope(factory) as session:
        submission = session.get(Submission, submission_id)
        submission.task1, submission.total = task1, total


def test_best_submission_per_user_and_ties_to_the_earlier_submission(factory, add_submission):
    # alice: 50 (t+1h), 70 (t+2h), 70 again later (t+3h) -> her t+2h submission counts.
    alice = [add_submission("alice", T0 + timedelta(hours=h)) for h in (1, 2, 3)]
    for sid, total in zip(alice, (50.0, 70.0, 70.0), strict=True):
        _set_scores(factory, sid, total)
    # bob: 70 at t+4h, after alice's 70 -> ranked after alice.
    bob = add_submission("bob", T0 + timedelta(hours=4))
    _set_scores(factory, bob, 70.0, task1=10.0)
    # carol: 90 -> first; dave: same created time as erin, lower id -> dave before erin.
    carol = add_submission("carol", T0 + timedelta(hours=5))
    _set_scores(factory, carol, 90.0)
    dave = add_submission("dave", T0)
    erin = add_submission("erin", T0)
    _set_scores(factory, erin, 20.0)
    _set_scores(factory, dave, 20.0)
    # frank: never scored -> absent.
    add_submission("frank", T0)

    with session_scope(factory) as session:
        board = leaderboard(session)

    assert [(row["rank"], row["user_name"], row["submission_id"]) for row in board] == [
        (1, "carol", carol),
        (2, "alice", alice[1]),
        (3, "bob", bob),
        (4, "dave", dave),
        (5, "erin", erin),
    ]
    assert board[2]["task1"] == 10.0 and board[2]["task2"] is None
    assert board[0]["created"] == T0 + timedelta(hours=5)
    assert set(board[0]) == {
        "rank", "user_id", "user_name", "display_name", "submission_id", "created", "task1", "task2", "task3", "task4", "total"
    }


def test_leaderboard_is_empty_without_scored_submissions(factory, add_submission):
    add_submission("alice")
    with session_scope(factory) as session:
        assert leaderboard(session) == []


def test_all_submissions_lists_everything_oldest_first_with_status(factory, add_submission):
    queued = add_submission("bob", T0 + timedelta(hours=2))
    running = add_submission("alice", T0 + timedelta(hours=1))
    done = add_submission("alice", T0)
    with session_scope(factory) as session:
        claim_attempt(session, running, 1, 0, "w")
        record_result(session, done, 1, 0, "AC", 10, 100.0, "", "w")
    _set_scores(factory, done, 5.0, task1=5.0)

    with session_scope(factory) as session:
        rows = all_submissions(session)

    assert [(r["submission_id"], r["user_name"], r["status"], r["total"]) for r in rows] == [
        (done, "alice", "done", 5.0),
        (running, "alice", "running", None),
        (queued, "bob", "queued", None),
    ]
    assert "source" not in rows[0]
    assert rows[0]["sha256"] == "ab" * 32 and rows[0]["file_name"] == "kernel.py"


def test_organisers_are_not_ranked_unless_asked_for(factory, add_submission):
    from db.users import User

    root, alice = add_submission("root"), add_submission("alice")
    _set_scores(factory, root, 100.0)
    _set_scores(factory, alice, 40.0)
    with session_scope(factory) as session:
        session.query(User).filter(User.name == "root").update({"is_admin": True})
    with session_scope(factory) as session:
        assert [(r["rank"], r["user_name"]) for r in leaderboard(session)] == [(1, "alice")]
        assert [r["user_name"] for r in leaderboard(session, organisers=True)] == ["root", "alice"]
