"""Property tests (schemathesis, its CLI) against the OpenAPI document a real server serves: every
contestant and public operation, with a valid token, through the coverage, fuzzing and stateful phases:
no 5xx, and every answer matches its documented status code, content type, headers and schema; an
operation needing a token refuses one without.

The server runs in broker mode without workers, so generated uploads that happen to be valid Python are
stored and queued but not graded (the Redis database is the tests' own and is flushed afterwards).
``positive_data_acceptance`` is left out: a body valid for the schema may still be refused by design
(random bytes are not Python: 400; a well-formed id may belong to nobody: 404), and those refusals are
checked against their documented schemas like every other answer.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.grader.service.service_testlib import Deployment
from tests.shared_services import locked_redis
from weblib import Server, add_user

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
# The selected operations by tag: 14 in all. Each tag is its own test (and schemathesis run), so that
# under xdist the two halves run at the same time; links between operations stay within a tag.
OPERATIONS = {"contestant": 10, "public": 4}


@pytest.fixture(scope="module")
def broker_server(tmp_path_factory):
    """One server of this module's tests (per xdist worker): broker mode without workers, so uploads are
    stored and queued but never graded; its Redis database is locked for the module and flushed after."""
    with locked_redis() as redis_url:
        deployment = Deployment(tmp_path_factory.mktemp("openapi"), None, redis_url)
        deployment.service.init_db()
        server = Server(deployment)
        try:
            yield server
        finally:
            server.stop()
            deployment.service.close()


@pytest.mark.parametrize("tag", sorted(OPERATIONS))
def test_contestant_and_public_operations_conform(broker_server, tag, tmp_path):
    server = broker_server
    token = add_user(server.deployment, f"fuzzer-{tag}")
    proc = subprocess.run(
        [str(SCHEMATHESIS), "run", f"{server.url}/api/v1/openapi.json", "--header", f"Authorization: Bearer {token}",
         "--include-tag-regex", f"^{tag}$", "--exclude-checks", "positive_data_acceptance",
         "--max-examples", "50", "--no-color"],
        capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    count = OPERATIONS[tag]
    assert f"Selected: {count}/" in proc.stdout and f"Tested: {count}" in proc.stdout
    assert " failed" not in proc.stdout.split("SUMMARY")[-1]
    assert token not in server.log()


def test_the_selected_tags_are_every_operation_but_the_organisers(broker_server):
    """The two runs above cover every operation that is not the organisers' (tag ``admin``)."""
    import httpx

    document = httpx.get(f"{broker_server.url}/api/v1/openapi.json", timeout=30).json()
    tags = [op["tags"][0] for item in document["paths"].values() for op in item.values()]
    assert {tag: tags.count(tag) for tag in set(tags)} == {**OPERATIONS, "admin": len(tags) - sum(OPERATIONS.values())}


def test_the_api_reference_page_lists_every_operation_and_loads_nothing_from_elsewhere(broker_server):
    """``/api/v1/docs`` is our own page made from the served document (FastAPI's Swagger page would load
    its script and styles from a CDN): every operation appears, with its token requirement, and the page
    refers to no other host and carries the pages' CSP."""
    import re

    import httpx

    server = broker_server
    document = httpx.get(f"{server.url}/api/v1/openapi.json", timeout=30).json()
    response = httpx.get(f"{server.url}/api/v1/docs", timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    html = response.text
    operations = [(m.upper(), p) for p, item in document["paths"].items() for m in item]
    assert len(operations) == 30
    for method, path in operations:
        assert f"<b>{method}</b> {path}</code>" in html, (method, path)
    assert re.findall(r'(?:src|href)="(?!/)[^"]*"', html) == []  # only this server's own paths
    scripts = re.findall(r"<script[^>]*>", html)  # the pages' own live.js (the header clock) and nothing else
    assert scripts == ['<script src="/static/live.js" defer>'], scripts
    row = html.split("<b>POST</b> /api/v1/submissions</code>")[1].split("</tr>")[0]
    assert "<td>token</td>" in row and "<code>429</code>" in row and "multipart/form-data" in row
    leaderboard = html.split("<b>GET</b> /api/v1/leaderboard</code>")[1].split("</tr>")[0]
    assert "<td>none</td>" in leaderboard
    rules = html.split("<b>GET</b> /api/v1/rules</code>")[1].split("</tr>")[0]
    assert "<td>none</td>" in rules and "ContestantRules" not in rules
    contest = html.split("<b>GET</b> /api/v1/contest</code>")[1].split("</tr>")[0]
    assert "<td>token (optional)</td>" in contest
    rejudge = html.split("<b>POST</b> /api/v1/admin/rejudge</code>")[1].split("</tr>")[0]
    assert "<td>admin</td>" in rejudge


def test_the_admin_api_shows_the_grading_queue_and_the_workers(broker_server):
    """``GET /api/v1/admin/queue`` and ``/workers`` answer what the admin page shows (the service's
    queries), to organisers only. No worker runs here: a submission waits; a claim made as a worker would
    make it is a running point, and its worker is seen."""
    import httpx

    import db
    from grader.service import queries
    from weblib import VADD_ONLY, submit

    server = broker_server
    service = server.deployment.service
    organiser, contestant = add_user(server.deployment, "queue-admin", admin=True), add_user(
        server.deployment, "queue-user")
    with server.client(contestant) as client:
        assert client.get("/admin/queue").status_code == 403 and client.get("/admin/workers").status_code == 403
        submission_id = submit(client, VADD_ONLY, "queued.py").json()["id"]
    assert httpx.get(f"{server.url}/api/v1/admin/queue", timeout=30).status_code == 401
    with service.session() as session:
        assert db.claim_attempt(session, submission_id, 1, 0, "w1@test") == 1
    with server.client(organiser) as client:
        queue, seen = client.get("/admin/queue"), client.get("/admin/workers")
    assert queue.status_code == 200 and seen.status_code == 200
    expected = queries.grading_queue(service)
    running = [p for p in queue.json()["running"] if p["submission_id"] == submission_id]
    assert [(p["task"], p["point"], p["worker"], p["attempts"], p["stuck"]) for p in running] == [
        (1, 0, "w1@test", 1, False)]
    assert queue.json()["queued"] == expected["queued"] and queue.json()["stuck_after"] == expected["stuck_after"]
    assert [(w["name"], w["graded"], w["running"]) for w in seen.json()] == [("w1@test", 0, 1)]
