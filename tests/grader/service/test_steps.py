"""The grading steps of grader.service without a broker: attempts, duplicate deliveries, a dying pool
process in the embedded mode, a corrupted source. Compiled points are stored directly (no sandbox)."""
import concurrent.futures
from concurrent.futures.process import BrokenProcessPool
import socket
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

import db
from db.submissions import Submission
from grader.judging.pipeline import ALL_POINTS
from grader.runtime.processes import worker_gone
from judger.verdicts import Verdict
from service_testlib import wait_until

CE = {"verdict": "CE", "message": "this file does not solve the task", "compile_s": 0.5}


@pytest.fixture
def deployment(make_deployment, sqlite_url):
    return make_deployment(database_url=sqlite_url, max_attempts=3)


@pytest.fixture
def submission_id(deployment):
    """An accepted submission whose every test point is compiled (to CE: judging is instant)."""
    submission_id = deployment.service.accept(b"def get_kernel(t):\n    return None\n", "none.py", "alice")
    with deployment.service.session() as session:
        db.store_compiled(session, submission_id, {p: CE for p in ALL_POINTS})
    return submission_id


def _row(deployment, submission_id, task, point):
    with deployment.service.session() as session:
        return db.get_result(session, submission_id, task, point)


def _dead_worker() -> str:
    """The worker name of a process of this host that has exited (its claims are free to take over)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return f"{socket.gethostname()}:{proc.pid}"


def test_a_point_whose_grader_died_max_attempts_times_ends_as_ie(deployment, submission_id):
    service = deployment.service
    for _ in range(3):  # three deliveries claimed the point and died
        assert service.begin_point(submission_id, 1, 0, _dead_worker()) == CE
    result = service.judge_point(submission_id, 1, 0, worker="host:2")
    assert result.verdict is Verdict.IE and "died 3 times" in result.message
    row = _row(deployment, submission_id, 1, 0)
    assert (row["verdict"], row["score"], row["attempts"], row["worker"]) == ("IE", 0.0, 4, "host:2")


def test_a_point_claimed_by_a_killed_process_not_yet_reaped_is_taken_over(deployment, submission_id):
    """A process killed together with its parent (a whole worker lost) is a zombie until init reaps it;
    signal 0 still reaches it, but it will never beat again: the next delivery takes the point over at
    once (attempt 2) instead of leaving it to its fresh heartbeat's owner for heartbeat_stale_seconds."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        zombie = f"{socket.gethostname()}:{proc.pid}"
        assert not worker_gone(zombie)
        assert deployment.service.begin_point(submission_id, 1, 0, zombie) == CE
        assert deployment.service.judge_point(submission_id, 1, 0, worker="host:2") is None  # alive: its own
        proc.kill()
        wait_until(lambda: Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z", 10,
                   "the killed process to be a zombie")  # not reaped: this test is its parent and waits later
        assert worker_gone(zombie)
        result = deployment.service.judge_point(submission_id, 1, 0, worker="host:2")
        assert result is not None and result.verdict is Verdict.CE
        row = _row(deployment, submission_id, 1, 0)
        assert (row["verdict"], row["attempts"], row["worker"]) == ("CE", 2, "host:2")
    finally:
        proc.kill()
        proc.wait()


def test_a_duplicate_delivery_of_a_finished_point_changes_nothing(deployment, submission_id):
    service = deployment.service
    first = service.judge_point(submission_id, 2, 1, worker="host:1")
    assert first.verdict is Verdict.CE and first.message == CE["message"]
    before = _row(deployment, submission_id, 2, 1)
    assert service.judge_point(submission_id, 2, 1, worker="host:2") is None
    assert _row(deployment, submission_id, 2, 1) == before


def test_the_last_point_stores_the_totals_and_the_status_is_derived(deployment, submission_id):
    service = deployment.service
    points = list(ALL_POINTS)
    for task, point in points[:-1]:
        service.judge_point(submission_id, task, point)
    state = service.status(submission_id)
    assert state["status"] == "running" and state["total"] is None
    service.judge_point(submission_id, *points[-1])
    state = service.status(submission_id)
    assert state["status"] == "done" and state["total"] == 0.0
    assert {t: v["score"] for t, v in state["tasks"].items()} == {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0}


def _away(what: str) -> OperationalError:
    return OperationalError(what, {}, ConnectionRefusedError("the database is unreachable"))


def test_a_point_keeps_beating_until_its_result_is_recorded(make_deployment, sqlite_url, monkeypatch):
    """The heartbeat covers the whole ownership of a claimed point, not only the judging: a result that
    waits for the database (``record`` retried with backoff) keeps its point alive, so a sweeper that sees
    the database again does not take the point for dead and spend an attempt on it (seen in the chaos test:
    after a 15 s PostgreSQL cut the sweeper re-queued two finished, unrecorded points; one got attempt 2)."""
    deployment = make_deployment(database_url=sqlite_url, heartbeat_seconds=0.2)
    service = deployment.service
    submission_id = service.accept(b"def get_kernel(t):\n    return None\n", "none.py", "alice")
    with service.session() as session:
        db.store_compiled(session, submission_id, {p: CE for p in ALL_POINTS})
    record, away_until, seen = db.record_result, time.monotonic() + 1.5, []

    def record_while_away(session, *args, **kwargs):
        if time.monotonic() < away_until:
            with service.read_session() as reader:
                seen.append(db.get_result(reader, submission_id, 2, 0)["heartbeat_at"])
            raise _away("INSERT INTO test_point_results ...")
        return record(session, *args, **kwargs)

    monkeypatch.setattr(db, "record_result", record_while_away)
    result = service.judge_point(submission_id, 2, 0, worker="host:1")
    assert result.verdict is Verdict.CE
    row = _row(deployment, submission_id, 2, 0)
    assert (row["verdict"], row["attempts"]) == ("CE", 1)
    assert len(seen) >= 3  # the recording was retried while the database was "away"
    assert seen[-1] - row["started_at"] >= timedelta(seconds=0.5), (row["started_at"], seen)


def test_a_claim_whose_commit_reply_was_lost_is_not_counted_twice(deployment, submission_id, monkeypatch):
    """The connection breaks after the claim's COMMIT reached the database and before its reply came
    back (the chaos test's cut can fall there): the retried claim finds its own claim and keeps attempt 1."""
    claim, commit, lost = db.claim_attempt, Session.commit, []

    def claim_then_lose_the_reply(session, *args, **kwargs):
        attempts = claim(session, *args, **kwargs)
        if not lost:
            session.info["lose the reply"] = True
        return attempts

    def commit_then_break(session):
        commit(session)
        if session.info.pop("lose the reply", False):
            lost.append(True)
            raise _away("COMMIT")

    monkeypatch.setattr(db, "claim_attempt", claim_then_lose_the_reply)
    monkeypatch.setattr(Session, "commit", commit_then_break)
    result = deployment.service.judge_point(submission_id, 3, 1, worker="host:1")
    assert lost and result.verdict is Verdict.CE
    row = _row(deployment, submission_id, 3, 1)
    assert (row["verdict"], row["attempts"], row["worker"]) == ("CE", 1, "host:1")


class DyingPool(concurrent.futures.Executor):
    """An executor whose process "dies" under the first `deaths` submitted calls."""

    def __init__(self, deaths):
        self.deaths = deaths

    def submit(self, fn, *args, **kwargs):
        future = concurrent.futures.Future()
        if self.deaths:
            self.deaths -= 1
            future.set_exception(BrokenProcessPool("a process died"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future


def test_embedded_mode_retries_a_point_whose_pool_process_died(deployment, submission_id):
    seen = []
    totals = deployment.service.grade_embedded(submission_id, pool=DyingPool(deaths=1), on_result=seen.append)
    assert totals is not None and totals["total"] == 0.0
    assert sorted((r.task, r.point) for r in seen) == sorted(ALL_POINTS)
    attempts = {(r["task"], r["point"]): r["attempts"] for r in _results(deployment, submission_id)}
    assert attempts.pop((1, 0)) == 2  # the first point submitted died once, then went alone to a new process
    assert set(attempts.values()) == {1}


def _results(deployment, submission_id):
    with deployment.service.session() as session:
        return db.list_results(session, submission_id)


def test_a_source_that_no_longer_matches_its_hash_is_an_internal_error(deployment, submission_id):
    with deployment.service.session() as session:
        session.execute(update(Submission).where(Submission.id == submission_id).values(source="x = 2\n"))
        db.delete_compiled(session, submission_id)
    deployment.service.grade_embedded(submission_id, pool=DyingPool(deaths=0))
    state = deployment.service.status(submission_id)
    assert {p["verdict"] for p in state["points"]} == {"IE"} and state["status"] == "failed"
    assert "does not match its sha256" in state["points"][0]["message"]


def test_compiled_points_are_upserted_and_go_with_their_submission(deployment, submission_id):
    with deployment.service.session() as session:
        db.store_compiled(session, submission_id, {(1, 0): {"ir": "{}", "compile_s": 1.0}})
        assert db.get_compiled(session, submission_id, 1, 0) == {"ir": "{}", "compile_s": 1.0}
        assert db.get_compiled(session, submission_id, 1, 1) == CE
        assert db.compiled_points(session, submission_id) == set(ALL_POINTS)
        assert db.get_compiled(session, submission_id + 1, 1, 0) is None
        assert db.delete_compiled(session, submission_id) == 10
        assert db.compiled_points(session, submission_id) == set()


def test_rejudge_resets_results_compiled_points_and_scores(deployment, submission_id):
    service = deployment.service
    service.grade_embedded(submission_id, pool=DyingPool(deaths=0))
    assert service.status(submission_id)["status"] == "done"
    with service.session() as session:
        db.reset_submission(session, submission_id)
    state = service.status(submission_id)
    assert state["status"] == "queued" and state["total"] is None
    assert all(p["verdict"] is None for p in state["points"])
    with service.session() as session:
        assert db.compiled_points(session, submission_id) == set()
        assert db.submission_ids(session) == [submission_id] and db.submission_ids(session, "nobody") == []
        with pytest.raises(LookupError):
            db.reset_submission(session, submission_id + 1)
    with pytest.raises(LookupError):
        service.rejudge([submission_id + 1])


def test_the_embedded_sweeper_grades_stuck_and_missing_points(deployment, submission_id):
    service = deployment.service
    service.judge_point(submission_id, 1, 0)
    with service.session() as session:  # 1.1 was claimed by a process that died; the rest never started
        db.claim_attempt(session, submission_id, 1, 1, "host:gone")
    swept = service.sweep(older_than=0)
    assert [(p["task"], p["point"], p["reason"], p["action"]) for p in swept][:2] == \
        [(1, 1, "stuck", "judge"), (2, 0, "missing", "judge")]
    assert len(swept) == 9
    state = service.status(submission_id)
    assert state["status"] == "done" and state["points"][1]["attempts"] == 2
    assert service.sweep(older_than=0) == []


def test_a_launch_past_the_wall_clock_backstop_is_graded_again_and_ends_as_ie_if_it_keeps_failing(
        deployment, submission_id):
    from grader.judging import pipeline
    from judger.clocks import WallClockBackstop

    service, calls = deployment.service, []

    def overloaded_once(task, point, compiled, settings):  # the machine was overloaded during the first try
        calls.append((task, point))
        if len(calls) == 1:
            raise WallClockBackstop("the launch took more than 120 s of wall-clock time")
        return pipeline.judge_traced(task, point, compiled, settings)

    result = service.judge_point(submission_id, 1, 0, worker="host:1", run=overloaded_once)
    assert calls == [(1, 0), (1, 0)] and result.verdict is Verdict.CE
    row = _row(deployment, submission_id, 1, 0)
    assert (row["verdict"], row["attempts"], row["message"]) == ("CE", 2, CE["message"])

    def always_overloaded(task, point, compiled, settings):
        calls.append((task, point))
        raise WallClockBackstop("the launch took more than 120 s of wall-clock time")

    calls.clear()
    result = service.judge_point(submission_id, 1, 1, worker="host:1", run=always_overloaded)
    assert len(calls) == 3 and result.verdict is Verdict.IE  # max_attempts tries, then the judge's fault
    assert result.message == ("internal error of the judge (not your fault): the launch took more than 120 s of "
                              "wall-clock time; an organiser will grade it again")
    row = _row(deployment, submission_id, 1, 1)
    assert (row["verdict"], row["attempts"], row["score"]) == ("IE", 3, 0.0)
