"""The plots' series (``grader.service.progress``) with exact values, over a SQLite database whose rows are
written straight (no grading): the best-so-far steps follow the leaderboard's rule; the scoreboard's graph
counts exactly what the public board counts (the freeze, organisers left out, the top 10); a contestant's
own series is theirs in full; the last hour's minutes (queue, graded, verdicts) from the result rows."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import db
from db.submissions import Submission
from grader.judging.pipeline import ALL_POINTS
from grader.service import accounts, contest, progress, standings
from grader.service.rows import iso
from judger.verdicts import VERDICTS

T = datetime(2099, 12, 6, 9, 0, tzinfo=UTC)  # far in the future: the real clock never passes it
MINUTE = timedelta(minutes=1)


@pytest.fixture
def service(make_deployment):
    deployment = make_deployment()
    deployment.service.init_db()
    return deployment.service


def scored(service, user: str, minutes: float, tasks: tuple, admin: bool = False) -> int:
    """A submission of ``user`` created ``minutes`` after ``T`` with the task scores ``tasks`` (its total
    their sum), stored straight; returns its id."""
    with service.session() as session:
        user_id = db.get_or_create_user(session, user)["id"]
        if admin:
            session.execute(db.users.User.__table__.update().where(db.users.User.id == user_id).values(is_admin=True))
        sid = db.create_submission(session, user_id, "k.py", "ab" * 32, "x = 1\n",
                                   created=T + minutes * MINUTE)["id"]
        row = session.get(Submission, sid)
        row.task1, row.task2, row.task3, row.task4 = tasks
        row.total = sum(v for v in tasks if v is not None)
    return sid


def test_best_steps_rise_only_on_a_higher_total():
    rows = [{"created": T + k * MINUTE, "submission_id": k, "total": total}
            for k, total in enumerate([5.0, 3.0, 5.0, 7.5, 7.5, 20.0])]
    assert progress.best_steps(rows) == [
        {"at": iso(T), "submission_id": 0, "total": 5.0},
        {"at": iso(T + 3 * MINUTE), "submission_id": 3, "total": 7.5},
        {"at": iso(T + 5 * MINUTE), "submission_id": 5, "total": 20.0}]
    assert progress.best_steps([]) == []


def test_the_scoreboard_graph_counts_what_the_public_board_counts(service):
    contest.set_rules(service, starts_at=T, ends_at=T + timedelta(hours=5), freeze_at=T + timedelta(hours=4))
    a1 = scored(service, "alice", 10, (5.0, 0.0, None, None))
    a2 = scored(service, "alice", 30, (10.0, 2.5, None, None))
    scored(service, "alice", 40, (10.0, 0.0, None, None))            # lower: no step
    b1 = scored(service, "bob", 20, (10.0, 20.0, 0.0, 0.0))
    scored(service, "root", 5, (10.0, 20.0, 30.0, 40.0), admin=True)  # organisers are not on the board

    before = progress.scoreboard_progress(service, now=T + timedelta(hours=3))
    assert (before["frozen"], before["start"], before["end"]) == (False, iso(T), iso(T + timedelta(hours=3)))
    assert [(u["rank"], u["user_name"], u["total"]) for u in before["users"]] == [(1, "bob", 30.0), (2, "alice", 12.5)]
    assert before["users"][1]["steps"] == [{"at": iso(T + 10 * MINUTE), "submission_id": a1, "total": 5.0},
                                          {"at": iso(T + 30 * MINUTE), "submission_id": a2, "total": 12.5}]
    assert before["users"][0]["steps"] == [{"at": iso(T + 20 * MINUTE), "submission_id": b1, "total": 30.0}]

    a4 = scored(service, "alice", 250, (10.0, 20.0, 30.0, 0.0))      # after the freeze
    frozen_now = T + timedelta(hours=4, minutes=30)
    frozen = progress.scoreboard_progress(service, now=frozen_now)
    board = standings.public_leaderboard(service, now=frozen_now)
    assert frozen["frozen"] is True and frozen["end"] == iso(T + timedelta(hours=4)) == frozen["freeze_at"]
    assert [(u["user_name"], u["total"]) for u in frozen["users"]] == [(r["user_name"], r["total"]) for r in board["rows"]]
    assert all(u["steps"][-1]["total"] == u["total"] for u in frozen["users"])
    assert a4 not in [s["submission_id"] for u in frozen["users"] for s in u["steps"]]

    contest.unfreeze(service, now=T + timedelta(hours=6))
    after = progress.scoreboard_progress(service, now=T + timedelta(hours=7))
    assert after["end"] == iso(T + timedelta(hours=5))  # the contest's end, once past
    assert [u["user_name"] for u in after["users"]] == ["alice", "bob"]
    assert after["users"][0]["steps"][-1] == {"at": iso(T + 250 * MINUTE), "submission_id": a4, "total": 60.0}
    csv = progress.scoreboard_progress_csv(after).splitlines()
    assert csv[0] == "rank,user_name,at,submission_id,total"
    assert csv[1:] == [f"1,alice,{iso(T + 10 * MINUTE)},{a1},5.0", f"1,alice,{iso(T + 30 * MINUTE)},{a2},12.5",
                       f"1,alice,{iso(T + 250 * MINUTE)},{a4},60.0", f"2,bob,{iso(T + 20 * MINUTE)},{b1},30.0"]


def test_the_scoreboard_graph_shows_the_top_ten_only(service):
    for k in range(12):
        scored(service, f"user{k:02d}", k, (float(k), None, None, None))
    shown = progress.scoreboard_progress(service, now=T + timedelta(hours=1))
    assert [u["user_name"] for u in shown["users"]] == [f"user{k:02d}" for k in range(11, 1, -1)]
    assert shown["start"] == iso(T + 2 * MINUTE)  # no contest start: the first step drawn


def test_a_contestants_own_series_is_theirs_in_full_whatever_the_freeze(service):
    contest.set_rules(service, freeze_at=T)  # frozen from T on: the board hides everything below
    _, token = accounts.add_user(service, "alice")
    account = accounts.authenticate(service, token)
    a1 = scored(service, "alice", 10, (5.0, 0.0, None, None))
    a2 = scored(service, "alice", 20, (2.0, 0.0, None, None))
    scored(service, "bob", 15, (10.0, 0.0, None, None))
    with service.session() as session:  # an unscored one is left out
        db.create_submission(session, account.id, "k.py", "cd" * 32, "x = 2\n", created=T + 30 * MINUTE)
    own = progress.own_progress(service, account)
    assert own == {"user": "alice", "submissions": [
        {"submission_id": a1, "created": iso(T + 10 * MINUTE), "task1": 5.0, "task2": 0.0, "task3": None,
         "task4": None, "total": 5.0, "best": 5.0},
        {"submission_id": a2, "created": iso(T + 20 * MINUTE), "task1": 2.0, "task2": 0.0, "task3": None,
         "task4": None, "total": 2.0, "best": 5.0}]}
    assert progress.own_progress_csv(own).splitlines() == [
        "submission_id,created,task1,task2,task3,task4,total,best",
        f"{a1},{iso(T + 10 * MINUTE)},5.0,0.0,,,5.0,5.0", f"{a2},{iso(T + 20 * MINUTE)},2.0,0.0,,,2.0,5.0"]


def test_activity_minutes_count_the_queue_and_the_verdicts():
    since = T
    points = 4
    history = [
        # created before the window, two points done in minute 1, one in minute 2, one still running
        {"created": T - 5 * MINUTE, "generation": 0, "rows": [
            {"started_at": T, "finished_at": T + 1.5 * MINUTE}, {"started_at": T, "finished_at": T + 1.2 * MINUTE},
            {"started_at": T, "finished_at": T + 2.5 * MINUTE}, {"started_at": T + 2 * MINUTE, "finished_at": None}]},
        # created in minute 1, nothing claimed yet
        {"created": T + 1.1 * MINUTE, "generation": 0, "rows": []},
        # rejudged: counts from its first claim (minute 2)
        {"created": T - timedelta(days=1), "generation": 1, "rows": [
            {"started_at": T + 2.2 * MINUTE, "finished_at": T + 2.4 * MINUTE}]},
        # scored with two rows only (its other points were never to be graded): one point waits in minute 1
        {"created": T + 0.5 * MINUTE, "generation": 0, "scored": True, "rows": [
            {"started_at": T, "finished_at": T + 0.7 * MINUTE}, {"started_at": T, "finished_at": T + 1.5 * MINUTE}]},
    ]
    finished = [{"finished_at": T + 1.2 * MINUTE, "verdict": "AC"}, {"finished_at": T + 1.5 * MINUTE, "verdict": "WA"},
                {"finished_at": T + 2.5 * MINUTE, "verdict": "AC"}, {"finished_at": T + 2.4 * MINUTE, "verdict": "AC"}]
    minutes = progress.activity_minutes(history, finished, since, 3, points=points)
    assert [m["end"] for m in minutes] == [iso(T + MINUTE), iso(T + 2 * MINUTE), iso(T + 3 * MINUTE)]
    assert [m["queue"] for m in minutes] == [4 + 1, 2 + 4, 1 + 4 + 3]
    assert [m["graded"] for m in minutes] == [0, 2, 2]
    assert minutes[1]["verdicts"] == {**dict.fromkeys(VERDICTS, 0), "AC": 1, "WA": 1}
    assert list(minutes[2]["verdicts"]) == list(VERDICTS)


def test_grading_activity_reads_the_result_rows_of_the_last_hour(service):
    now = datetime.now(UTC).replace(second=30, microsecond=0)  # the minutes are whole UTC minutes
    with service.session() as session:
        user_id = db.get_or_create_user(session, "alice")["id"]
        old = db.create_submission(session, user_id, "k.py", "ab" * 32, "x = 1\n", created=now - 3 * timedelta(hours=1))["id"]
        new = db.create_submission(session, user_id, "k.py", "cd" * 32, "x = 2\n", created=now - 10 * MINUTE)["id"]
        for task, point in ALL_POINTS:  # the old one: graded long ago, out of the window
            db.record_result(session, old, task, point, "AC", 100, 1.0, "", "w", started_at=now - 3 * timedelta(hours=1),
                             finished_at=now - 3 * timedelta(hours=1))
        (t1, p1), (t2, p2) = ALL_POINTS[:2]
        db.record_result(session, new, t1, p1, "AC", 100, 1.0, "", "w", started_at=now - 9 * MINUTE,
                         finished_at=now - 8.75 * MINUTE)
        db.record_result(session, new, t2, p2, "CE", None, 0.0, "no", "w", started_at=now - 9 * MINUTE,
                         finished_at=now - 8.75 * MINUTE)
    activity = progress.grading_activity(service, now=now)
    end = now + MINUTE / 2  # the end of the current minute
    assert len(activity["minutes"]) == 60 and activity["end"] == iso(end) and activity["start"] == iso(end - 60 * MINUTE)
    assert activity["graded"] == 2 and activity["verdicts"] == {**dict.fromkeys(VERDICTS, 0), "AC": 1, "CE": 1}
    queue = [m["queue"] for m in activity["minutes"]]
    total = len(ALL_POINTS)
    assert queue[:49] == [0] * 49 and queue[49] == total and queue[50:] == [total - 2] * 10
    assert activity["minutes"][50]["graded"] == 2
    lines = progress.grading_activity_csv(activity).splitlines()
    assert lines[0] == "start,end,queue,graded," + ",".join(VERDICTS) and len(lines) == 61
    assert lines[51].endswith(f",{total - 2},2,1,0,1,0,0,0,0,0")
