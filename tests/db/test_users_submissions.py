"""Users and submissions (`db.users`, `db.submissions`), on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

from db.session import session_scope
from db.submissions import create_submission, get_submission
from db.users import get_or_create_user, get_user


def test_get_or_create_user_returns_the_same_user(factory):
    with session_scope(factory) as session:
        first = get_or_create_user(session, "alice")
    with session_scope(factory) as session:
        again = get_or_create_user(session, "alice")
        other = get_or_create_user(session, "bob")
        missing = get_user(session, 999)
    assert first == again
    assert other["id"] != first["id"]
    assert missing is None
    assert set(first) == {"id", "name", "created"}


@pytest.mark.parametrize("name", ["", "x" * 101])
def test_user_names_are_checked(factory, name):
    with session_scope(factory) as session, pytest.raises(ValueError):
        get_or_create_user(session, name)


def test_submission_round_trip_as_plain_data(factory):
    source = "def get_kernel(task_id):\n    return None\n"
    with session_scope(factory) as session:
        user_id = get_or_create_user(session, "alice")["id"]
        created = create_submission(session, user_id, "kernel.py", "c" * 64, source)
    with session_scope(factory) as session:
        plain = get_submission(session, created["id"])
        full = get_submission(session, created["id"], include_source=True)
        missing = get_submission(session, created["id"] + 1)
    assert plain == created
    assert "source" not in plain and full["source"] == source
    assert (plain["user_id"], plain["total"], plain["task4"]) == (user_id, None, None)
    assert missing is None


@pytest.mark.parametrize(("file_name", "sha256"), [("k.py", "ABC"), ("k.py", "G" * 64), ("", "a" * 64)])
def test_submission_fields_are_checked(factory, file_name, sha256):
    with session_scope(factory) as session:
        user_id = get_or_create_user(session, "alice")["id"]
        with pytest.raises(ValueError):
            create_submission(session, user_id, file_name, sha256, "")
