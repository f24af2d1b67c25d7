"""The contestant's `kdt-grade` commands in local mode through real subprocesses: `--help` in two sections
(and no internal references in any help text), `logout`, `source`, `submissions` newest first, the
leaderboard's display names, two-decimal scores, and the exit status of `local` and `submit --wait`
(0 every point AC, 1 some point not AC, 2 refused)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import click
import pytest

from grader.cli import COMMANDS, CONTESTANT_COMMANDS, ORGANISER_COMMANDS, main
from service_testlib import ROOT, clean_env, run_cli, shown_times, utc_text
from tests.judger.judger_testlib import python_without_torch

VADD_ONLY = ROOT / "tests" / "judger" / "fixtures" / "vadd_only.py"  # solves task 1 only (5.55 of its 10)
CONTESTANTS = ["submit", "status", "diff", "submissions", "source", "leaderboard", "rules", "local", "audit", "ask",
               "clarifications", "announcements", "login", "logout", "version"]
ORGANISERS = ["admin", "serve", "worker", "design"]


def _client_env(tmp_path: Path, **extra) -> dict:
    """No KDT_GRADE_* settings, a config directory and a data directory of this test's own."""
    return {**clean_env(), "XDG_CONFIG_HOME": str(tmp_path / "config"), "KDT_GRADE_DATA_DIR": str(tmp_path / "var"),
            "KDT_GRADE_WORKERS": "2", "COLUMNS": "160", **{k: str(v) for k, v in extra.items()}}


def _section(help_text: str, heading: str) -> list[str]:
    """The command names listed under ``heading:`` of a click help text, in order."""
    lines = help_text.splitlines()
    start = lines.index(f"{heading}:") + 1
    names = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        names.append(line.split()[0])
    return names


def test_help_lists_the_contestants_commands_first_then_the_organisers(tmp_path):
    proc = run_cli(["--help"], _client_env(tmp_path))
    assert _section(proc.stdout, "Commands for contestants") == CONTESTANTS
    assert _section(proc.stdout, "Commands for organisers") == ORGANISERS
    assert "\nCommands:" not in proc.stdout
    assert sorted(CONTESTANTS + ORGANISERS) == sorted(COMMANDS)
    assert (list(CONTESTANT_COMMANDS), list(ORGANISER_COMMANDS)) == (CONTESTANTS, ORGANISERS)
    assert "  logout  " in proc.stdout and "  source  " in proc.stdout


def _every_help(command: click.Command, parent: click.Context | None, path: str):
    """``(path, help text)`` of ``command`` and every subcommand, rendered as `--help` renders it."""
    ctx = click.Context(command, info_name=path.split()[-1], parent=parent)
    yield path, command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            yield from _every_help(command.get_command(ctx, name), ctx, f"{path} {name}")


def test_no_help_text_carries_an_internal_reference():
    texts = dict(_every_help(main, None, "kdt-grade"))
    assert len(texts) > 40 and "kdt-grade admin users add" in texts
    internal = re.compile(r"\bissues?\b|\breview\b|\bTODO\b|\bXXX\b|#\d+", re.IGNORECASE)
    found = {path: internal.findall(text) for path, text in texts.items() if internal.search(text)}
    assert found == {}


def test_logout_removes_the_saved_login_and_is_harmless_without_one(tmp_path):
    env = _client_env(tmp_path)
    path = tmp_path / "config" / "kdt-grade" / "client.json"
    nothing = run_cli(["logout"], env)
    assert nothing.stdout == f"not logged in: there is no saved login ({path}); nothing was removed\n"
    assert nothing.stderr == ""
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"server": "http://127.0.0.1:9", "token": "kdt_" + "A" * 43}))
    removed = run_cli(["logout"], env)
    assert removed.stdout == f"logged out: removed the token for http://127.0.0.1:9 ({path})\n"
    assert not path.exists() and removed.stderr == ""
    path.write_text("{not json")
    unreadable = run_cli(["logout"], env)
    assert unreadable.stdout == f"logged out: removed an unreadable login file ({path})\n" and not path.exists()
    # logged out, with nothing submitted here: the reading commands say so instead of showing an empty list
    # from a database they would have made in the current directory (contestant review)
    database = tmp_path / "var" / "kdt-grade.sqlite3"
    for args in (["submissions"], ["status", "1"], ["leaderboard"], ["source", "1"]):
        lost = run_cli(args, env, check=False)
        assert lost.returncode == 1 and "no server is configured (`kdt-grade login --server URL` sets one)" in lost.stderr
        assert f"no local database at {database}" in lost.stderr and not database.exists(), args
    overridden = run_cli(["logout"], {**env, "KDT_GRADE_SERVER": "http://127.0.0.1:9"})
    assert overridden.returncode == 0 and overridden.stdout.startswith("not logged in")
    assert overridden.stderr == ("KDT_GRADE_SERVER is still set in your environment: the commands still use "
                                 "http://127.0.0.1:9; unset it (and KDT_GRADE_TOKEN) to work locally\n")


def test_local_exits_0_when_every_point_is_ac_1_when_one_is_not(tmp_path):
    env = _client_env(tmp_path)
    passed = run_cli(["local", VADD_ONLY, "--task", "1"], env, check=False)
    assert passed.returncode == 0, passed.stderr
    assert re.search(r"│\s+1 │\s+│\s+│\s+│\s+│\s+5\.55 / 10 │\s+│\s+│ vector add", passed.stdout)
    assert re.search(r"│\s+5\.55 / 10 │\s+│\s+│ total", passed.stdout)
    # cycles with thousands separators, scores with two decimals: as the pages show them
    assert re.search(r"│\s+1 │\s+0 │ AC\s+│\s+536 │\s+- │\s+100\.00 │\s+1,919,810 │\s+- │", passed.stdout)
    assert re.search(r"│\s+1 │\s+1 │ AC\s+│\s+34,304 │\s+- │\s+10\.95 │\s+11,000 │\s+18,624 │", passed.stdout)
    raw = json.loads(run_cli(["local", VADD_ONLY, "--task", "1", "--json"], env).stdout)["points"][1]
    assert (raw["cycles"], raw["cycles_for_100"], raw["cycles_for_plus_10"]) == (34304, 11000, 18624)
    failed = run_cli(["local", VADD_ONLY, "--task", "2"], env, check=False)
    assert failed.returncode == 1
    assert "this file does not solve task 2" in failed.stdout
    assert re.search(r"0\.00 / 20 │\s+│\s+│ matmul", failed.stdout)
    as_json = run_cli(["local", VADD_ONLY, "--task", "2", "--json"], env, check=False)
    assert as_json.returncode == 1 and [p["verdict"] for p in json.loads(as_json.stdout)["points"]] == ["CE", "CE"]
    shown = run_cli(["local", "--help"], env).stdout
    assert "Exit status: 0 when every graded test point is AC; 1 when some test point is" in shown


@pytest.mark.slow
def test_submit_wait_exit_status_source_submissions_and_display_names_locally(tmp_path):
    env = _client_env(tmp_path)
    run_cli(["admin", "users", "add", "alice", "--display-name", "Alice Liddell"], env)
    waited = run_cli(["submit", VADD_ONLY, "--user", "alice", "--wait"], env, check=False)
    assert waited.returncode == 1, waited.stderr  # graded; tasks 2-4 are CE
    assert waited.stdout.startswith("submission 1 accepted (vadd_only.py, user alice)\n")
    database = (tmp_path / "var" / "kdt-grade.sqlite3").resolve()
    assert waited.stderr.startswith(f"no contest server configured: submitting to the database of this machine "
                                    f"(sqlite:///{database}); `kdt-grade login --server URL` first to submit to "
                                    "the contest\n")  # a lost login must not look like a contest submission
    assert re.search(r"│\s+5\.55 / 100 │\s+│\s+│ total", waited.stdout)
    second = run_cli(["submit", VADD_ONLY, "--user", "alice"], env)  # no --wait: 0 once accepted
    assert second.stdout.splitlines() == ["submission 2 accepted (vadd_only.py, user alice)",
                                          "total 5.55 / 100; details: kdt-grade status 2"]

    rows = json.loads(run_cli(["submissions", "--user", "alice", "--json"], env).stdout)
    assert [r["submission_id"] for r in rows] == [2, 1]
    table = run_cli(["submissions", "--user", "alice"], env).stdout
    assert re.findall(r"^│\s+(\d+) │ alice", table, re.MULTILINE) == ["2", "1"]
    assert re.search(r"│\s+5\.55 │\s+0\.00 │\s+0\.00 │\s+0\.00 │\s+5\.55 │", table)
    assert shown_times(table) == [utc_text(r["created"]) for r in rows]  # the JSON keeps the ISO time

    board = run_cli(["leaderboard"], env).stdout
    assert re.search(r"│\s+1 │ Alice Liddell \(alice\) │\s+1 │", board)
    assert shown_times(board) == [utc_text(rows[1]["created"])]
    assert json.loads(run_cli(["leaderboard", "--json"], env).stdout)[0]["display_name"] == "Alice Liddell"

    printed = run_cli(["source", 1], env)
    assert printed.stdout == VADD_ONLY.read_text() and printed.stderr == ""
    target = tmp_path / "back.py"
    written = run_cli(["source", 2, "-o", target], env)
    assert target.read_bytes() == VADD_ONLY.read_bytes() and written.stdout == ""
    assert written.stderr == f"wrote submission 2 to {target} ({len(VADD_ONLY.read_bytes())} bytes)\n"
    missing = run_cli(["source", 9], env, check=False)
    assert missing.returncode == 1 and missing.stderr == "Error: no submission with id 9 in the local database\n"


@pytest.mark.parametrize("args", [["--help"], ["local", "submissions/examples/baseline.py"], ["status", "1"]])
def test_a_python_without_torch_is_told_the_install_command_in_one_line(args):
    python = python_without_torch()
    env = {k: v for k, v in clean_env().items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([python, "-m", "grader.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert re.fullmatch(
        rf"kdt-grade: this Python \({re.escape(python)}\) has no module '[\w.]+'; the judge needs torch and the "
        r"other dependencies: install them in the repository with `python3 -m venv .venv && \.venv/bin/pip "
        r"install -q -e '\.\[test\]' torch==2\.13\.0`, then run `\.venv/bin/kdt-grade`\n", proc.stderr), proc.stderr
