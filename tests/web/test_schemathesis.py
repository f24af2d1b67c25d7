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
    assert "Selected: 6/" in proc.stdout and "Tested: 6" in proc.stdout
    assert " failed" not in proc.stdout.split("SUMMARY")[-1]
    assert token not in server.log()
