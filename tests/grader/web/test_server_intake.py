"""The upload and the error documents against a real server: the intake's 400s, 413 while reading (a
declared length and a chunked body, before the whole body arrives), JSON bodies for 404/405/422, 503
when the database is down, and a crash answered 500 without a trace."""
from __future__ import annotations

import socket

import pytest
from fastapi.testclient import TestClient

from grader.config import load_settings
from grader.web.app import create_app
from tests.grader.service.service_testlib import wait_until
from pages_testlib import module_server
from weblib import add_user, free_port

LIMIT = 4096


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    """One server with a small upload limit for the tests marked ``shared`` (each counts what it stored)."""
    with module_server(tmp_path_factory, "small-server", submission_max_bytes=LIMIT) as pages:
        yield pages.deployment, pages.server, add_user(pages.deployment, "alice")


shared = pytest.mark.xdist_group("server-intake-small-server")  # one worker, so one start of small_server


def stored(deployment) -> int:
    """How many submissions the deployment has stored."""
    return len(deployment.service.all_submissions())


def _raw(port: int, head: bytes, body_chunks=()) -> bytes:
    """Send a request head and (possibly) body chunks on a raw socket; return what the server answers.
    Sending stops as soon as the server has answered or closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except ConnectionResetError:
            pass
        return answer


@shared
def test_intake_refusals_are_400_and_store_nothing(small_server):
    deployment, server, token = small_server
    before = stored(deployment)
    cases = {
        b"": "the file is empty",
        b"\xff\xfe bad": "the file is not UTF-8 text (byte 0)",
        b"def f(:\n": "the file is not valid Python: line 1",
    }
    with server.client(token) as client:
        for data, message in cases.items():
            response = client.post("/submissions", files={"file": ("k.py", data)})
            assert response.status_code == 400, response.text
            assert response.json()["error"] == "rejected" and message in response.json()["message"]
            assert response.json()["message"].endswith("Nothing was stored.")
        no_file = client.post("/submissions", data={"other": "x"}, files={"wrong": ("k.py", b"x = 1\n")})
        assert no_file.status_code == 400 and no_file.json() == {
            "error": "bad_upload", "message": "the form has no file in the field `file`"}
        not_multipart = client.post("/submissions", json={"file": "x = 1"})
        assert not_multipart.status_code == 400 and not_multipart.json()["error"] == "bad_upload"
        too_large = client.post("/submissions", files={"file": ("k.py", b"#" * (LIMIT + 1))})
        assert too_large.status_code == 413 and too_large.json() == {
            "error": "too_large", "message": f"the file is {LIMIT + 1} bytes; the limit is {LIMIT} bytes. "
                                             "Nothing was stored."}
        assert client.post("/submissions", files={"file": ("k.py", b"#" * LIMIT)}).status_code == 202
    assert stored(deployment) == before + 1  # the last one only


@shared
def test_too_large_is_refused_while_reading(small_server):
    deployment, server, token = small_server
    before = stored(deployment)
    head = (f"POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: multipart/form-data; boundary=XyZ\r\n")
    # A declared length of 100 MB: answered before any of the body is sent.
    answer = _raw(server.port, (head + "Content-Length: 100000000\r\n\r\n").encode())
    assert answer.startswith(b"HTTP/1.1 413 ") and b'"error":"too_large"' in answer
    # No declared length (chunked): answered once the body passes the cap, long before its 100 MB end.
    def framed(data: bytes) -> bytes:
        return (b"%x\r\n" % len(data)) + data + b"\r\n"
    part = b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="k.py"\r\n\r\n'
    answer = _raw(server.port, (head + "Transfer-Encoding: chunked\r\n\r\n").encode(),
                  [framed(part)] + [framed(b"#" * 8192)] * 12_800)
    assert answer.startswith(b"HTTP/1.1 413 ") and b'"error":"too_large"' in answer
    assert stored(deployment) == before


@shared
def test_a_token_of_nobody_is_refused_before_the_body_is_read(small_server):
    """The token (its form, then its account, and the contest's rules) is checked before any of the upload
    is read: a client with no account cannot make the server read and hold bodies."""
    deployment, server, _token = small_server
    before = stored(deployment)
    for authorization, message in (("", "this needs a token"), ("Authorization: Bearer x!\r\n", "the token is malformed"),
                                   (f"Authorization: Bearer kdt_{'B' * 43}\r\n", "unknown token")):
        head = ("POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n" + authorization +
                "Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 100000000\r\n\r\n")
        answer = _raw(server.port, head.encode())  # answered although none of the 100 MB is sent
        assert answer.startswith(b"HTTP/1.1 401 ") and b'"error":"unauthorized"' in answer, answer
        assert message.encode() in answer
    assert stored(deployment) == before


def test_one_upload_at_a_time_per_account_and_http_process(make_deployment, start_server):
    """While an upload of alice's is being taken in (here: its body stalls half way), a second one of hers
    is refused at once (429, Retry-After: 1) and bob's goes through; once hers ends, she may submit again.
    (One HTTP process, so that both connections reach the same one.)"""
    deployment = make_deployment(submission_max_bytes=LIMIT)
    alice, bob = add_user(deployment, "alice"), add_user(deployment, "bob")
    server = start_server(deployment, KDT_GRADE_HTTP_WORKERS=1)
    part = b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="k.py"\r\n\r\nx = 1\n'
    head = (f"POST /api/v1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {alice}\r\n"
            "Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 1000\r\n\r\n").encode()
    stalled = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    try:
        stalled.sendall(head + part)  # 1000 bytes declared, a few dozen sent
        with server.client(alice) as a, server.client(bob) as b:
            second = wait_until(lambda: (r := a.post("/submissions", files={"file": ("k.py", b"y = 2\n")}))
                                .status_code == 429 and r, 30, "alice's second upload to be refused")
            assert second.json()["error"] == "upload_in_progress" and second.headers["Retry-After"] == "1"
            assert second.json()["message"].startswith("another upload of yours is still being taken in")
            assert b.post("/submissions", files={"file": ("k.py", b"z = 3\n")}).status_code == 202
            stalled.close()  # her first upload ends (cut off: a refusal, nothing stored)
            again = wait_until(lambda: (r := a.post("/submissions", files={"file": ("k.py", b"y = 2\n")}))
                               .status_code == 202 and r, 30, "alice's upload once the first has ended")
            assert again.status_code == 202
    finally:
        stalled.close()
    rows = deployment.service.all_submissions()  # alice's second (after the first) and bob's: one each
    assert len(rows) == 2 and len({row["user_id"] for row in rows}) == 2


@shared
def test_unknown_paths_methods_and_parameters_answer_json(small_server):
    _deployment, server, token = small_server
    with server.client(token) as client:
        missing = client.get("/nothing")
        assert missing.status_code == 404 and missing.json()["error"] == "not_found"
        wrong = client.delete("/leaderboard")
        assert wrong.status_code == 405 and wrong.headers["Allow"] == "GET" and wrong.json() == {
            "error": "method_not_allowed", "message": "DELETE is not allowed here; allowed: GET"}
        assert client.put("/submissions").headers["Allow"] == "GET, POST"  # both routes of the path
        invalid = client.get("/submissions/abc")
        assert invalid.status_code == 422 and invalid.json()["error"] == "invalid_request"
        assert "path.submission_id" in invalid.json()["message"]
        huge = client.get(f"/submissions/{2**40}")
        assert huge.status_code == 422 and huge.json()["error"] == "invalid_request"
        assert client.get("/openapi.json").json()["info"]["title"] == "kdt-grade"


def test_database_down_is_503_not_the_contestants_fault(make_deployment, start_server, redis_url):
    deployment = make_deployment(database_url=f"postgresql://postgres@127.0.0.1:{free_port()}/nothing",
                                 broker_url=redis_url)
    server = start_server(deployment)  # broker mode: the schema is not touched at start
    with server.client("kdt_" + "B" * 43) as client:
        for response in (client.get("/leaderboard"), client.get("/submissions"),
                         client.post("/submissions", files={"file": ("k.py", b"x = 1\n")})):
            assert response.status_code == 503, response.text
            assert response.json()["error"] == "unavailable" and response.headers["Retry-After"] == "30"
            assert "Traceback" not in response.text


def test_a_crash_is_500_with_a_fixed_message(tmp_path):
    app = create_app(load_settings(data_dir=tmp_path / "var", workers=1))

    @app.get("/api/v1/crash")
    def crash():
        raise RuntimeError("secret detail /etc/kdt")

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/api/v1/crash")
    assert response.status_code == 500
    assert response.json()["error"] == "internal" and "secret detail" not in response.text
    assert response.json()["message"].startswith("internal error of the server (not your fault)")
