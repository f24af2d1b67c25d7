"""Accounts, tokens and isolation against a real server: 401 without or with an unknown token, 403 for a
disabled user and for admin routes, 404 for another user's submission exactly as for a missing one, and
no token ever in the server's log."""
from __future__ import annotations

import hashlib
import json

import db
from db.users import User
from grader.service import accounts
from sqlalchemy import select
from weblib import NOTHING, add_user, submit, wait_graded


def test_each_user_sees_only_their_own_submissions(make_deployment, start_server):
    deployment = make_deployment()
    alice, bob = add_user(deployment, "alice"), add_user(deployment, "bob")
    server = start_server(deployment)
    with server.client(alice) as a, server.client(bob) as b, server.client() as anonymous:
        accepted = submit(a, NOTHING)
        assert accepted.status_code == 202, accepted.text
        sid = accepted.json()["id"]
        assert accepted.json() == {"id": sid, "status": "queued", "url": f"{server.url}/api/v1/submissions/{sid}"}
        state = wait_graded(a, sid)
        assert (state["user"], state["status"], state["total"]) == ("alice", "done", 0.0)
        assert all(p["worker"] is None for p in state["points"])  # the judge's host names stay private
        assert a.get(f"/submissions/{sid}/source").text == NOTHING.read_text()
        assert [r["submission_id"] for r in a.get("/submissions").json()] == [sid]

        # Bob: A's id and a missing id answer alike.
        missing = sid + 1000
        for path in (f"/submissions/{sid}", f"/submissions/{sid}/source"):
            response = b.get(path)
            assert response.status_code == 404
            assert response.json() == {"error": "not_found", "message": f"no submission {sid} of yours"}
        assert b.get(f"/submissions/{missing}").json() == {"error": "not_found",
                                                           "message": f"no submission {missing} of yours"}
        assert b.get("/submissions").json() == []

        for path in ("/submissions", f"/submissions/{sid}", f"/submissions/{sid}/source"):
            response = anonymous.get(path)
            assert response.status_code == 401 and response.json()["error"] == "unauthorized"
        assert anonymous.post("/submissions", files={"file": ("x.py", b"x = 1\n")}).status_code == 401
        assert anonymous.get("/leaderboard").status_code == 200  # public
    with server.client("kdt_" + "A" * 43) as forged:
        assert forged.get("/submissions").status_code == 401
        assert forged.get("/submissions").json()["message"].startswith("unknown token")
    with server.client() as misplaced:  # a token put in the query string by mistake: refused, not logged
        assert misplaced.get("/submissions", params={"token": alice}).status_code == 401
        assert misplaced.get("/leaderboard", params={"token": alice}).status_code == 200
        assert misplaced.get(f"/submissions/{alice}").status_code in (401, 404, 422)  # pasted into the path
        encoded = "%6B" + alice[1:].replace("_", "%5F", 1)  # attacker review: percent-encoded, it was logged
        assert misplaced.get(f"/x/{encoded}").status_code == 404
    log = server.log()
    assert "A" * 43 not in log and alice not in log
    assert "GET /api/v1/submissions/kdt_… HTTP/1.1" in log and "GET /api/v1/x/kdt_… HTTP/1.1" in log
    assert alice[4:] not in log and alice[5:] not in log
    assert 'GET /api/v1/leaderboard?… HTTP/1.1" 200' in log


def test_disabled_user_reset_token_and_admin_routes(make_deployment, start_server):
    deployment = make_deployment()
    carol, root = add_user(deployment, "carol"), add_user(deployment, "root", admin=True)
    server = start_server(deployment)
    with server.client(carol) as c, server.client(root) as r:
        assert c.get("/submissions").status_code == 200
        accounts.set_disabled(deployment.service, "carol", True)
        refused = c.get("/submissions")
        assert refused.status_code == 403
        assert refused.json() == {"error": "disabled", "message": "the account 'carol' is disabled; ask the organisers"}
        assert submit(c, NOTHING).status_code == 403
        accounts.set_disabled(deployment.service, "carol", False)
        assert c.get("/submissions").status_code == 200

        assert c.get("/admin/submissions").status_code == 403
        assert c.get("/admin/submissions").json()["error"] == "admin_only"
        assert r.get("/admin/submissions").status_code == 200
        assert [u["name"] for u in r.get("/admin/users").json()] == ["carol", "root"]

        new = accounts.reset_token(deployment.service, "carol")
        assert c.get("/submissions").status_code == 401  # the old token no longer works
    with server.client(new) as c2:
        assert c2.get("/submissions").status_code == 200
    log = server.log()
    for token in (carol, root, new):
        assert token not in log
    assert '"GET /api/v1/submissions HTTP/1.1" 401' in log  # the log does show the requests themselves


def test_only_the_token_hash_is_stored(make_deployment):
    deployment = make_deployment()
    account, token = accounts.add_user(deployment.service, "dave", display_name="Dave D.")
    assert token.startswith("kdt_") and len(token) == 4 + 43
    with deployment.service.session() as session:
        row = session.scalars(select(User).where(User.name == "dave")).one()
        stored = {c.key: getattr(row, c.key) for c in User.__table__.columns}
    assert stored["token_hash"] == hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr(stored)
    assert (stored["display_name"], stored["disabled"], stored["is_admin"]) == ("Dave D.", False, False)
    assert accounts.authenticate(deployment.service, token).name == "dave"
    assert account["has_token"] is True


def test_users_import_is_all_or_nothing(make_deployment, tmp_path):
    deployment = make_deployment()
    add_user(deployment, "taken")
    bad = tmp_path / "bad.csv"
    bad.write_text("name,display_name\nnew1,New One\ntaken,Again\n")
    proc = deployment.cli("admin", "users", "import", bad, check=False)
    assert proc.returncode == 1 and "a user called 'taken' exists already; nothing was imported" in proc.stderr
    with deployment.service.session() as session:
        assert db.accounts.get_account(session, "new1") is None

    good = tmp_path / "good.csv"
    good.write_text("new1,New One\nnew2\n\n")
    lines = deployment.cli("admin", "users", "import", good).stdout.splitlines()
    assert lines[0] == "name,token" and [line.split(",")[0] for line in lines[1:]] == ["new1", "new2"]
    tokens = dict(line.split(",") for line in lines[1:])
    assert accounts.authenticate(deployment.service, tokens["new2"]).name == "new2"
    listed = {u["name"]: u for u in accounts.list_users(deployment.service)}
    assert listed["new1"]["display_name"] == "New One" and listed["new2"]["display_name"] is None

    added = deployment.cli("admin", "users", "add", "erin", "--admin", "--json").stdout
    erin = json.loads(added)
    assert set(erin) == {"user", "token"} and erin["user"] == "erin"
    assert accounts.authenticate(deployment.service, erin["token"]).is_admin
    assert deployment.cli("admin", "users", "add", "bad name", check=False).returncode == 1
