"""Issue 20 part 4, fairness between contestants, with real values: one contestant ("hog") submits a
kernel that runs to the time limit on every test point, another ("quick") a fast one right after. The
quick one's points are judged as soon as one worker is free (round robin across users, ``grader.runtime.fair``),
not after all of the hog's points (one FIFO, before). Measured by the order in which points finished,
not by wall-clock thresholds. Also: CE points are recorded at compile time (never waiting for a worker),
and the per-submission simulation budget stops simulating a submission that spent it.

Celery workers against Redis (broker mode) and the embedded server's dispatcher; a short time limit
(3 s per launch) keeps the tests short, the mechanism is the one of the contest. The embedded server's
compile queue is fair per user too (``grader.runtime.fair.FairQueue``)."""
from __future__ import annotations

from pathlib import Path

import pytest

import db
from grader.config import load_settings
from grader.service import Service
from grader.service.scheduling import Dispatcher
from service_testlib import FIXTURES, wait_until

pytestmark = pytest.mark.slow
ENDLESS, QUICK = FIXTURES / "endless.py", FIXTURES / "quick_vadd.py"
COMPILE_ERROR = FIXTURES.parents[2] / "judger" / "fixtures" / "compile_error.py"  # CE on every point
LIMITS = {"sim_timeout_seconds": 3, "sim_budget_seconds": 0}  # no budget: every hog point is simulated


def _accept(service, path: Path, user: str) -> int:
    return service.accept(path.read_bytes(), path.name, user)


def _rows(service, submission_id: int) -> list[dict]:
    with service.session() as session:
        return db.list_results(session, submission_id)


def _claimed(service, submission_id: int) -> bool:
    return any(r["started_at"] is not None for r in _rows(service, submission_id))


def _finished(service, submission_id: int) -> bool:
    return service.status(submission_id)["status"] == "done"


def assert_quick_did_not_wait_for_the_hog(service, hog: int, quick: int) -> int:
    """The quick submission's judged points finished while most of the hog's were still to come (checked
    as soon as the quick one is done: the hog's last points need not be waited for); its CE points were
    recorded at compile time without a worker's claim. Returns how many hog points had not finished when
    the quick submission's last one did."""
    quick_rows, hog_rows = _rows(service, quick), _rows(service, hog)
    assert {(r["task"], r["verdict"]) for r in quick_rows} == {(1, "AC"), (2, "CE"), (3, "CE"), (4, "CE")}
    assert {r["verdict"] for r in hog_rows if r["finished_at"] is not None} <= {"TLE"}
    ce = [r for r in quick_rows if r["verdict"] == "CE"]
    # Claimed and recorded in the compile's own transaction: one attempt, started and finished at the
    # same instant (a worker's claim and its result are separate transactions), no grading time.
    assert len(ce) == 8 and all(r["attempts"] == 1 and r["started_at"] == r["finished_at"] for r in ce)
    assert all(r["wall_seconds"] == 0 for r in ce)
    quick_done = max(r["finished_at"] for r in quick_rows if r["verdict"] == "AC")
    after = 10 - sum(r["finished_at"] is not None and r["finished_at"] <= quick_done for r in hog_rows)
    # One FIFO (before): all 10 hog points first, after == 0. Fair: the quick points take the next free
    # worker; with 2 workers at most about 4 hog points (2 running, 2 more meanwhile) finish before them.
    assert after >= 4, (after, sorted(r["finished_at"] for r in hog_rows), quick_done)
    return after


def test_celery_workers_judge_another_contestants_points_before_a_hogs_backlog(
        postgresql_url, redis_url, make_deployment, workers):
    deployment = make_deployment(database_url=postgresql_url, broker_url=redis_url, **LIMITS)
    deployment.cli("admin", "init-db")
    workers.start(deployment, concurrency=2)
    service = deployment.service
    hog = _accept(service, ENDLESS, "hog")
    service.enqueue(hog)
    wait_until(lambda: _claimed(service, hog), 180, "the hog's first points to be judged")
    quick = _accept(service, QUICK, "quick")
    service.enqueue(quick)  # its compile and judge messages queue behind the hog's ten judge messages
    deployment.wait(quick, timeout=300)
    after = assert_quick_did_not_wait_for_the_hog(service, hog, quick)
    print(f"broker mode: {after} of the hog's 10 points finished after the quick submission's")


def test_the_embedded_server_judges_another_contestants_points_before_a_hogs_backlog(
        sqlite_url, make_deployment):
    deployment = make_deployment(database_url=sqlite_url, **LIMITS)
    service = deployment.service
    service.init_db()
    dispatcher = Dispatcher(service)
    dispatcher.start()
    try:
        hog = _accept(service, ENDLESS, "hog")
        dispatcher.dispatch(hog)
        wait_until(lambda: _claimed(service, hog), 180, "the hog's first points to be judged")
        quick = _accept(service, QUICK, "quick")
        dispatcher.dispatch(quick)
        wait_until(lambda: _finished(service, quick), 300, "the quick grading")
        after = assert_quick_did_not_wait_for_the_hog(service, hog, quick)
    finally:
        dispatcher.close()
    print(f"embedded server: {after} of the hog's 10 points finished after the quick submission's")


def test_a_submission_that_spent_its_simulation_budget_gets_tle_without_simulation(sqlite_url, make_deployment):
    deployment = make_deployment(database_url=sqlite_url, sim_timeout_seconds=1, sim_budget_seconds=1.5)
    service = deployment.service
    submission_id = _accept(service, ENDLESS, "hog")
    service.grade_embedded(submission_id)
    points = service.status(submission_id)["points"]
    assert {p["verdict"] for p in points} == {"TLE"}
    skipped = [p for p in points if p["message"].startswith("not simulated: this submission's test points")]
    simulated = [p for p in points if p not in skipped]
    # Two pool processes: the first two points run at once (nothing spent yet), each takes >= 1 s (of CPU,
    # so at least as much wall-clock time), so at most one more starts before 1.5 s are spent; everything
    # after is not simulated.
    assert 2 <= len(simulated) <= 3 and len(skipped) >= 7, [p["message"][:60] for p in points]
    assert all("its budget is 1.5 s" in p["message"] for p in skipped)
    assert all(p["wall_seconds"] >= 1 for p in simulated) and all(p["wall_seconds"] < 0.5 for p in skipped)


def test_the_embedded_servers_compile_queue_is_fair_per_user(sqlite_url, tmp_path):
    """One compile thread; "many" queues three submissions, then "other" one: compiled in the order
    many, other, many, many (a FIFO compiled other's last). Each compile records its CE points in its own
    transaction, so their finish time is when the compile ended."""
    with Service(load_settings(data_dir=tmp_path / "var", database_url=sqlite_url, workers=1)) as service:
        service.init_db()
        source = COMPILE_ERROR.read_bytes()
        dispatcher = Dispatcher(service)
        dispatcher.start()
        try:
            ids = [service.accept(source + f"# copy {n}\n".encode(), "ce.py", "many") for n in range(3)]
            ids.append(service.accept(source, "ce.py", "other"))
            for submission_id in ids:
                dispatcher.dispatch(submission_id)
            wait_until(lambda: all(_finished(service, s) for s in ids), 300, "the four compiles")
        finally:
            dispatcher.close()
        rows = {submission_id: _rows(service, submission_id) for submission_id in ids}
    ended = {}
    for submission_id in ids:
        assert len(rows[submission_id]) == 10 and {r["verdict"] for r in rows[submission_id]} == {"CE"}
        assert len({r["finished_at"] for r in rows[submission_id]}) == 1  # one compile, one transaction
        ended[submission_id] = rows[submission_id][0]["finished_at"]
    assert sorted(ids, key=ended.get) == [ids[0], ids[3], ids[1], ids[2]]
