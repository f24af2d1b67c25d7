"""End to end through the broker: the `kdt-grade` CLI, a real Redis, real Celery worker processes and a
real database (SQLite file and PostgreSQL). The numbers must be exactly those of `kdt-grade local`."""
import json
import re

import pytest
from sqlalchemy import delete

import db
from db.outbox import OutboxRow
from service_testlib import BASELINE, FAILING, FIXTURES, OPTIMIZED, broker_deployment, point_outcomes, task_scores

VADD_ONLY = FIXTURES.parents[2] / "judger" / "fixtures" / "vadd_only.py"

pytestmark = pytest.mark.slow
# Each scenario below is a chain of steps (tests run in order on one xdist worker) that share one deployment,
# one Redis database and one worker.


def _submit(deployment, path, user, *extra, exit_code=0) -> tuple[int, str]:
    proc = deployment.cli("submit", path, "--user", user, *extra, check=False)
    assert proc.returncode == exit_code, proc.stderr
    out = proc.stdout
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


@pytest.fixture(scope="module", params=[
    pytest.param("sqlite", marks=pytest.mark.xdist_group("celery-e2e-examples-sqlite")),
    pytest.param("postgresql", marks=pytest.mark.xdist_group("celery-e2e-examples-postgresql"))])
def examples_rig(request, tmp_path_factory):
    with broker_deployment(tmp_path_factory.mktemp(f"examples-{request.param}"), request.param) as deployment:
        deployment.workers.start(deployment, concurrency=2)
        yield deployment


@pytest.fixture
def examples(examples_rig, request):
    with examples_rig.scenario.step(request):
        yield examples_rig


FILES = {"alice": OPTIMIZED, "bob": BASELINE, "carol": FAILING}


def test_examples_and_a_failing_file_are_graded_by_workers_exactly_as_local_1_submit(examples):
    deployment = examples
    ids = {"alice": _submit(deployment, OPTIMIZED, "alice")[0], "bob": _submit(deployment, BASELINE, "bob")[0]}
    ids["carol"], out = _submit(deployment, FAILING, "carol", "--wait", exit_code=1)  # --wait: 1, not every point AC
    deployment.ids = ids
    assert "(done)" in out and "UnsupportedFeatureError: Line 10, Col 5" in out and "Incorrect result" in out


def test_examples_and_a_failing_file_are_graded_by_workers_exactly_as_local_2_as_local(examples, local_results):
    deployment, ids = examples, examples.ids
    for submission_id in ids.values():
        deployment.wait(submission_id, timeout=600)

    states = {user: assert_matches_local(deployment, ids[user], local_results(FILES[user])) for user in ids}
    deployment.states = states

    # What the numbers are, independently of `local`.
    optimized = states["alice"]
    assert {p["verdict"] for p in optimized["points"]} == {"AC"} and optimized["total"] == 100.0
    assert all(p["score"] == 100.0 for p in optimized["points"])
    assert 0 < states["bob"]["total"] < 100
    failing = {(p["task"], p["point"]): p["verdict"] for p in states["carol"]["points"]}
    assert failing == {(1, 0): "CE", (1, 1): "CE", (2, 0): "WA", (2, 1): "WA", (3, 0): "CE", (3, 1): "CE",
                       (4, 0): "CE", (4, 1): "CE", (4, 2): "CE", (4, 3): "CE"}
    assert states["carol"]["total"] == 0.0


def test_examples_and_a_failing_file_are_graded_by_workers_exactly_as_local_3_leaderboard_and_status(
        examples, local_results):
    deployment, ids, states = examples, examples.ids, examples.states
    board = json.loads(deployment.cli("leaderboard", "--json").stdout)
    assert [(r["rank"], r["user_name"], r["submission_id"]) for r in board] == \
        [(1, "alice", ids["alice"]), (2, "bob", ids["bob"]), (3, "carol", ids["carol"])]
    assert [r["total"] for r in board] == [states[u]["total"] for u in ("alice", "bob", "carol")]
    assert [r["task2"] for r in board] == [states[u]["tasks"][2]["score"] for u in ("alice", "bob", "carol")]
    status_json = json.loads(deployment.cli("status", ids["bob"], "--json").stdout)
    assert point_outcomes(status_json["points"]) == point_outcomes(local_results(BASELINE)["points"])


@pytest.fixture(scope="module")
def rejudge_rig(tmp_path_factory):
    # The automatic sweeper waits 10 minutes here, so that the manual `admin sweep` is what recovers.
    with broker_deployment(tmp_path_factory.mktemp("rejudge"), "sqlite", heartbeat_stale_seconds=600) as deployment:
        deployment.workers.start(deployment, concurrency=2)
        yield deployment


@pytest.fixture
def rejudge(rejudge_rig, request):
    with rejudge_rig.scenario.step(request):
        yield rejudge_rig


def _board(deployment):
    rows = json.loads(deployment.cli("leaderboard", "--json").stdout)
    return [(r["user_name"], r["submission_id"]) for r in rows]


rejudge_step = pytest.mark.xdist_group("celery-e2e-rejudge")


@rejudge_step
def test_rejudge_sweep_and_ties_through_the_broker_1_a_lost_compile_is_swept(rejudge, local_results):
    deployment = rejudge
    dave = _submit(deployment, VADD_ONLY, "dave")[0]
    erin = _submit(deployment, VADD_ONLY, "erin")[0]  # the same file later: an equal total, ranked second
    # A submission whose compile task was lost (accepted, its outbox row sent, the message lost by the
    # broker): the sweeper queues it.
    lost = deployment.service.accept(FAILING.read_bytes(), "failing.py", "frank")
    deployment.ids = dave, erin, lost
    with deployment.service.session() as session:
        assert session.execute(delete(OutboxRow).where(OutboxRow.submission_id == lost)).rowcount == 1
    for submission_id in (dave, erin):
        deployment.wait(submission_id)
    assert deployment.status(lost)["status"] == "queued"
    swept = deployment.cli("admin", "sweep", "--older-than", "0").stdout
    assert "10 test point(s) queued again" in swept and "missing" in swept and "compile" in swept
    deployment.wait(lost)
    assert_matches_local(deployment, lost, local_results(FAILING))
    assert _board(deployment) == [("dave", dave), ("erin", erin), ("frank", lost)]


@rejudge_step
def test_rejudge_sweep_and_ties_through_the_broker_2_rejudge_one_user(rejudge, local_results):
    # Rejudge one user's submissions: they keep their old totals on the leaderboard until graded again,
    # then keep their rank (ties go to the earlier submission, not to the earlier grading).
    deployment, (dave, erin, lost) = rejudge, rejudge.ids
    out = deployment.cli("admin", "rejudge", "--user", "dave").stdout
    assert f"queued 1 submission(s): {dave}" in out
    assert ("dave", dave) in _board(deployment)
    deployment.wait(dave)
    assert_matches_local(deployment, dave, local_results(VADD_ONLY))
    assert _board(deployment) == [("dave", dave), ("erin", erin), ("frank", lost)]


@rejudge_step
def test_rejudge_sweep_and_ties_through_the_broker_3_rejudge_several_by_id(rejudge, local_results):
    # Rejudge several by id: every row is rewritten, once.
    deployment, (dave, erin, lost) = rejudge, rejudge.ids
    deployment.cli("admin", "rejudge", erin, lost)
    for submission_id in (erin, lost):
        deployment.wait(submission_id)
    assert_matches_local(deployment, erin, local_results(VADD_ONLY))
    assert_matches_local(deployment, lost, local_results(FAILING))
    csv_lines = deployment.cli("admin", "leaderboard", "--csv").stdout.splitlines()
    assert csv_lines[0].startswith("submission_id,user_id,user_name,file_name,sha256,created,status,task1")
    assert [line.split(",")[2] for line in csv_lines[1:]] == ["dave", "erin", "frank"]
    assert deployment.cli("admin", "sweep", "--older-than", "0").stdout.startswith("sweep: nothing")
