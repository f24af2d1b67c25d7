"""Judge faults are IE, never the contestant's (issue 11): a compile child that dies while loading our own
code (here: a compile memory limit too low to import torch) gives IE and is retried; the sandbox self-check
refuses to start a worker then, and `kdt-grade admin doctor` says what is wrong."""
import json
import os
import re
import sys

import pytest

from grader.judging import pipeline
from grader.config import load_settings
from grader.service.doctor import KNOWN_GOOD, SelfCheckFailed, self_check
from service_testlib import BASELINE, ROOT, clean_env, run_cli

pytestmark = pytest.mark.slow
TOO_LOW = {"compile_memory_mb": 256}   # accepted by the settings, too little to import torch


def test_a_child_dying_while_importing_torch_is_an_internal_error_not_ce():
    cold = pipeline.prepare(KNOWN_GOOD, [(1, 0), (1, 1)], load_settings(**TOO_LOW, compile_warm=False))
    assert {c["verdict"] for c in cold.values()} == {"IE"}
    assert "while loading the judge's own code, before your file ran" in cold[(1, 0)]["message"]
    assert "not your fault" in cold[(1, 0)]["message"] and pipeline.judge_fault(cold)
    # warm (the default, where runs are contained): the limit is checked against the template's own
    # address space before the child is forked, the same verdict
    compiled = pipeline.prepare(KNOWN_GOOD, [(1, 0), (1, 1)], load_settings(**TOO_LOW))
    assert {c["verdict"] for c in compiled.values()} == {"IE"} and pipeline.judge_fault(compiled)
    if os.geteuid() == 0:
        assert "the compile memory limit of 256 MiB is too low" in compiled[(1, 0)]["message"]
    healthy = pipeline.prepare(KNOWN_GOOD, [(1, 0)], load_settings())
    assert "ir" in healthy[(1, 0)] and not pipeline.judge_fault(healthy)
    with pytest.raises(SelfCheckFailed, match="a known-good kernel got IE"):
        self_check(load_settings(**TOO_LOW))
    assert self_check(load_settings()) > 0


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox drops to its own user id only as root (CI runs as root)")
def test_an_install_the_sandbox_user_cannot_read_is_the_judges_fault(tmp_path, monkeypatch):
    """The compile child runs as an unprivileged user id. When the judge's packages lie under a directory
    that user cannot enter (a venv under a 0700 home), the child cannot load the judge: every point is IE,
    the self-check refuses to let a worker start, and the contestant's file was never run."""
    from grader.judging import sandbox

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    site = home / "site-packages"
    site.mkdir()
    (site / "grader").symlink_to(ROOT / "grader")  # the judge's code, reachable only through the 0700 home
    (site / "kdt").symlink_to(ROOT / "kdt")
    real = sandbox._interpreter
    monkeypatch.setattr(sandbox, "_interpreter", lambda user: (real(user)[0], str(site)) if user else real(user))
    cold = pipeline.prepare(KNOWN_GOOD, [(1, 0), (2, 0)], load_settings(compile_warm=False))
    assert {c["verdict"] for c in cold.values()} == {"IE"}, cold
    assert "while loading the judge's own code, before your file ran" in cold[(1, 0)]["message"]
    assert "not your fault" in cold[(1, 0)]["message"] and pipeline.judge_fault(cold)
    compiled = pipeline.prepare(KNOWN_GOOD, [(1, 0), (2, 0)], load_settings())  # warm: the template says it
    assert {c["verdict"] for c in compiled.values()} == {"IE"}, compiled
    assert "the warm template could not import the judge's modules" in compiled[(1, 0)]["message"]
    assert "not your fault" in compiled[(1, 0)]["message"] and pipeline.judge_fault(compiled)
    with pytest.raises(SelfCheckFailed, match="readable by other users"):
        self_check(load_settings())


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox drops to its own user id only as root (CI runs as root)")
def test_no_interpreter_the_sandbox_user_can_run_is_the_judges_fault_and_nothing_runs_as_root(tmp_path, monkeypatch):
    """Without a Python the unprivileged user can execute, the submission is not run with our own (root)
    rights instead: every point is IE with the reason, and the self-check fails."""
    from grader.judging import sandbox

    monkeypatch.setattr(sandbox, "_interpreter", lambda user: (None, "") if user else (sys.executable, ""))
    marker = tmp_path / "ran"
    run = sandbox.run_sandboxed(("script", "w.py"), [], {"w.py": f"open({str(marker)!r}, 'w').close()".encode()},
                                sandbox.SandboxLimits())
    assert run.status == "unavailable" and not run.ok and not marker.exists()
    compiled = pipeline.prepare(KNOWN_GOOD, [(1, 0)], load_settings())
    assert compiled[(1, 0)]["verdict"] == "IE" and pipeline.judge_fault(compiled)
    assert "the sandbox cannot run here (no python3.11 that the sandbox's unprivileged user can run" in \
        compiled[(1, 0)]["message"]
    with pytest.raises(SelfCheckFailed, match="sandbox cannot run here"):
        self_check(load_settings())


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
    assert [(c["name"], c["ok"]) for c in ok] == [("containment", True), ("sandbox", True),
                                                  ("warm template", True), ("database", True), ("migrations", True)]
    assert f"at head ({_head_revision()})" in ok[4]["detail"]
    assert re.fullmatch(r"warm template \d+: 1 run\(s\) in \d+ s, alive, preloaded argparse, json, numpy, torch, .*",
                        ok[2]["detail"]), ok[2]["detail"]
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


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal applies to a root judge (CI runs as root)")
def test_without_containment_the_self_check_refuses_unless_an_organiser_opts_out_visibly(monkeypatch):
    """A root judge on a host without PID namespaces (simulated: the probe's answer) refuses to grade;
    KDT_GRADE_ALLOW_UNCONTAINED=1 grades, and doctor says so in capitals."""
    from dataclasses import replace

    from grader.judging import sandbox
    from grader.service.doctor import containment_check

    assert containment_check(load_settings()).detail.startswith("contained: PID/mount/network/IPC namespaces")
    state = sandbox.containment()
    monkeypatch.setitem(sandbox._CONTAINMENT, "c", replace(state, namespaces=False, problems=("no pidns",)))
    refused = containment_check(load_settings())
    assert not refused.ok and "NOT CONTAINED: no pidns; refusing to grade" in refused.detail
    with pytest.raises(SelfCheckFailed, match="refusing to grade .*KDT_GRADE_ALLOW_UNCONTAINED=1"):
        self_check(load_settings())
    monkeypatch.setenv("KDT_GRADE_ALLOW_UNCONTAINED", "1")
    allowed = load_settings()
    assert allowed.allow_uncontained and allowed.sandbox_limits.allow_uncontained
    check = containment_check(allowed)
    assert check.ok and "GRADING ANYWAY: KDT_GRADE_ALLOW_UNCONTAINED=1" in check.detail
    assert self_check(allowed) > 0
