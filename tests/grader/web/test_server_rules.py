"""The contest rules against a real server: the window (403), the minimum interval and hourly limit (429
with Retry-After), the pending limit (also under concurrent submissions), the freeze (a contestant sees
their own new result, the public leaderboard does not until unfreeze), organisers exempt."""
from __future__ import annotations

import concurrent.futures
import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from grader.service import contest
from weblib import NOTHING, VADD_ONLY, add_user, submit, wait_graded


def _count(deployment) -> int:
    return len(deployment.service.all_submissions())


def _queued_deployment(make_deployment, start_server, redis_url, database_url=None):
    """Broker mode without workers: nothing is graded, every submission stays pending."""
    deployment = make_deployment(database_url=database_url, broker_url=redis_url)
    deployment.service.init_db()
    return deployment


def test_window_refuses_before_the_start_and_after_the_end(make_deployment, start_server):
    deployment = make_deployment()
    token, root = add_user(deployment, "alice"), add_user(deployment, "root", admin=True)
    server = start_server(deployment)
    start = datetime.now(UTC) + timedelta(hours=1)
    deployment.cli("admin", "contest", "set", "--name", "KDT 2026", "--start", start.isoformat())
    with server.client(token) as client, server.client(root) as organiser:
        refused = submit(client, NOTHING)
        assert refused.status_code == 403 and refused.json()["error"] == "not_started"
        assert start.isoformat() in refused.json()["message"]
        info = client.get("/contest").json()
        assert info["name"] == "KDT 2026" and info["allowance"]["can_submit"] is False
        assert info["starts_at"] == start.isoformat()

        end = datetime.now(UTC) - timedelta(seconds=1)
        deployment.cli("admin", "contest", "set", "--start", "none", "--end", end.isoformat())
        refused = submit(client, NOTHING)
        assert refused.status_code == 403 and refused.json()["error"] == "ended"
        assert _count(deployment) == 0  # nothing stored for a refusal

        assert submit(organiser, NOTHING).status_code == 202  # organisers are not held to the window
        deployment.cli("admin", "contest", "set", "--end", "none")
        assert submit(client, NOTHING).status_code == 202


def test_min_interval_and_hourly_limit_answer_429_with_retry_after(make_deployment, start_server, redis_url):
    deployment = _queued_deployment(make_deployment, start_server, redis_url)
    alice, bob = add_user(deployment, "alice"), add_user(deployment, "bob")
    server = start_server(deployment)
    contest.set_rules(deployment.service, min_interval_seconds=600)
    with server.client(alice) as a, server.client(bob) as b:
        assert submit(a, NOTHING).status_code == 202
        refused = submit(a, NOTHING)
        assert refused.status_code == 429 and refused.json()["error"] == "rate_limited"
        assert 590 <= int(refused.headers["Retry-After"]) <= 600
        assert "one submission every 600 s" in refused.json()["message"]
        assert a.get("/contest").json()["allowance"]["retry_after"] == int(refused.headers["Retry-After"])
        assert submit(b, NOTHING).status_code == 202  # per user

        contest.set_rules(deployment.service, min_interval_seconds=None, max_per_hour=2)
        assert submit(a, NOTHING).status_code == 202
        refused = submit(a, NOTHING)
        assert refused.status_code == 429 and refused.json()["error"] == "hourly_limit"
        assert 3590 <= int(refused.headers["Retry-After"]) <= 3600
        assert a.get("/contest").json()["allowance"]["remaining_this_hour"] == 0
    assert _count(deployment) == 3


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_max_pending_holds_under_concurrent_submissions(backend, make_deployment, start_server, redis_url,
                                                        workers, request):
    url = request.getfixturevalue("postgresql_url") if backend == "postgresql" else None
    deployment = _queued_deployment(make_deployment, start_server, redis_url, url)
    token = add_user(deployment, "alice")
    server = start_server(deployment)
    contest.set_rules(deployment.service, max_pending=2)

    def one(_):
        with server.client(token) as client:
            return submit(client, NOTHING)
    # Waves of 8 at once. Each HTTP process takes one upload of hers at a time (``intake.Uploads``: the
    # others are refused at once, 429 upload_in_progress), so the two processes race for the pending slots.
    responses = []
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for _ in range(4):
            responses += list(pool.map(one, range(8)))
    assert sum(r.status_code == 202 for r in responses) == 2 and _count(deployment) == 2
    assert all(r.status_code in (202, 429) for r in responses)
    codes = {r.json()["error"] for r in responses if r.status_code == 429}
    assert "too_many_pending" in codes and codes <= {"too_many_pending", "upload_in_progress"}
    refused = next(r for r in responses if r.status_code == 429 and r.json()["error"] == "too_many_pending")
    assert refused.headers["Retry-After"] == "15"

    workers.start(deployment, concurrency=1)  # grade the two: a slot frees
    with server.client(token) as client:
        for r in responses:
            if r.status_code == 202:
                wait_graded(client, r.json()["id"])
        assert submit(client, NOTHING).status_code == 202


def test_freeze_hides_new_results_from_the_public_leaderboard_until_unfreeze(make_deployment, start_server):
    deployment = make_deployment()
    alice, bob = add_user(deployment, "alice"), add_user(deployment, "bob")
    server = start_server(deployment)
    with server.client(alice) as a, server.client(bob) as b, server.client() as public:
        first = submit(a, NOTHING).json()["id"]
        wait_graded(a, first)
        deployment.cli("admin", "contest", "set", "--freeze", datetime.now(UTC).isoformat())
        better = submit(a, VADD_ONLY).json()["id"]
        late = submit(b, VADD_ONLY).json()["id"]
        mine = wait_graded(a, better)
        wait_graded(b, late)
        total = mine["total"]  # their own result, in full
        assert total > 0 and mine["tasks"]["1"]["score"] == total and mine["status"] == "done"

        board = public.get("/leaderboard").json()
        assert board["frozen"] is True
        assert [(r["user_name"], r["submission_id"], r["total"]) for r in board["rows"]] == [("alice", first, 0.0)]
        assert public.get("/contest").json()["frozen"] is True
        assert a.get("/leaderboard").json() == board  # a token changes nothing on the public board

        deployment.cli("admin", "contest", "unfreeze")
        board = public.get("/leaderboard").json()
        assert board["frozen"] is False
        assert [(r["user_name"], r["submission_id"], r["total"]) for r in board["rows"]] == [
            ("alice", better, total), ("bob", late, total)]


def test_contest_settings_are_validated(make_deployment):
    deployment = make_deployment()
    naive = deployment.cli("admin", "contest", "set", "--start", "2026-12-06T09:00", check=False)
    assert naive.returncode == 2 and "has no UTC offset" in naive.stderr
    deployment.cli("admin", "contest", "set", "--start", "2026-12-06T09:00+08:00")
    order = deployment.cli("admin", "contest", "set", "--end", "2026-12-06T08:00+08:00", check=False)
    assert order.returncode == 1 and "must be after the start" in order.stderr
    assert deployment.cli("admin", "contest", "set", "--max-pending", "0", check=False).returncode == 1
    deployment.cli("admin", "contest", "set", "--end", "2026-12-06T14:00+08:00", "--min-interval", "30")
    shown = deployment.cli("admin", "contest", "show", "--json").stdout
    rules = json.loads(shown)
    assert rules["starts_at"] == "2026-12-06T01:00:00+00:00" and rules["ends_at"] == "2026-12-06T06:00:00+00:00"
    assert rules["min_interval_seconds"] == 30.0 and rules["max_pending"] is None
    table = deployment.cli("admin", "contest", "show").stdout  # times as the pages write them
    assert re.search(r"│ start +│ 2026-12-06 01:00:00 UTC +│", table) and re.search(r"│ freeze +│ - +│", table)
    assert re.search(r"│ end +│ 2026-12-06 06:00:00 UTC +│", table)
    for option, value, code, words in (("--min-interval", "inf", 1, "between 0 and 604800 seconds"),
                                       ("--min-interval", "nan", 1, "between 0 and 604800 seconds"),
                                       ("--max-per-hour", str(10**23), 1, "between 1 and 1000000"),
                                       ("--max-pending", str(2**63), 1, "between 1 and 1000000"),
                                       ("--start", "0001-01-01T00:00:00+14:00", 2, "not a plausible contest time")):
        refused = deployment.cli("admin", "contest", "set", option, value, check=False)
        assert refused.returncode == code and words in refused.stderr, (option, value, refused.stderr)
    assert json.loads(deployment.cli("admin", "contest", "show", "--json").stdout) == rules  # unchanged


def test_the_admin_api_refuses_out_of_range_settings_with_4xx_never_500(make_deployment, start_server):
    deployment = make_deployment()
    root = add_user(deployment, "root", admin=True)
    server = start_server(deployment)
    with server.client(root) as organiser:
        for body, status in (({"min_interval_seconds": float("inf")}, 422), ({"unknown": 1}, 422),
                             ({"max_per_hour": 10**23}, 400), ({"max_pending": 2**63}, 400),
                             ({"starts_at": "0001-01-01T00:00:00+14:00"}, 400)):
            text = json.dumps(body).replace("Infinity", "1e400")  # JSON has no infinity; 1e400 overflows to it
            response = organiser.patch("/admin/contest", content=text, headers={"Content-Type": "application/json"})
            assert response.status_code == status and set(response.json()) == {"error", "message"}, body
        rejudge = organiser.post("/admin/rejudge", json={"ids": [99999999999999999999]})
        assert rejudge.status_code == 422
