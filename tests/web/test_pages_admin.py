"""The organisers' page over a real ``kdt-grade serve`` (uvicorn on a loopback port, embedded grading,
SQLite), driven with plain HTTP: freezing now keeps the scheduled freeze."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from grader.service import contest
from pages_testlib import csrf_of, server, wait_until  # noqa: F401 (server: a fixture)


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

    assert admin.post("/admin/freeze", data={"csrf": csrf}).status_code == 303
    assert _public_frozen(server) is True
    assert api.get("/admin/contest").json()["freeze_at"] == scheduled.isoformat()  # the schedule is kept

    assert admin.post("/admin/unfreeze", data={"csrf": csrf}).status_code == 303
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
