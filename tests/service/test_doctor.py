"""Judge faults are IE, never the contestant's (issue 11): a compile child that dies while loading our own
code (here: a compile memory limit too low to import torch) gives IE and is retried; the sandbox self-check
refuses to start a worker then, and `kdt-grade admin doctor` says what is wrong."""
import json

import pytest

from grader import pipeline
from grader.config import load_settings
from grader.doctor import KNOWN_GOOD, SelfCheckFailed, self_check
from service_testlib import BASELINE, clean_env, run_cli

pytestmark = pytest.mark.slow
TOO_LOW = {"compile_memory_mb": 256}   # accepted by the settings, too little to import torch


def test_a_child_dying_while_importing_torch_is_an_internal_error_not_ce():
    compiled = pipeline.prepare(KNOWN_GOOD, [(1, 0), (1, 1)], load_settings(**TOO_LOW))
    assert {c["verdict"] for c in compiled.values()} == {"IE"}
    assert "while loading the judge's own code, before your file ran" in compiled[(1, 0)]["message"]
    assert "not your fault" in compiled[(1, 0)]["message"] and pipeline.judge_fault(compiled)
    healthy = pipeline.prepare(KNOWN_GOOD, [(1, 0)], load_settings())
    assert "ir" in healthy[(1, 0)] and not pipeline.judge_fault(healthy)
    with pytest.raises(SelfCheckFailed, match="a known-good kernel got IE"):
        self_check(load_settings(**TOO_LOW))
    assert self_check(load_settings()) > 0


def test_the_service_grades_a_judge_fault_as_ie_and_the_submission_as_failed(make_deployment, sqlite_url):
    deployment = make_deployment(database_url=sqlite_url, **TOO_LOW)
    service = deployment.service
    submission_id = service.accept(BASELINE.read_bytes(), "baseline.py", "alice")
    totals = service.grade_embedded(submission_id)
    state = service.status(submission_id)
    assert state["status"] == "failed" and totals["total"] == 0.0
    assert {p["verdict"] for p in state["points"]} == {"IE"}
    assert all("internal error of the judge" in p["message"] for p in state["points"])


def test_doctor_reports_each_part_and_the_worker_refuses_to_start(tmp_path):
    env = {**clean_env(), "KDT_GRADE_DATA_DIR": str(tmp_path / "var"), "COLUMNS": "250"}
    run_cli(["admin", "init-db"], env)
    ok = json.loads(run_cli(["admin", "doctor", "--json"], env).stdout)
    assert [(c["name"], c["ok"]) for c in ok] == [("sandbox", True), ("database", True), ("migrations", True)]
    assert f"at head ({_head_revision()})" in ok[2]["detail"]
    low = {**env, "KDT_GRADE_COMPILE_MEMORY_MB": "256", "KDT_GRADE_BROKER_URL": "redis://127.0.0.1:1/0"}
    bad = run_cli(["admin", "doctor", "--json"], low, check=False)
    assert bad.returncode == 1
    checks = {c["name"]: c for c in json.loads(bad.stdout)}
    assert [name for name, c in checks.items() if not c["ok"]] == ["sandbox", "broker"]
    assert "KDT_GRADE_COMPILE_MEMORY_MB=256 is too low" in checks["sandbox"]["detail"]
    assert "redis://127.0.0.1:1/0 is unreachable" in checks["broker"]["detail"]
    table = run_cli(["admin", "doctor"], low, check=False)
    assert table.returncode == 1 and table.stdout.count("FAILED") == 2 and "Traceback" not in table.stderr
    refused = run_cli(["worker"], low, check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "refusing to start the worker: the sandbox self-check failed" in refused.stderr


def _head_revision() -> str:
    """The newest Alembic revision of db/migrations (what `doctor` must report a fresh database at)."""
    from alembic.script import ScriptDirectory

    from db.migrate import alembic_config

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
