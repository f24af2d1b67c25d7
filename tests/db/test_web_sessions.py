"""Server-side page sessions (`db.web_sessions`, `grader.service.login_sessions`), on SQLite and PostgreSQL: only the id's
hash is stored; logging out, a token reset and disabling end sessions; expired ones are refused."""
from __future__ import annotations

import hashlib
from datetime import timedelta

from db.base import utcnow
from db.web_sessions import create_web_session, find_web_session
from grader.service import accounts, login_sessions as sessions
from grader.config import load_settings
from grader.service import Service


def test_sessions_live_until_logout_reset_or_disable(db_url, tmp_path):
    service = Service(load_settings(database_url=db_url, data_dir=tmp_path))
    try:
        _row, token = accounts.add_user(service, "alice")
        bob_token = accounts.add_user(service, "bob")[1]
        account, first = sessions.log_in(service, token)
        _, second = sessions.log_in(service, token)
        _, bobs = sessions.log_in(service, bob_token)
        assert account.name == "alice" and first != second and token not in (first, second)
        assert sessions.account_of(service, first).name == "alice"
        with service.read_session() as session:  # the id is found by its hash only
            assert find_web_session(session, hashlib.sha256(first.encode()).hexdigest(), utcnow()) is not None
            assert find_web_session(session, first, utcnow()) is None

        sessions.log_out(service, first)
        assert sessions.account_of(service, first) is None and sessions.account_of(service, second) is not None
        accounts.reset_token(service, "alice")
        assert sessions.account_of(service, second) is None
        assert sessions.account_of(service, bobs).name == "bob"
        accounts.set_disabled(service, "bob", True)
        accounts.set_disabled(service, "bob", False)
        assert sessions.account_of(service, bobs) is None
        for junk in (None, "", "x", "é" * 43, "A" * 500):
            assert sessions.account_of(service, junk) is None

        # an expired session is refused, and the next login deletes it
        expired = "E" * 43
        now = utcnow()
        user_id = accounts.list_users(service)[0]["id"]
        with service.session() as session:
            create_web_session(session, user_id, hashlib.sha256(expired.encode()).hexdigest(),
                               now - timedelta(hours=13), now - timedelta(hours=1))
        assert sessions.account_of(service, expired) is None
    finally:
        service.close()
