"""The embedded mode (no broker) end to end through the `kdt-grade` command on a fresh data directory
(SQLite file created on first use), and `kdt-grade local` giving the same numbers as the service."""
import csv
import io
import json
import re

import pytest

from service_testlib import (BASELINE, FAILING, OPTIMIZED, Deployment, Scenario, clean_env, point_outcomes, run_cli,
                             task_scores)

pytestmark = pytest.mark.slow
# The end-to-end steps below share one deployment and run in order on one worker.
e2e = pytest.mark.xdist_group("embedded-e2e")


@pytest.fixture(scope="module")
def readme_deployment(tmp_path_factory):
    deployment = Deployment(tmp_path_factory.mktemp("embedded"), None, None)  # only KDT_GRADE_DATA_DIR: the README's set-up
    deployment.scenario = Scenario()
    yield deployment
    deployment.service.close()


@pytest.fixture
def deployment(readme_deployment, request):
    with readme_deployment.scenario.step(request):
        yield readme_deployment


@e2e
def test_embedded_mode_end_to_end_through_the_cli_1_submit_wait_creates_the_database(deployment):
    assert not deployment.data_dir.exists()
    out = deployment.cli("submit", OPTIMIZED, "--user", "alice", "--wait").stdout
    lines = out.splitlines()
    assert re.fullmatch(r"submission 1 accepted \(optimized.py, user alice\)", lines[0])
    assert "(done)" in out and "100.00 / 100" in out
    assert (deployment.data_dir / "kdt-grade.sqlite3").exists()


@e2e
def test_embedded_mode_end_to_end_through_the_cli_2_submit_without_wait(deployment):
    out = deployment.cli("submit", BASELINE, "--user", "bob").stdout
    assert out.startswith("submission 2 accepted") and "total 37.26 / 100" in out
    deployment.cli("submit", FAILING, "--user", "carol")


@e2e
@pytest.mark.parametrize("submission_id, path", [(1, OPTIMIZED), (2, BASELINE), (3, FAILING)],
                         ids=["optimized", "baseline", "failing"])
def test_embedded_mode_end_to_end_through_the_cli_3_status_equals_local(deployment, local_results, submission_id,
                                                                         path):
    state = json.loads(json.dumps(deployment.status(submission_id)))  # as `status --json` prints it
    local = local_results(path)
    assert state["status"] == "done"
    assert point_outcomes(state["points"]) == point_outcomes(local["points"])
    assert task_scores(state) == task_scores(local) and state["total"] == local["total"]
    assert [p["utilisation"] for p in state["points"]] == [p["utilisation"] for p in local["points"]]


@e2e
def test_embedded_mode_end_to_end_through_the_cli_4_leaderboard(deployment, local_results):
    board = json.loads(deployment.cli("leaderboard", "--json").stdout)
    assert [(r["rank"], r["user_name"], r["submission_id"]) for r in board] == [(1, "alice", 1), (2, "bob", 2),
                                                                                  (3, "carol", 3)]
    rows = list(csv.DictReader(io.StringIO(deployment.cli("leaderboard", "--csv").stdout)))
    assert [r["user_name"] for r in rows] == ["alice", "bob", "carol"]
    assert float(rows[1]["total"]) == local_results(BASELINE)["total"]
    table = deployment.cli("leaderboard").stdout
    assert table.index("alice") < table.index("bob") < table.index("carol")


@e2e
def test_embedded_mode_end_to_end_through_the_cli_5_admin_show_and_submissions(deployment):
    shown = deployment.cli("admin", "show", 3, "--source").stdout
    assert "UnsupportedFeatureError" in shown and FAILING.read_text().splitlines()[-1] in shown
    listed = json.loads(deployment.cli("admin", "submissions", "--json").stdout)
    assert [(r["submission_id"], r["status"]) for r in listed] == [(1, "done"), (2, "done"), (3, "done")]


@e2e
def test_embedded_mode_end_to_end_through_the_cli_6_rejudge_sweep_and_a_missing_id(deployment, local_results):
    out = deployment.cli("admin", "rejudge", 3).stdout
    assert "graded 1 submission(s): 3" in out
    state = json.loads(deployment.cli("status", 3, "--json").stdout)
    assert point_outcomes(state["points"]) == point_outcomes(local_results(FAILING)["points"])
    assert [p["attempts"] for p in state["points"]] == [1] * 10
    assert "nothing is missing or stuck" in deployment.cli("admin", "sweep", "--older-than", "0").stdout
    assert "no submission with id 9" in deployment.cli("status", 9, check=False).stderr


def test_local_runs_one_task_and_refuses_what_the_intake_refuses(tmp_path, local_results):
    env = {**clean_env(), "KDT_GRADE_WORKERS": "2"}
    proc = run_cli(["local", FAILING, "--task", "2", "--json"], env, check=False)
    assert proc.returncode == 1  # a point is not AC
    report = json.loads(proc.stdout)
    assert [(p["task"], p["point"], p["verdict"]) for p in report["points"]] == [(2, 0, "WA"), (2, 1, "WA")]
    assert report["total"] == 0.0 and list(report["tasks"]) == ["2"]
    assert point_outcomes(report["points"]).items() <= point_outcomes(local_results(FAILING)["points"]).items()
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"\xff\xfe not text")
    proc = run_cli(["local", bad], env, check=False)
    assert proc.returncode == 2 and "not UTF-8" in proc.stderr


def test_local_explain_says_what_the_judger_says_for_every_point():
    """`kdt-grade local --explain` traces every job of the judge's first trial and prints, under
    each point, the judger's `--explain` lines (baseline task 1: 2 jobs on 1 SM, 332 cycles against a VXM
    bound of 128; the add of line 29 waits on the loads, the store on the add); --json carries them."""
    env = {**clean_env(), "KDT_GRADE_WORKERS": "2"}
    text = run_cli(["local", BASELINE, "--task", "1", "--explain"], env).stdout
    block = text[text.index("1.0 AC, 332 cycles"):].splitlines()
    assert block[:7] == [
        "1.0 AC, 332 cycles",
        "    why: 332 cycles; bound 128 (VXM busy cycles on the busiest SM) = 2.59x the bound; utilisation "
        "MEM 60.8%, VXM 38.6%, ISU 2.4%, MXM 0.0%",
        "    critical path of job 0 (166 of the launch's 332 cycles: an SM runs its jobs one after another): "
        "line 29 add 38.6%, line 28 load 30.1%, line 30 store 30.1%",
        "    stall cycles of the issue unit, summed over the 2 jobs: raw 224",
        "    line 29 (add) holds up others 126 cycles, summed over the 2 jobs: line 30 waits for its input to be "
        "written (raw 126)",
        "    line 28 (load) holds up others 98 cycles, summed over the 2 jobs: line 29 waits for its input to be "
        "written (raw 98)",
        ""]
    assert "1.1 AC, " in text
    report = json.loads(run_cli(["local", BASELINE, "--task", "1", "--explain", "--json"], env).stdout)
    assert set(report["explain"]) == {"1.0", "1.1"}
    expl = report["explain"]["1.0"]
    assert expl["bound"]["cycles"] == 128 and expl["bound"]["complete"] and expl["traced_jobs"] == 2
    assert sum(link["cycles"] for link in expl["critical_path"]) == expl["job_cycles"] == 166
    assert [p["cycles"] for p in report["points"]][0] == expl["kernel_cycles"] == 332
    assert "explain" not in json.loads(run_cli(["local", BASELINE, "--task", "1", "--json"], env).stdout)


def test_the_worker_command_needs_a_broker():
    proc = run_cli(["worker"], clean_env(), check=False)
    assert proc.returncode == 1 and "KDT_GRADE_BROKER_URL is not set" in proc.stderr
