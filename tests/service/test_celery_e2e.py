"""End to end through the broker: the `kdt-grade` CLI, a real Redis, real Celery worker processes and a
real database (SQLite file and PostgreSQL). The numbers must be exactly those of `kdt-grade local`."""
import json
import re

import pytest
from sqlalchemy import delete

import db
from db.outbox import OutboxRow
from service_testlib import BASELINE, FAILING, FIXTURES, OPTIMIZED, point_outcomes, task_scores

VADD_ONLY = FIXTURES.parents[1] / "judger" / "fixtures" / "vadd_only.py"

pytestmark = pytest.mark.slow


def _submit(deployment, path, user, *extra) -> tuple[int, str]:
    out = deployment.cli("submit", path, "--user", user, *extra).stdout
    return int(re.search(r"submission (\d+) accepted", out).group(1)), out


def _rows(deployment, submission_id):
    with deployment.service.session() as session:
        return db.list_results(session, submission_id)


def assert_matches_local(deployment, submission_id, local, attempts=1):
    """Every result row, the task scores and the total equal `local`'s; one finished row per point."""
    state = deployment.status(submission_id)
    assert state["status"] == "done", state
    assert point_outcomes(state["points"]) == point_outcomes(local["points"])
    assert task_scores(state) == task_scores(local)
    assert state["total"] == local["total"]
    rows = _rows(deployment, submission_id)
    assert len(rows) == len({(r["task"], r["point"]) for r in rows}) == 10
    assert all(r["finished_at"] is not None for r in rows)
    if attempts is not None:
        assert [r["attempts"] for r in rows] == [attempts] * 10
    return state


def test_examples_and_a_failing_file_are_graded_by_workers_exactly_as_local(
        database_url, redis_url, make_deployment, workers, local_results):
    deployment = make_deployment(database_url=database_url, broker_url=redis_url)
    deployment.cli("admin", "init-db")
    workers.start(deployment, concurrency=2)

    ids = {"alice": _submit(deployment, OPTIMIZED, "alice")[0], "bob": _submit(deployment, BASELINE, "bob")[0]}
    ids["carol"], out = _submit(deployment, FAILING, "carol", "--wait")
    assert "(done)" in out and "UnsupportedFeatureError: Line 10, Col 5" in out and "Incorrect result" in out
    for submission_id in ids.values():
        deployment.wait(submission_id, timeout=600)

    files = {"alice": OPTIMIZED, "bob": BASELINE, "carol": FAILING}
    states = {user: assert_matches_local(deployment, ids[user], local_results(files[user])) for user in ids}

    # What the numbers are, independently of `local`.
    optimized = states["alice"]
    assert {p["verdict"] for p in optimized["points"]} == {"AC"} and optimized["total"] == 100.0
    assert all(p["score"] == 100.0 for p in optimized["points"])
    assert 0 < states["bob"]["total"] < 100
    failing = {(p["task"], p["point"]): p["verdict"] for p in states["carol"]["points"]}
    assert failing == {(1, 0): "CE", (1, 1): "CE", (2, 0): "WA", (2, 1): "WA", (3, 0): "CE", (3, 1): "CE",
                       (4, 0): "CE", (4, 1): "CE", (4, 2): "CE", (4, 3): "CE"}
    assert states["carol"]["total"] == 0.0

    board = json.loads(deployment.cli("leaderboard", "--json").stdout)
    assert [(r["rank"], r["user_name"], r["submission_id"]) for r in board] == \
        [(1, "alice", ids["alice"]), (2, "bob", ids["bob"]), (3, "carol", ids["carol"])]
    assert [r["total"] for r in board] == [states[u]["total"] for u in ("alice", "bob", "carol")]
    assert [r["task2"] for r in board] == [states[u]["tasks"][2]["score"] for u in ("alice", "bob", "carol")]
    status_json = json.loads(deployment.cli("status", ids["bob"], "--json").stdout)
    assert point_outcomes(status_json["points"]) == point_outcomes(local_results(BASELINE)["points"])


def test_rejudge_sweep_and_ties_through_the_broker(sqlite_url, redis_url, make_deployment, workers,
                                                    local_results):
    # The automatic sweeper waits 10 minutes here, so that the manual `admin sweep` is what recovers.
    deployment = make_deployment(database_url=sqlite_url, broker_url=redis_url, heartbeat_stale_seconds=600)
    deployment.cli("admin", "init-db")
    workers.start(deployment, concurrency=2)
    local = local_results(VADD_ONLY)

    dave = _submit(deployment, VADD_ONLY, "dave")[0]
    erin = _submit(deployment, VADD_ONLY, "erin")[0]  # the same file later: an equal total, ranked second
    # A submission whose compile task was lost (accepted, its outbox row sent, the message lost by the
    # broker): the sweeper queues it.
    lost = deployment.service.accept(FAILING.read_bytes(), "failing.py", "frank")
    with deployment.service.session() as session:
        assert session.execute(delete(OutboxRow).where(OutboxRow.submission_id == lost)).rowcount == 1
    for submission_id in (dave, erin):
        deployment.wait(submission_id)
    assert deployment.status(lost)["status"] == "queued"
    swept = deployment.cli("admin", "sweep", "--older-than", "0").stdout
    assert "10 test point(s) queued again" in swept and "missing" in swept and "compile" in swept
    deployment.wait(lost)
    assert_matches_local(deployment, lost, local_results(FAILING))

    def board():
        rows = json.loads(deployment.cli("leaderboard", "--json").stdout)
        return [(r["user_name"], r["submission_id"]) for r in rows]

    assert board() == [("dave", dave), ("erin", erin), ("frank", lost)]

    # Rejudge one user's submissions: they keep their old totals on the leaderboard until graded again,
    # then keep their rank (ties go to the earlier submission, not to the earlier grading).
    out = deployment.cli("admin", "rejudge", "--user", "dave").stdout
    assert f"queued 1 submission(s): {dave}" in out
    assert ("dave", dave) in board()
    deployment.wait(dave)
    assert_matches_local(deployment, dave, local)
    assert board() == [("dave", dave), ("erin", erin), ("frank", lost)]

    # Rejudge several by id: every row is rewritten, once.
    deployment.cli("admin", "rejudge", erin, lost)
    for submission_id in (erin, lost):
        deployment.wait(submission_id)
    assert_matches_local(deployment, erin, local)
    assert_matches_local(deployment, lost, local_results(FAILING))
    csv_lines = deployment.cli("admin", "leaderboard", "--csv").stdout.splitlines()
    assert csv_lines[0].startswith("submission_id,user_id,user_name,file_name,sha256,created,status,task1")
    assert [line.split(",")[2] for line in csv_lines[1:]] == ["dave", "erin", "frank"]
    assert deployment.cli("admin", "sweep", "--older-than", "0").stdout.startswith("sweep: nothing")
