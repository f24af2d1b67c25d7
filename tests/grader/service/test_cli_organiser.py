"""The organisers' workflow of the README ("Running a contest"), command by command, through real `kdt-grade`
subprocesses on the database of this machine with no server configured: init-db, accounts, the contest's
rules, the freeze, the leaderboards, and clarifications and announcements, which act as the database's
only enabled organiser account or as `--as NAME` (with one-line errors when there is none or several),
while the contestants' `ask` and `clarifications` take `--user NAME`. Tables are checked with a wide
terminal (COLUMNS), what they hold through `--json`."""
from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
import pytest

from grader.cli import main
from service_testlib import ROOT, clean_env, run_cli

QUICK = ROOT / "tests" / "judger" / "fixtures" / "vadd_only.py"  # task 1 only: 5.55 points, tasks 2-4 CE
TOKEN = re.compile(r"kdt_[A-Za-z0-9_-]{43}")


@pytest.fixture
def home(tmp_path: Path) -> dict:
    """No KDT_GRADE_* settings but a data directory of this test's own, no saved login, a wide terminal
    (a rich table never wraps a cell the test looks for)."""
    return {**clean_env(), "XDG_CONFIG_HOME": str(tmp_path / "config"), "KDT_GRADE_DATA_DIR": str(tmp_path / "var"),
            "KDT_GRADE_WORKERS": "2", "COLUMNS": "220"}


def cli(env: dict, *args, status: int = 0):
    """`kdt-grade ARGS`, which must exit with ``status``."""
    proc = run_cli(list(args), env, check=False)
    assert proc.returncode == status, f"kdt-grade {' '.join(map(str, args))} exited {proc.returncode}\n" \
                                      f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    return proc


def cli_json(env: dict, *args):
    """The JSON that `kdt-grade ARGS --json` prints."""
    return json.loads(cli(env, *args, "--json").stdout)


def iso(moment: datetime) -> str:
    return moment.isoformat()


@pytest.mark.slow
def test_the_organisers_workflow_runs_on_the_local_database_without_a_server(home, tmp_path):
    made = cli(home, "admin", "init-db").stdout
    assert made == f"database at head: sqlite:///{tmp_path}/var/kdt-grade.sqlite3\n"
    nobody = cli(home, "admin", "announce", "Welcome", status=1)
    assert nobody.stdout == "" and nobody.stderr == (
        "Error: this database has no organiser account to act as: create one with `kdt-grade admin users add "
        "NAME --admin` (or log in to a contest server with an organiser's token)\n")

    root = cli_json(home, "admin", "users", "add", "root", "--admin")
    assert root["user"] == "root" and TOKEN.fullmatch(root["token"])
    (tmp_path / "team.csv").write_text("alice,Alice Liddell\nbob\n")
    tokens = list(csv.DictReader(io.StringIO(cli(home, "admin", "users", "import", tmp_path / "team.csv").stdout)))
    assert [t["name"] for t in tokens] == ["alice", "bob"] and all(TOKEN.fullmatch(t["token"]) for t in tokens)
    assert len({root["token"], *(t["token"] for t in tokens)}) == 3
    assert [(u["name"], u["display_name"], u["is_admin"], u["has_token"], u["submissions"])
            for u in cli_json(home, "admin", "users", "list")] == [
        ("alice", "Alice Liddell", False, True, 0), ("bob", None, False, True, 0), ("root", None, True, True, 0)]

    now = datetime.now(UTC).replace(microsecond=0)
    start, end, freeze = now - timedelta(hours=1), now + timedelta(hours=2), now + timedelta(hours=1)
    shown = cli(home, "admin", "contest", "set", "--name", "KDT 2026", "--start", iso(start), "--end", iso(end),
                "--freeze", iso(freeze), "--min-interval", "60", "--max-per-hour", "20", "--max-pending", "2",
                "--max-questions-per-hour", "10").stdout
    assert "KDT 2026" in shown and "max questions per hour" in shown
    assert cli_json(home, "admin", "contest", "show") == {
        "name": "KDT 2026", "starts_at": start.isoformat(), "ends_at": end.isoformat(),
        "freeze_at": freeze.isoformat(), "unfrozen": False, "frozen_since": None, "min_interval_seconds": 60.0,
        "max_per_hour": 20, "max_pending": 2, "max_questions_per_hour": 10}

    # the freeze by hand is stored (it hides later submissions on the server's public leaderboard); the local
    # leaderboards are the organiser's: every submission counts, frozen or not
    frozen = cli(home, "admin", "contest", "freeze").stdout
    since = re.search(r"frozen by hand since\s+│ (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", frozen)
    assert since and now <= datetime.fromisoformat(since[1]).replace(tzinfo=UTC) <= datetime.now(UTC)
    cli(home, "submit", QUICK, "--user", "alice", "--wait", status=1)  # tasks 2-4 are CE: not every point is AC
    board = [(r["rank"], r["user_name"], r["display_name"], r["submission_id"], round(r["total"], 2))
             for r in cli_json(home, "leaderboard")]
    assert board == [(1, "alice", "Alice Liddell", 1, 5.55)]
    every = list(csv.DictReader(io.StringIO(cli(home, "admin", "leaderboard", "--csv").stdout)))
    assert [(r["submission_id"], r["user_name"], r["status"], round(float(r["total"]), 2)) for r in every] == [
        ("1", "alice", "done", 5.55)]
    assert re.search(r"frozen by hand since\s+│ - ", cli(home, "admin", "contest", "unfreeze").stdout)

    # clarifications and announcements, on the same database, as the only organiser (root)
    asked = cli(home, "ask", "Is the task 3 threshold right?", "--task", "3", "--user", "alice")
    assert asked.stdout == "question 1 sent (task 3); its answer will be in `kdt-grade clarifications`\n"
    assert asked.stderr.startswith("no contest server configured: asking in the database of this machine (sqlite:///")
    assert cli_json(home, "ask", "Why CE?", "--user", "bob")["id"] == 2
    assert [(q["id"], q["author"], q["task"], q["state"]) for q in cli_json(home, "admin", "clarifications")] == [
        (1, "alice", 3, "open"), (2, "bob", None, "open")]
    answered = cli(home, "admin", "answer", "1", "Yes, it is.", "--to-all").stdout
    assert answered == "question 1 of alice answered to everyone\n"
    pinned = cli(home, "admin", "announce", "Contest extended by 30 min", "--pin")
    assert pinned.stdout == "announcement 1 made (pinned)\n"
    assert cli_json(home, "admin", "announce", "Task 2 rejudged")["pinned"] is False
    refused = cli(home, "admin", "announce", "   ", status=2)
    assert refused.stdout == "" and refused.stderr == "refused: the announcement is empty\n"

    # a second organiser: who acts must be named
    cli(home, "admin", "users", "add", "judge2", "--admin")
    several = cli(home, "admin", "ignore", "2", status=1)
    assert several.stderr == ("Error: this database has 2 organiser accounts (judge2, root): name the one who "
                              "acts with --as NAME\n")
    unknown = cli(home, "admin", "ignore", "2", "--as", "alice", status=1)
    assert unknown.stderr == ("Error: alice is not an enabled organiser account of this database (its organisers: "
                              "judge2, root)\n")
    assert cli(home, "admin", "ignore", "2", "--as", "judge2").stdout == "question 2 of bob ignored\n"
    assert [(q["id"], q["state"], q["published"], q["handled_by_name"])
            for q in cli_json(home, "admin", "clarifications", "--all")] == [
        (2, "ignored", False, "judge2"), (1, "answered", True, "root")]

    # what the contestants read, locally
    assert [(n["id"], n["pinned"], n["text"]) for n in cli_json(home, "announcements")] == [
        (1, True, "Contest extended by 30 min"), (2, False, "Task 2 rejudged")]
    assert [(q["id"], q["mine"], q["state"], q["published"], q["answer"])
            for q in cli_json(home, "clarifications", "--user", "bob")] == [
        (2, True, "ignored", False, None), (1, False, "answered", True, "Yes, it is.")]
    table = cli(home, "clarifications", "--user", "bob").stdout
    assert "answered (to all), not yours" in table and "Yes, it is." in table  # COLUMNS is wide: nothing wraps
    stranger = cli(home, "clarifications", "--user", "carol", status=1)
    assert stranger.stderr == ("Error: no user carol in the database of this machine: name one with --user NAME "
                               "(`kdt-grade admin users list` lists them)\n")

    # with a server configured its token says who acts: --as is refused before anything is sent
    remote = {**home, "KDT_GRADE_SERVER": "http://127.0.0.1:9", "KDT_GRADE_TOKEN": root["token"]}
    usage = cli(remote, "admin", "announce", "x", "--as", "root", status=2)
    assert usage.stderr.endswith("Error: --as is for this machine's database, without a server; the server knows "
                                 "you by your token\n")


def _help(*path: str) -> str:
    """`kdt-grade PATH --help` as click renders it, its lines joined (rendered here: no subprocess needed)."""
    ctx = click.Context(main, info_name="kdt-grade")
    command = main
    for name in path:
        command = command.get_command(ctx, name)
        ctx = click.Context(command, info_name=name, parent=ctx)
    return " ".join(command.get_help(ctx).split())


def test_the_message_commands_say_in_their_help_who_they_act_as_without_a_server():
    for command in ("answer", "ignore", "announce"):
        shown = _help("admin", command)
        assert "--as NAME" in shown and "default: the database's only enabled organiser" in shown, command
        assert ("With a server, as the organiser whose token is logged in; without one, in this machine's database "
                "as --as NAME, or as its only enabled organiser account.") in shown, command
    assert ("without one, answer, ignore and announce act as the database's only enabled organiser account"
            in _help("admin"))
    for command in ("ask", "clarifications"):
        shown = _help(command)
        assert "--user TEXT" in shown and "without a server only" in shown, command
