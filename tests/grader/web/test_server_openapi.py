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

from weblib import add_user

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def test_contestant_and_public_operations_conform(make_deployment, start_server, redis_url, tmp_path):
    deployment = make_deployment(broker_url=redis_url)
    deployment.service.init_db()
    token = add_user(deployment, "fuzzer")
    server = start_server(deployment)
    proc = subprocess.run(
        [str(SCHEMATHESIS), "run", f"{server.url}/api/v1/openapi.json", "--header", f"Authorization: Bearer {token}",
         "--include-tag-regex", "^(contestant|public)$", "--exclude-checks", "positive_data_acceptance",
         "--max-examples", "50", "--no-color"],
        capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Selected: 11/" in proc.stdout and "Tested: 11" in proc.stdout
    assert " failed" not in proc.stdout.split("SUMMARY")[-1]
    assert token not in server.log()


def test_the_api_reference_page_lists_every_operation_and_loads_nothing_from_elsewhere(make_deployment, start_server):
    """``/api/v1/docs`` is our own page made from the served document (FastAPI's Swagger page would load
    its script and styles from a CDN): every operation appears, with its token requirement, and the page
    refers to no other host and carries the pages' CSP."""
    import re

    import httpx

    deployment = make_deployment()
    server = start_server(deployment)
    document = httpx.get(f"{server.url}/api/v1/openapi.json", timeout=30).json()
    response = httpx.get(f"{server.url}/api/v1/docs", timeout=30)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    html = response.text
    operations = [(m.upper(), p) for p, item in document["paths"].items() for m in item]
    assert len(operations) == 24
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
