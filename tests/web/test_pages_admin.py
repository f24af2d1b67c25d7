"""The organisers' page over a real ``kdt-grade serve`` (uvicorn on a loopback port, embedded grading,
SQLite), driven with plain HTTP: freezing now keeps the scheduled freeze; freeze, unfreeze and rejudge
act only once confirmed."""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html import unescape

import httpx

import db
from grader.service import contest
from pages_testlib import csrf_of, server, submit_page, wait_done, wait_until  # noqa: F401 (server: a fixture)
from weblib import NOTHING


def confirm_form(html: str) -> tuple[str, dict]:
    """The action and the hidden fields of a confirmation page's form (what its button posts)."""
    form = re.search(r'<form method="post" action="([^"]+)" class="inline" id="confirm-form">(.*?)</form>',
                     html, re.S)
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.group(2)))
    return unescape(form.group(1)), {k: unescape(v) for k, v in fields.items()}


def _public_frozen(server) -> bool:
    return httpx.get(f"{server.url}/api/v1/contest").json()["frozen"]


def test_freezing_now_then_unfreezing_keeps_the_scheduled_freeze(server):
    root = server.add_user("root", admin=True)
    scheduled = (datetime.now(UTC) + timedelta(seconds=15)).replace(microsecond=0)
    contest.set_rules(server.deployment.service, freeze_at=scheduled)
    admin, api = server.client(root), httpx.Client(base_url=f"{server.url}/api/v1",
                                                    headers={"Authorization": f"Bearer {root}"})
    csrf = csrf_of(admin.get("/admin").text)
    assert _public_frozen(server) is False

    assert admin.post("/admin/freeze", data={"csrf": csrf, "confirm": "yes"}).status_code == 303
    assert _public_frozen(server) is True
    assert api.get("/admin/contest").json()["freeze_at"] == scheduled.isoformat()  # the schedule is kept

    assert admin.post("/admin/unfreeze", data={"csrf": csrf, "confirm": "yes"}).status_code == 303
    assert _public_frozen(server) is False
    stored = api.get("/admin/contest").json()
    assert (stored["freeze_at"], stored["unfrozen"], stored["frozen_since"]) == (scheduled.isoformat(), False, None)

    # the API's and the command's freeze now are the same
    frozen = api.post("/admin/contest/freeze").json()
    assert frozen["freeze_at"] == scheduled.isoformat() and frozen["frozen_since"] is not None
    assert api.post("/admin/contest/unfreeze").json()["frozen_since"] is None
    assert "frozen by hand since" in server.cli("admin", "contest", "freeze") and _public_frozen(server) is True
    server.cli("admin", "contest", "unfreeze")
    stored = api.get("/admin/contest").json()
    assert (stored["freeze_at"], stored["unfrozen"], stored["frozen_since"]) == (scheduled.isoformat(), False, None)
    assert _public_frozen(server) is False
    # the last hour's freeze still comes, at its time
    wait_until(lambda: _public_frozen(server), 20, "the scheduled freeze")
    assert datetime.now(UTC) >= scheduled


def _generation(server, submission_id: int) -> int:
    with server.deployment.service.session() as session:
        return db.get_submission(session, submission_id)["generation"]


def test_freeze_unfreeze_and_rejudge_change_nothing_until_confirmed(server):
    root, alice = server.add_user("root", admin=True), server.add_user("alice", display_name="Alice A.")
    contestant = server.client(alice)
    assert submit_page(contestant, NOTHING).status_code == 303
    wait_done(contestant, 1)
    admin = server.client(root)
    csrf = csrf_of(admin.get("/admin").text)

    asked = admin.post("/admin/freeze", data={"csrf": csrf})  # the button: a confirmation page
    assert asked.status_code == 200 and "<h1>Freeze the scoreboard now?</h1>" in asked.text
    assert "Nothing has been changed yet: this needs your confirmation." in asked.text
    assert "No freeze is scheduled." in asked.text
    assert _public_frozen(server) is False and contest.get_rules(server.deployment.service).frozen_since is None
    action, fields = confirm_form(asked.text)
    assert (action, fields) == ("/admin/freeze", {"csrf": csrf, "confirm": "yes"})
    assert admin.post("/admin/freeze", data={"csrf": csrf, "confirm": "no"}).status_code == 200  # not "yes"
    assert admin.post(action, data={**fields, "csrf": "forged"}).status_code == 403
    assert _public_frozen(server) is False
    done = admin.post(action, data=fields)
    assert done.status_code == 303 and done.headers["location"] == "/admin?notice=frozen"
    assert _public_frozen(server) is True

    asked = admin.post("/admin/unfreeze", data={"csrf": csrf})
    assert asked.status_code == 200 and "<h1>Unfreeze the scoreboard?</h1>" in asked.text
    assert _public_frozen(server) is True
    action, fields = confirm_form(asked.text)
    assert admin.post(action, data=fields).headers["location"] == "/admin?notice=unfrozen"
    assert _public_frozen(server) is False

    asked = admin.post("/admin/rejudge", data={"csrf": csrf, "id": "1"})
    assert asked.status_code == 200 and "<h1>Rejudge submission 1?</h1>" in asked.text
    assert "Submission 1 of alice is graded again from scratch." in asked.text
    assert "Its current total (0.00) stays on the scoreboard until the new grading finishes." in asked.text
    assert _generation(server, 1) == 0  # not rejudged
    action, fields = confirm_form(asked.text)
    assert (action, fields) == ("/admin/rejudge", {"csrf": csrf, "id": "1", "confirm": "yes"})
    assert admin.post(action, data=fields).headers["location"] == "/admin?notice=rejudged&id=1"
    assert _generation(server, 1) == 1
    missing = admin.post("/admin/rejudge", data={"csrf": csrf, "id": "99"})
    assert missing.status_code == 303 and missing.headers["location"] == "/admin?notice=no_submission&id=99"
