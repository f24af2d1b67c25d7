"""The CLI as the contestant's client of a real server: login (config file 0600), submit --wait, status,
submissions, leaderboard; every number equals `kdt-grade local --json`, in embedded mode and through a
broker with a real Celery worker. The client commands import neither torch nor the simulator."""
from __future__ import annotations

import json
import re
import subprocess
import stat
import sys

import pytest

from tests.grader.service.service_testlib import (OPTIMIZED, ROOT, clean_env, point_outcomes, run_cli, shown_times,
                                                  task_scores, utc_text)
from weblib import add_user


def _client_env(tmp_path, **extra) -> dict:
    """A contestant's environment: no KDT_GRADE_* service settings, a config directory of its own."""
    return {**clean_env(), "XDG_CONFIG_HOME": str(tmp_path / "config"), "COLUMNS": "160", **extra}


def _login_and_submit(server, token, tmp_path) -> tuple[dict, dict]:
    env = _client_env(tmp_path)
    login = run_cli(["login", "--server", server.url + "/", "--token", token], env).stdout
    config = tmp_path / "config" / "kdt-grade" / "client.json"
    assert login.startswith(f"logged in to {server.url} as alice; saved to {config}")
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    assert json.loads(config.read_text()) == {"server": server.url, "token": token}
    proc = run_cli(["submit", OPTIMIZED, "--wait", "--json"], env)
    state = json.loads(proc.stdout)
    assert re.search(rf"submission {state['id']} accepted \(optimized.py, user alice\)", proc.stderr)
    return state, env


def _assert_as_local(state, local):
    assert state["status"] == "done"
    assert point_outcomes(state["points"]) == point_outcomes(local["points"])
    assert [p["utilisation"] for p in state["points"]] == [p["utilisation"] for p in local["points"]]
    assert task_scores(state) == task_scores(local) and state["total"] == local["total"] == 100.0


def test_contestant_commands_over_http_equal_local(make_deployment, start_server, local_results, tmp_path):
    deployment = make_deployment()
    token = add_user(deployment, "alice")
    server = start_server(deployment)
    state, env = _login_and_submit(server, token, tmp_path)
    _assert_as_local(state, local_results(OPTIMIZED))
    sid = state["id"]

    shown = run_cli(["status", sid], env).stdout
    assert f"submission {sid}: optimized.py by alice (done)" in shown and "100.00 / 100" in shown
    for p in state["points"]:  # cycles with thousands separators (21,248), as on the pages; --json keeps ints
        assert re.search(rf"│\s+{p['task']} │\s+{p['point']} │ AC\s+│\s+{p['cycles']:,} │", shown), p
    assert any(p["cycles"] >= 1000 for p in state["points"])
    assert json.loads(run_cli(["status", sid, "--json"], env).stdout) == state
    mine = json.loads(run_cli(["submissions", "--json"], env).stdout)
    assert [(r["submission_id"], r["status"], r["total"]) for r in mine] == [(sid, "done", 100.0)]
    board = json.loads(run_cli(["leaderboard", "--json"], env).stdout)
    assert [(r["rank"], r["user_name"], r["submission_id"], r["total"]) for r in board] == [(1, "alice", sid, 100.0)]
    table = run_cli(["leaderboard"], env).stdout
    assert "T4 /40" in table and "alice" in table

    missing = run_cli(["status", sid + 1], env, check=False)
    assert missing.returncode == 2 and f"refused: no submission {sid + 1} of yours" in missing.stderr
    forged = run_cli(["submissions"], {**env, "KDT_GRADE_TOKEN": "kdt_" + "C" * 43}, check=False)
    assert forged.returncode == 2 and "unknown token" in forged.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("")
    refused = run_cli(["submit", empty], env, check=False)
    assert refused.returncode == 2 and "refused: empty.py: the file is empty. Nothing was stored." in refused.stderr
    as_json = run_cli(["submit", empty, "--json"], env, check=False)  # a script gets the refusal as JSON
    assert as_json.returncode == 2 and json.loads(as_json.stdout) == {
        "error": "rejected", "message": "the file is empty. Nothing was stored.", "status": 400, "retry_after": None}
    down = run_cli(["status", sid], {**env, "KDT_GRADE_SERVER": "http://127.0.0.1:9"}, check=False)
    assert down.returncode == 1 and "cannot reach the server http://127.0.0.1:9" in down.stderr
    assert token not in server.log()


def test_client_commands_do_not_import_torch_or_the_simulator(make_deployment, start_server, tmp_path):
    deployment = make_deployment()
    token = add_user(deployment, "alice")
    server = start_server(deployment)
    env = _client_env(tmp_path, KDT_GRADE_SERVER=server.url, KDT_GRADE_TOKEN=token)
    for args in (["submissions"], ["leaderboard"], ["rules"], ["status", "1"], ["submit", "--help"], ["version"],
                 ["clarifications"], ["announcements"], ["source", "1"], ["logout"]):
        proc = run_cli_importtime(args, env)
        modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
        assert "httpx" in modules or args == ["submit", "--help"]
        heavy = {m for m in modules if m.split(".")[0] in ("torch", "numpy", "kdt", "judger", "sqlalchemy", "celery")}
        assert heavy == set(), (args, sorted(heavy)[:10])


def run_cli_importtime(args, env):
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "grader.cli", *map(str, args)], env=env,
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.slow
def test_broker_mode_with_a_celery_worker_equals_local(make_deployment, start_server, workers, postgresql_url,
                                                       redis_url, local_results, tmp_path):
    deployment = make_deployment(database_url=postgresql_url, broker_url=redis_url)
    deployment.cli("admin", "init-db")
    token = add_user(deployment, "alice")
    server = start_server(deployment)
    workers.start(deployment, concurrency=2)
    state, _env = _login_and_submit(server, token, tmp_path)
    _assert_as_local(state, local_results(OPTIMIZED))
    graders = {p["worker"] for p in deployment.status(state["id"])["points"]}
    assert all(w.startswith("test1-") for w in graders), graders  # graded by the Celery worker, not the server


VADD_ONLY = ROOT / "tests" / "judger" / "fixtures" / "vadd_only.py"  # solves task 1 only: 5.55 points


def test_source_submissions_newest_first_display_names_and_logout_over_http(make_deployment, start_server,
                                                                             tmp_path):
    deployment = make_deployment()
    from grader.service import accounts

    token = accounts.add_user(deployment.service, "alice", "Alice Liddell")[1]
    bob = add_user(deployment, "bob")
    server = start_server(deployment)
    env = _client_env(tmp_path)
    run_cli(["login", "--server", server.url, "--token", token], env)
    waited = run_cli(["submit", VADD_ONLY, "--wait"], env, check=False)
    assert waited.returncode == 1, waited.stderr  # graded; tasks 2-4 are CE
    assert re.search(r"│\s+5\.55 / 100 │\s+│\s+│ total", waited.stdout)
    first = int(re.match(r"submission (\d+) accepted", waited.stdout).group(1))
    second = json.loads(run_cli(["submit", VADD_ONLY, "--wait", "--json"], env, check=False).stdout)["id"]

    mine = json.loads(run_cli(["submissions", "--json"], env).stdout)
    assert [r["submission_id"] for r in mine] == [second, first]
    table = run_cli(["submissions"], env).stdout
    assert re.findall(r"^│\s+(\d+) │ alice", table, re.MULTILINE) == [str(second), str(first)]
    assert shown_times(table) == [utc_text(r["created"]) for r in mine]  # the JSON keeps the ISO time
    board = run_cli(["leaderboard"], env).stdout
    assert re.search(rf"│\s+1 │ Alice Liddell \(alice\) │\s+{first} │", board) and "T4 /40 " in board
    assert shown_times(board) == [utc_text(mine[1]["created"])]

    assert run_cli(["source", first], env).stdout == VADD_ONLY.read_text()
    target = tmp_path / "mine.py"
    run_cli(["source", second, "-o", target], env)
    assert target.read_bytes() == VADD_ONLY.read_bytes()
    theirs = json.loads(run_cli(["submit", VADD_ONLY, "--json"], {**env, "KDT_GRADE_TOKEN": bob}).stdout)["id"]
    refused = run_cli(["source", theirs], env, check=False)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == f"refused: no submission {theirs} of yours\n"

    config = tmp_path / "config" / "kdt-grade" / "client.json"
    out = run_cli(["logout"], env).stdout
    assert out == f"logged out: removed the token for {server.url} ({config})\n" and not config.exists()
    assert run_cli(["logout"], env).stdout.startswith("not logged in: there is no saved login")
