"""Clarifications and announcements over the JSON API of a real server (issue 25): tokens (401, 403 for a
contestant on the admin routes), another user's private question 404 until it is answered to all, the
hourly question limit 429 with Retry-After, texts checked on the server (400) and returned exactly as
written (JSON, never HTML), the organisers' queue oldest first, answer / answer to all reworded / ignore,
pinned announcements first; the OpenAPI document lists the operations. Then the CLI against the same
server: ``ask``, ``clarifications``, ``announcements`` and ``admin clarifications|answer|announce``."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx

from grader.service import contest
from tests.grader.service.service_testlib import clean_env, run_cli
from weblib import add_user

HOSTILE = "<script>alert('x')</script> & [red]markup[/red] \"quoted\""


def test_contestants_ask_organisers_answer_over_the_api(make_deployment, start_server):
    deployment = make_deployment()
    alice, bob = add_user(deployment, "alice"), add_user(deployment, "bob")
    root = add_user(deployment, "root", admin=True)
    server = start_server(deployment)
    with server.client() as anonymous, server.client(alice) as a, server.client(bob) as b, \
            server.client(root) as org:
        for method, path in (("GET", "/clarifications"), ("POST", "/clarifications"), ("GET", "/announcements"),
                             ("GET", "/clarifications/1")):
            refused = anonymous.request(method, path, json={"text": "hi"})
            assert (refused.status_code, refused.json()["error"]) == (401, "unauthorized"), path
        for method, path in (("GET", "/admin/clarifications"), ("POST", "/admin/clarifications/1/answer"),
                             ("POST", "/admin/clarifications/1/ignore"), ("POST", "/admin/announcements")):
            refused = a.request(method, path, json={"text": "hi"})
            assert (refused.status_code, refused.json()["error"]) == (403, "admin_only"), path

        asked = a.post("/clarifications", json={"text": HOSTILE, "task": 3})
        assert asked.status_code == 201 and asked.headers["content-type"] == "application/json"
        q1 = asked.json()
        assert {k: v for k, v in q1.items() if k != "created"} == {
            "id": 1, "task": 3, "text": HOSTILE, "state": "open", "answer": None, "published": False,
            "answered_at": None, "mine": True}
        q2 = b.post("/clarifications", json={"text": "My submission is stuck"}).json()
        q3 = a.post("/clarifications", json={"text": "Can I use numpy?", "task": None}).json()
        assert (q2["id"], q2["task"], q3["id"]) == (2, None, 3)

        bad = a.post("/clarifications", json={"text": "x" * 2001})
        assert bad.status_code == 400 and bad.json() == {
            "error": "bad_text", "message": "the question has 2001 characters; at most 2000 are allowed"}
        bad = a.post("/clarifications", json={"text": "which?", "task": 9})
        assert bad.status_code == 400 and bad.json()["error"] == "bad_task"
        assert a.post("/clarifications", json={"text": "hi", "author": "bob"}).status_code == 422
        # JSON true is not task 1 (schemathesis, ST201: it used to be read as 1 and stored)
        assert a.post("/clarifications", json={"text": "k", "task": True}).status_code == 422

        mine = b.get("/clarifications/1")  # alice's, private
        assert mine.status_code == 404 and mine.json() == {"error": "not_found", "message": "no question 1 you can read"}
        assert b.get("/clarifications/99").json() == {"error": "not_found", "message": "no question 99 you can read"}
        assert [q["id"] for q in b.get("/clarifications").json()] == [2]

        queue = org.get("/admin/clarifications").json()
        assert [(q["id"], q["author"], q["task"], q["text"]) for q in queue] == [
            (1, "alice", 3, HOSTILE), (2, "bob", None, "My submission is stuck"), (3, "alice", None, "Can I use numpy?")]
        answered = org.post("/admin/clarifications/1/answer",
                            json={"text": "Yes, 1,919,810 <cycles>.", "publish": True,
                                  "public_text": "Is the task 3 threshold right?"})
        assert answered.status_code == 200
        assert {k: answered.json()[k] for k in ("state", "published", "public_text", "handled_by_name")} == {
            "state": "answered", "published": True, "public_text": "Is the task 3 threshold right?",
            "handled_by_name": "root"}
        assert org.post("/admin/clarifications/2/answer", json={"text": "Rejudged."}).json()["published"] is False
        assert org.post("/admin/clarifications/3/ignore").json()["state"] == "ignored"
        missing = org.post("/admin/clarifications/77/answer", json={"text": "?"})
        assert missing.status_code == 404 and missing.json()["message"] == "no question 77"
        assert org.post("/admin/clarifications/2/answer", json={"text": ""}).json()["error"] == "bad_text"
        assert org.get("/admin/clarifications").json() == []
        assert [q["id"] for q in org.get("/admin/clarifications", params={"all": "true"}).json()] == [3, 2, 1]

        published = b.get("/clarifications/1").json()
        assert {k: v for k, v in published.items() if k not in ("created", "answered_at")} == {
            "id": 1, "task": 3, "text": "Is the task 3 threshold right?", "state": "answered",
            "answer": "Yes, 1,919,810 <cycles>.", "published": True, "mine": False}
        assert [(q["id"], q["mine"], q["answer"]) for q in b.get("/clarifications").json()] == [
            (2, True, "Rejudged."), (1, False, "Yes, 1,919,810 <cycles>.")]
        assert [(q["id"], q["state"], q["text"]) for q in a.get("/clarifications").json()] == [
            (3, "ignored", "Can I use numpy?"), (1, "answered", HOSTILE)]
        assert a.get("/clarifications/2").status_code == 404  # bob's private answer stays his

        first = org.post("/admin/announcements", json={"text": "Task 2 rejudged"})
        assert first.status_code == 201 and first.json()["pinned"] is False
        org.post("/admin/announcements", json={"text": "Contest extended by 30 min", "pinned": True})
        contest.set_rules(deployment.service, freeze_at=datetime.now(UTC) - timedelta(minutes=1))
        assert anonymous.get("/leaderboard").json()["frozen"] is True  # the freeze hides no announcement
        assert [(n["text"], n["pinned"]) for n in b.get("/announcements").json()] == [
            ("Contest extended by 30 min", True), ("Task 2 rejudged", False)]

        contest.set_rules(deployment.service, max_questions_per_hour=1)  # bob asked one already
        limited = b.post("/clarifications", json={"text": "and another"})
        assert limited.status_code == 429 and limited.json()["error"] == "question_limit"
        assert 3590 <= int(limited.headers["Retry-After"]) <= 3600
        assert limited.json()["message"].startswith("at most 1 questions per hour: try again in ")
        assert org.post("/clarifications", json={"text": "organisers are not limited"}).status_code == 201
        assert anonymous.get("/contest").json()["limits"]["max_questions_per_hour"] == 1

    document = httpx.get(f"{server.url}/api/v1/openapi.json", timeout=30).json()
    assert {(m.upper(), p) for p, item in document["paths"].items() for m in item if "clarification" in p
            or "announcement" in p} == {
        ("POST", "/api/v1/clarifications"), ("GET", "/api/v1/clarifications"),
        ("GET", "/api/v1/clarifications/{clarification_id}"), ("GET", "/api/v1/announcements"),
        ("GET", "/api/v1/admin/clarifications"), ("POST", "/api/v1/admin/clarifications/{clarification_id}/answer"),
        ("POST", "/api/v1/admin/clarifications/{clarification_id}/ignore"), ("POST", "/api/v1/admin/announcements")}
    assert "429" in document["paths"]["/api/v1/clarifications"]["post"]["responses"]
    assert alice not in server.log() and root not in server.log()


def _env(tmp_path, server, token) -> dict:
    return {**clean_env(), "XDG_CONFIG_HOME": str(tmp_path / "config"), "COLUMNS": "200",
            "KDT_GRADE_SERVER": server.url, "KDT_GRADE_TOKEN": token}


def test_the_cli_asks_answers_and_announces_through_the_server(make_deployment, start_server, tmp_path):
    deployment = make_deployment()
    alice, bob, root = add_user(deployment, "alice"), add_user(deployment, "bob"), add_user(deployment, "root", admin=True)
    server = start_server(deployment)
    as_alice, as_bob, as_root = (_env(tmp_path, server, t) for t in (alice, bob, root))

    sent = run_cli(["ask", "Is the task 2 threshold right?", "--task", "2"], as_alice).stdout
    assert sent == "question 1 sent (task 2); its answer will be in `kdt-grade clarifications`\n"
    second = json.loads(run_cli(["ask", "[red]not markup[/red]", "--json"], as_bob).stdout)
    assert (second["id"], second["task"], second["text"], second["state"]) == (2, None, "[red]not markup[/red]", "open")
    refused = run_cli(["ask", "x" * 2001], as_alice, check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip() == "refused: the question has 2001 characters; at most 2000 are allowed"
    unknown = run_cli(["ask", "?", "--task", "9", "--json"], as_alice, check=False)
    assert unknown.returncode == 2 and json.loads(unknown.stdout)["error"] == "bad_task"

    queue = run_cli(["admin", "clarifications"], as_root).stdout
    assert queue.index("Is the task 2 threshold right?") < queue.index("[red]not markup[/red]")  # oldest first
    assert "alice" in queue and "bob" in queue and "Open questions" in queue
    denied = run_cli(["admin", "clarifications"], as_alice, check=False)
    assert denied.returncode == 2 and "refused: this needs an organiser's (admin) token" in denied.stderr
    answered = run_cli(["admin", "answer", "1", "Yes, it is.", "--to-all", "--public-text",
                        "Is a threshold right?"], as_root).stdout
    assert answered == "question 1 of alice answered to everyone\n"
    assert run_cli(["admin", "answer", "2", "Rejudged."], as_root).stdout == "question 2 of bob answered privately\n"
    usage = run_cli(["admin", "answer", "2", "x", "--public-text", "y"], as_root, check=False)
    assert usage.returncode == 2 and "--public-text is the wording shown to everyone" in usage.stderr
    missing = run_cli(["admin", "answer", "9", "x"], as_root, check=False)
    assert missing.returncode == 2 and "refused: no question 9" in missing.stderr
    assert run_cli(["admin", "clarifications", "--json"], as_root).stdout.strip() == "[]"
    every = json.loads(run_cli(["admin", "clarifications", "--all", "--json"], as_root).stdout)
    assert [(q["id"], q["state"], q["published"], q["handled_by_name"]) for q in every] == [
        (2, "answered", False, "root"), (1, "answered", True, "root")]
    made = run_cli(["admin", "announce", "Contest extended by 30 min", "--pin"], as_root).stdout
    assert made == "announcement 1 made (pinned)\n"
    run_cli(["admin", "announce", "Task 2 rejudged"], as_root)

    bobs = json.loads(run_cli(["clarifications", "--json"], as_bob).stdout)
    assert [(q["id"], q["mine"], q["text"], q["answer"]) for q in bobs] == [
        (2, True, "[red]not markup[/red]", "Rejudged."), (1, False, "Is a threshold right?", "Yes, it is.")]
    table = run_cli(["clarifications"], as_bob).stdout
    assert "[red]not markup[/red]" in table and "answered (to all), not yours" in table and "general" in table
    assert [(n["id"], n["pinned"]) for n in json.loads(run_cli(["announcements", "--json"], as_alice).stdout)] == [
        (1, True), (2, False)]
    shown = run_cli(["announcements"], as_alice).stdout
    assert shown.index("Contest extended by 30 min") < shown.index("Task 2 rejudged") and "pinned" in shown

    # without a server they read this machine's database (tests/grader/service/test_cli_organiser.py); where
    # there is none, they say so rather than make one
    alone = {**clean_env(), "XDG_CONFIG_HOME": str(tmp_path / "none"), "KDT_GRADE_DATA_DIR": str(tmp_path / "none")}
    local = run_cli(["clarifications"], alone, check=False)
    assert local.returncode == 1 and "no server is configured (`kdt-grade login --server URL` sets one)" in local.stderr
    assert not (tmp_path / "none" / "kdt-grade.sqlite3").exists()
