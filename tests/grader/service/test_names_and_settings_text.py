"""What organisers type and what contestants' files hold, read and shown back exactly (in-process, SQLite):
user lists with any line ending, display and contest names without invisible or control characters, the
contest rules form's text reading back to the stored value (an unfreeze survives saving the form), and a
submission's source shown to a terminal with its control characters escaped."""
from __future__ import annotations

import os
import pty
import re
import sys
from datetime import UTC, datetime

import pytest

from grader.cli import output
from grader.display import hidden_characters
from grader.refusals import BadRequest
from grader.service import accounts, contest


@pytest.fixture
def service(make_deployment, sqlite_url):
    deployment = make_deployment(database_url=sqlite_url)
    deployment.service.init_db()
    return deployment.service


def test_a_user_list_with_bare_carriage_returns_is_read_line_by_line(service):
    created = accounts.import_user_csv(service, "zed4,Zed Four\r\nzed5\rzed6,Zed Six\r")
    assert [name for name, _token in created] == ["zed4", "zed5", "zed6"]
    shown = {u["name"]: u["display_name"] for u in accounts.list_users(service)}
    assert shown == {"zed4": "Zed Four", "zed5": None, "zed6": "Zed Six"}
    with pytest.raises(BadRequest, match="line 2: a user called 'zed5' exists already"):
        accounts.import_user_csv(service, "zed7\rzed5\r")
    assert "zed7" not in {u["name"] for u in accounts.list_users(service)}  # all or nothing


@pytest.mark.parametrize("name, found", [
    ("\u202eevil", "U+202E"),             # right-to-left override: reorders the row it stands in
    ("zero\u200bwidth", "U+200B"),        # zero-width space
    ("del\x7f", "U+007F"),
    ("csi\u009b31m", "U+009B"),           # C1 control: an escape sequence's start in some terminals
    ("next\u0085line", "U+0085"),
    ("sep\u2028line", "U+2028"),
])
def test_display_names_with_hidden_characters_are_refused(service, name, found):
    assert hidden_characters(name) == [found]
    with pytest.raises(BadRequest, match=re.escape(f"no control or invisible formatting characters (found {found})")):
        accounts.add_user(service, "carol", name)
    with pytest.raises(BadRequest, match=re.escape(found)):
        accounts.import_user_csv(service, f"carol,{name}\n")
    assert accounts.list_users(service) == []


def test_ordinary_names_in_any_script_are_kept(service):
    for login, name in (("zoe", "Zoë Quinn"), ("li", "李 雷"), ("ana", "Ana-María O'Neil (team #3)")):
        assert hidden_characters(name) == []
        accounts.add_user(service, login, name)
    assert sorted(u["display_name"] for u in accounts.list_users(service)) == sorted(
        ["Zoë Quinn", "李 雷", "Ana-María O'Neil (team #3)"])


def test_a_contest_name_with_terminal_escapes_is_refused(service):
    with pytest.raises(BadRequest, match=r"the contest name may hold no control .* \(found U\+001B, U\+0007\)"):
        contest.set_rules(service, name="KDT\x1b]0;pwn\x07")
    assert contest.get_rules(service).name is None
    assert contest.set_rules(service, name="KDT Spring 2026").name == "KDT Spring 2026"


@pytest.mark.parametrize("key, value", [
    ("freeze_at", datetime(2026, 12, 5, 7, 0, 30, 500000, tzinfo=UTC)),
    ("freeze_at", datetime(2026, 12, 5, 7, 0, 30, tzinfo=UTC)),
    ("starts_at", datetime(2026, 12, 5, 7, 0, tzinfo=UTC)),
    ("min_interval_seconds", 1234567.5),
    ("min_interval_seconds", 30.0),
])
def test_the_rules_forms_text_reads_back_as_the_stored_value(key, value):
    assert contest.parse_setting(key, contest.setting_text(value)) == value


def test_saving_the_rules_form_unchanged_after_an_unfreeze_keeps_it_lifted(service):
    """The form shows each stored value; posting it back changes nothing, so a lifted freeze (whose time
    had a fraction of a second) stays lifted."""
    freeze = datetime(2026, 12, 5, 7, 0, 30, 500000, tzinfo=UTC)
    contest.set_rules(service, freeze_at=freeze)
    lifted = contest.unfreeze(service, now=freeze.replace(minute=5))
    assert lifted.unfrozen is True
    shown = {key: contest.setting_text(getattr(lifted, key)) for key in contest.TEXT_SETTINGS}
    rules, changed = contest.set_rules_from_text(service, {**shown, "max_per_hour": "5"})
    assert changed == ["max_per_hour"] and rules.unfrozen is True and rules.freeze_at == freeze


HOSTILE = "# \x1b]0;PWNED\x07\x1b[2J\x1b[31mred\n\u009b31mx = 1\n"


def test_a_source_shown_to_a_terminal_has_its_control_characters_escaped(capfd):
    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "w", encoding="utf-8", closefd=True)
    stdout = sys.stdout
    sys.stdout = terminal
    try:
        output.write_source(HOSTILE, None, 7)
        terminal.flush()
        shown = os.read(master, 4096).decode().replace("\r\n", "\n")
    finally:
        sys.stdout = stdout
        terminal.close()
        os.close(master)
    assert shown == "# \\x1b]0;PWNED\\x07\\x1b[2J\\x1b[31mred\n\\x9b31mx = 1\n"
    assert "submission 7 holds control characters: shown escaped" in capfd.readouterr().err


def test_a_source_written_to_a_pipe_or_a_file_is_exact(tmp_path, capfdbinary):
    output.write_source(HOSTILE, None, 7)
    assert capfdbinary.readouterr().out == HOSTILE.encode()
    target = tmp_path / "back.py"
    output.write_source(HOSTILE, target, 7)
    assert target.read_bytes() == HOSTILE.encode()
