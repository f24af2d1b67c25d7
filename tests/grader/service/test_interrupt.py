"""The embedded mode interrupted (issue 11): Ctrl-C during `kdt-grade submit` says how the submission will
be resumed and exits 130; the next `kdt-grade submit` grades its own file, then resumes the interrupted
one, which ends with exactly the numbers of `kdt-grade local`."""
import os
import re
import signal
import subprocess

import pytest

import db
from service_testlib import FIXTURES, KDT_GRADE, ROOT, SLOW, point_outcomes, task_scores, wait_until

pytestmark = pytest.mark.slow
VADD_ONLY = FIXTURES.parents[2] / "judger" / "fixtures" / "vadd_only.py"


def test_ctrl_c_in_embedded_mode_explains_and_the_next_start_resumes(make_deployment, local_results):
    deployment = make_deployment()
    local = local_results(SLOW)
    proc = subprocess.Popen(KDT_GRADE + ["submit", str(SLOW), "--user", "ctrl-c"], env=deployment.env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def running():
        if not (deployment.data_dir / "kdt-grade.sqlite3").exists():
            return None
        with deployment.service.session() as session:
            rows = {(r["task"], r["point"]): r for r in db.list_results(session, 1)} if db.get_submission(
                session, 1) else {}
        row = rows.get((1, 1))
        return row if row is not None and row["finished_at"] is None else None

    wait_until(running, 240, "test point 1.1 to start")
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends to the foreground process group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "interrupted: submission 1 is stored" in err and "The next `kdt-grade submit` here resumes it" in err
    assert "Traceback" not in err
    assert deployment.status(1)["status"] == "running"

    again = deployment.cli("submit", VADD_ONLY, "--user", "next")
    assert re.search(r"submission 2 accepted", again.stdout)
    assert "resumed interrupted submission(s): 1" in again.stderr
    state = deployment.status(1)
    assert state["status"] == "done"
    assert point_outcomes(state["points"]) == point_outcomes(local["points"])
    assert task_scores(state) == task_scores(local) and state["total"] == local["total"]
    with deployment.service.session() as session:
        rows = db.list_results(session, 1)
    assert len(rows) == 10 and all(r["finished_at"] is not None for r in rows)
    assert deployment.status(2)["status"] == "done"


def test_ctrl_c_while_the_grading_pool_starts_stops_every_process_quietly(make_deployment):
    """Ctrl-C reaches the whole process group, pool processes included, and may land while the pool's
    fork server is still importing the simulator: only the main process reacts (exit 130, its message,
    no traceback from any process) and no grading process outlives it."""
    deployment = make_deployment()
    proc = subprocess.Popen(KDT_GRADE + ["submit", str(SLOW), "--user", "early"], env=deployment.env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)

    def compiled():
        if proc.poll() is not None:
            raise AssertionError(f"kdt-grade submit ended early ({proc.returncode}): {proc.communicate()}")
        if not (deployment.data_dir / "kdt-grade.sqlite3").exists():
            return False
        with deployment.service.session() as session:
            return len(db.compiled_points(session, 1)) == 10 if db.get_submission(session, 1) else False

    wait_until(compiled, 240, "the compiled points of submission 1", interval=0.05)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "interrupted: submission 1 is stored" in err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err

    def group_gone():  # the fork server and resource tracker end when they see the main process gone
        alive = subprocess.run(["pgrep", "-a", "-g", str(proc.pid)], capture_output=True, text=True).stdout
        return not alive.strip() and "gone"
    wait_until(group_gone, 10, "every process of the interrupted run to end")
