"""User-controlled text through every table the CLI prints (issue 11): a user called ``[/oops]``, a file
called ``[red]k[dim].py`` and a kernel raising ``RuntimeError("[/red] ...")`` are shown as typed by
``submit``, ``status``, ``leaderboard``, ``admin submissions``, ``admin show``, ``admin leaderboard`` and
``admin sweep``; none of them crashes on rich markup (embedded mode, real sandboxed compile)."""
import json
import shutil

import pytest

from service_testlib import FIXTURES

pytestmark = pytest.mark.slow
USER = "[/oops]"
FILE = "[red]k[dim].py"
MESSAGE = "RuntimeError: [/red] [bold]not markup[/bold] [link=file:///etc/passwd]x[/link]"


@pytest.fixture
def graded(make_deployment, tmp_path):
    """A deployment holding one graded hostile submission (id 1)."""
    deployment = make_deployment()
    path = tmp_path / FILE
    shutil.copy(FIXTURES / "hostile.py", path)
    proc = deployment.cli("submit", path, "--user", USER, "--wait", check=False)
    assert proc.returncode == 1, proc.stderr  # graded, every point CE
    return deployment, proc


def test_hostile_names_and_messages_are_shown_as_typed_in_every_table(graded):
    deployment, submitted = graded
    assert f"submission 1 accepted ({FILE}, user {USER})" in submitted.stdout
    assert FILE in submitted.stdout and "(done)" in submitted.stdout
    assert MESSAGE in submitted.stdout  # the full message under the table
    state = json.loads(deployment.cli("status", 1, "--json").stdout)
    assert {p["verdict"] for p in state["points"]} == {"CE"} and state["user"] == USER
    assert all(MESSAGE in p["message"] for p in state["points"])

    status = deployment.cli("status", 1).stdout
    assert f"submission 1: {FILE} by {USER} (done)" in status
    assert "RuntimeError: [/red]" in status and MESSAGE in status

    board = deployment.cli("leaderboard").stdout
    assert USER in board and "0.00" in board
    listed = deployment.cli("admin", "submissions").stdout
    assert USER in listed and FILE in listed
    everything = deployment.cli("admin", "leaderboard").stdout
    assert USER in everything and FILE in everything
    shown = deployment.cli("admin", "show", 1, "--source").stdout
    assert f"submission 1: {FILE} by {USER}" in shown and f"--- {FILE} ---" in shown
    assert MESSAGE in shown and 'raise RuntimeError("[/red]' in shown
    assert "nothing is missing or stuck" in deployment.cli("admin", "sweep", "--older-than", "0").stdout


def test_a_hostile_user_name_is_refused_cleanly_when_too_long(make_deployment, tmp_path):
    deployment = make_deployment()
    path = tmp_path / "k.py"
    shutil.copy(FIXTURES / "hostile.py", path)
    proc = deployment.cli("submit", path, "--user", "[/x]" * 30, check=False)
    assert proc.returncode == 2 and "refused" in proc.stderr and "[/x][/x]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_terminal_control_characters_are_shown_as_escapes_not_sent_to_the_terminal():
    """A contestant's message cannot clear an organiser's screen, move the cursor or write the clipboard."""
    from grader.cli.output import printable, safe

    hostile = "\x1b[2J\x1b[31mFAKE AC 100\x1b]52;c;cHduZWQ=\x07 [/red]\x9b"
    assert safe(hostile) == "\\x1b[2J\\x1b[31mFAKE AC 100\\x1b]52;c;cHduZWQ=\\x07 \\[/red]\\x9b"
    assert printable("line 1\n\tline 2") == "line 1\n\tline 2"
    assert not any(ord(c) < 32 and c not in "\n\t" for c in printable(hostile))
