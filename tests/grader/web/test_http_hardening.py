"""The contest server's HTTP hardening (issue 20, part 5) against a real ``kdt-grade serve`` on a loopback
port: bodies are capped before authentication (an HTTP process's memory stays bounded), form limits, a
body-read timeout, server-side sessions (logout, token reset and disabling revoke them; the token never
goes into a cookie), the Secure flag behind a trusted TLS proxy only, organisers off the public board,
and no free text from the query string on the admin page.

Measured numbers (RSS of the HTTP process, time to 408) are printed: run with ``-s`` to see them.
"""
from __future__ import annotations

import re
import select
import socket
import time
from pathlib import Path

import httpx
import pytest

from pages_testlib import csrf_of, login, module_server, submit_page, wait_done
from tests.grader.service.service_testlib import wait_until
from weblib import NOTHING, add_user, submit, wait_graded

MB = 1024 * 1024
RSS_GROWTH_LIMIT = 50 * MB


def http_pids(port: int) -> list[int]:
    """The pids of the HTTP processes serving ``port`` (their process title names it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if f"HTTP process on port {port}".encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def rss(pid: int) -> int:
    """The resident set size of process ``pid``, in bytes (``VmRSS`` of /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def send_until_answered(port: int, head: bytes, chunks, timeout: float = 60) -> tuple[bytes, int]:
    """Send ``head`` then the body ``chunks`` (an iterable of bytes) on a fresh connection, stopping as soon
    as the server answers or closes; return ``(everything the server sent until it closed, body bytes
    sent)``."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head)
        try:
            for chunk in chunks:
                if select.select([sock], [], [], 0)[0]:
                    break
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        return read_to_close(sock), sent


def read_to_close(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while data := sock.recv(65536):
            answer += data
    except (ConnectionResetError, TimeoutError):
        pass
    return answer


def framed(data: bytes) -> bytes:
    """One chunk of a chunked transfer coding."""
    return b"%x\r\n" % len(data) + data + b"\r\n"


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """One server with one HTTP process (its pid known) for the tests marked ``shared`` below: each
    test's users have names of their own."""
    with module_server(tmp_path_factory, "one-process", http_workers=1) as pages:
        (pid,) = http_pids(pages.server.port)
        yield pages, pid


shared = pytest.mark.xdist_group("http-hardening-one-process")  # one worker, so one start of one_process


@shared
def test_an_oversized_json_body_to_an_admin_route_is_413_before_authentication_and_memory_stays_bounded(one_process):
    pages, pid = one_process
    port = pages.server.port
    before = rss(pid)
    head = ("POST /api/v1/admin/rejudge HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 700000000\r\n\r\n").encode()  # no token at all: 700 MB declared
    chunk = b"[" + b"1," * (MB // 2 - 1) + b"1"
    answer, sent = send_until_answered(port, head, (chunk for _ in range(700)))
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
    assert b'"error":"too_large"' in answer and b"limit of 2,097,152 bytes" in answer
    assert b"connection: close" in answer.lower()
    declared = rss(pid)

    # chunked, no declared length, without a token: 401 before any of it is read or parsed (FastAPI would
    # parse a JSON body before the route's token check: a review saw 40 MiB per 2 MiB body)
    chunked_head = ("POST /api/v1/admin/rejudge HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n").encode()
    anonymous, _ = send_until_answered(port, chunked_head, (framed(chunk) for _ in range(700)))
    assert anonymous.startswith(b"HTTP/1.1 401 ") and b'"error":"unauthorized"' in anonymous, anonymous[:300]
    contestant = pages.add_user("limits-alice")
    as_contestant = chunked_head.replace(b"Host:", f"Authorization: Bearer {contestant}\r\nHost:".encode())
    refused, _ = send_until_answered(port, as_contestant, (framed(chunk) for _ in range(700)))
    assert refused.startswith(b"HTTP/1.1 403 ") and b'"error":"admin_only"' in refused, refused[:300]
    # an organiser's chunked body: counted as it arrives, refused at the limit
    organiser = pages.add_user("limits-root", admin=True)
    as_organiser = chunked_head.replace(b"Host:", f"Authorization: Bearer {organiser}\r\nHost:".encode())
    answer2, sent2 = send_until_answered(port, as_organiser, (framed(chunk) for _ in range(700)))
    assert answer2.startswith(b"HTTP/1.1 413 ") and b'"error":"too_large"' in answer2, answer2[:300]
    after = rss(pid)
    print(f"\nHTTP process RSS: {before / MB:.1f} MiB before, {declared / MB:.1f} MiB after a 700 MB declared body "
          f"({sent / MB:.1f} MiB sent before the 413), {after / MB:.1f} MiB after a chunked one "
          f"({sent2 / MB:.1f} MiB sent before the 413)")
    assert after - before < RSS_GROWTH_LIMIT
    assert sent2 < 700 * MB // 2  # refused long before its end
    # the server still answers, and a body within the limit still reaches the route (and its token check)
    assert httpx.post(f"{pages.url}/api/v1/admin/rejudge", json={"ids": [1]}).status_code == 401


@shared
def test_a_contestants_json_body_has_the_smaller_limit_before_it_is_parsed(one_process):
    """Attacker review (session 28): a contestant's 2 MiB object of 200,000 unknown keys cost 0.68 s of CPU on
    the event loop (pydantic's errors for each key). A contestant's token may send at most 64 KiB to the API
    (a question is at most 2000 characters), refused before a byte is read; an organiser keeps 2 MiB."""
    pages, _pid = one_process
    port = pages.server.port
    contestant = pages.add_user("small-body-alice")
    keys = b"{" + b",".join(b'"k%d":0' % i for i in range(150_000)) + b"}"
    assert MB < len(keys) < 2 * MB  # within the general limit
    head = ("POST /api/v1/clarifications HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {contestant}\r\n").encode()
    declared, _ = send_until_answered(port, head + b"Content-Length: %d\r\n\r\n" % len(keys), [keys])
    assert declared.startswith(b"HTTP/1.1 413 ") and b"limit of 65,536 bytes" in declared, declared[:300]
    chunked, _ = send_until_answered(port, head + b"Transfer-Encoding: chunked\r\n\r\n",
                                        (framed(keys[i:i + 16384]) for i in range(0, len(keys), 16384)))
    assert chunked.startswith(b"HTTP/1.1 413 ") and b"limit of 65,536 bytes" in chunked, chunked[:300]
    # a question of the largest allowed size still goes through, and a body just over the cap does not
    headers = {"Authorization": f"Bearer {contestant}"}
    asked = httpx.post(f"{pages.url}/api/v1/clarifications", json={"text": "\u00e9" * 2000}, headers=headers)
    assert asked.status_code == 201, asked.text
    over = httpx.post(f"{pages.url}/api/v1/clarifications", headers=headers,
                      json={"text": "x" * 2000, "pad": "y" * 65536})
    assert over.status_code == 413 and over.json()["error"] == "too_large"
    # an organiser's body of the same size is read and answered by the route (422: unknown fields)
    organiser = pages.add_user("small-body-root", admin=True)
    big = httpx.patch(f"{pages.url}/api/v1/admin/contest", content=b'{"name": "x", "pad": "' + b"y" * 100_000 + b'"}',
                      headers={"Authorization": f"Bearer {organiser}", "Content-Type": "application/json"})
    assert big.status_code == 422, big.text


@shared
def test_a_request_with_both_content_length_and_chunked_is_refused(one_process):
    """Attacker review (session 28): h11 took the chunked framing of a request that also declared a length;
    a proxy in front reading the length would see other request boundaries (smuggling). Refused, closed."""
    pages, _pid = one_process
    head = ("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    smuggled = b"0\r\n\r\nGET /api/v1/leaderboard HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answer, _ = send_until_answered(pages.server.port, head, [smuggled])
    assert answer.startswith(b"HTTP/1.1 400 ") and b"bad_framing" in answer, answer[:300]
    assert answer.count(b"HTTP/1.1 ") == 1  # the request behind it is not answered
    assert b"connection: close" in answer.lower()


@shared
def test_a_refused_body_still_arriving_gets_the_whole_answer_then_an_end_not_a_reset(one_process):
    """The server answers a body it will not read (declared too large; chunked, past the limit) while the
    client is still sending it. Closing then, with bytes unread, made the kernel send a TCP reset, and the
    client lost what it had not read yet (CI: a 413's headers arrived, its body did not). Now the server
    ends its side and drops what arrives until the client closes (grader.web.http.connections): a client
    that reads only after a pause, still sending meanwhile, gets the whole answer and then an orderly end."""
    import threading
    port = one_process[0].server.port
    organiser = one_process[0].add_user("linger-root", admin=True)  # so that the chunked body is read up to its limit
    chunk = b"[" + b"1," * (MB // 2 - 1) + b"1"
    heads = {
        "declared": "Content-Length: 700000000\r\n",
        "chunked": "Transfer-Encoding: chunked\r\n",
    }
    for kind, framing in heads.items():
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(("POST /api/v1/admin/rejudge HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          f"Authorization: Bearer {organiser}\r\n"
                          f"Content-Type: application/json\r\n{framing}\r\n").encode())
            body = chunk if kind == "declared" else framed(chunk)

            def keep_sending():
                try:
                    for _ in range(6):  # 6 MiB: past the 2 MiB limit, and more than the socket buffers hold
                        sock.sendall(body)
                except OSError:
                    pass  # the server stopped reading: expected once its linger ends
            sender = threading.Thread(target=keep_sending, daemon=True)
            sender.start()
            time.sleep(1.0)  # the answer comes (and, before the fix, the close) while bytes are still arriving
            try:
                answer = b""
                while data := sock.recv(65536):
                    answer += data
                ended = "end of stream"
            except ConnectionResetError:
                ended = "reset"
            sender.join(10)
        assert answer.startswith(b"HTTP/1.1 413 ") and b'"error":"too_large"' in answer, (kind, answer[:300])
        assert ended == "end of stream", kind


@shared
def test_an_answer_before_the_body_waits_for_the_body_so_the_client_gets_it_not_a_reset(one_process):
    """A route that answers without reading the body (405 to TRACE, 401 to an anonymous upload) used to
    close the connection at once; the body's bytes then met a closed socket, the kernel sent a reset and
    the client saw "connection reset" instead of the answer (CI: schemathesis's TRACE to
    /api/v1/clarifications). Now the answer waits until the body is in: nothing comes back while the body
    is still missing, and then the whole answer does, with ``Connection: close``."""
    pages, _ = one_process
    body = b'{"task": null, "text": ""}'
    for method, path, status in (("TRACE", "/api/v1/clarifications", b"405"),
                                 ("POST", "/api/v1/submissions", b"401")):
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        with socket.create_connection(("127.0.0.1", pages.server.port), timeout=30) as sock:
            sock.sendall(head)
            assert select.select([sock], [], [], 1.0)[0] == [], f"{method} {path} answered before its body arrived"
            sock.sendall(body)
            answer = read_to_close(sock)
        assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:300]
        head_part, _, content = answer.partition(b"\r\n\r\n")
        assert b"connection: close" in head_part.lower() and b'"error"' in content, answer[:300]


@shared
def test_oversized_and_overfull_login_forms_are_refused(one_process):
    pages, pid = one_process
    port = pages.server.port
    before = rss(pid)
    head = ("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Accept: text/html\r\nContent-Length: 600000000\r\n\r\n").encode()
    field = b"f=" + b"x" * (MB - 3) + b"&"
    answer, _ = send_until_answered(port, head, (field for _ in range(600)))
    assert answer.startswith(b"HTTP/1.1 413 ") and b"text/html" in answer and b"Too large" in answer, answer[:300]
    multipart = ("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=B\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n").encode()
    part = b"--B\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n" + b"x" * MB + b"\r\n"
    answer, sent = send_until_answered(port, multipart, (framed(part) for _ in range(600)))
    # chunked: a page form must declare its length, 411 before a byte of it is read
    assert answer.startswith(b"HTTP/1.1 411 ") and b'"error":"length_required"' in answer, answer[:300]
    assert sent < 600 * MB // 2
    # attacker review: 2 MiB of "&" (empty fields, which Starlette does not count) took 0.5-1 s of the event
    # loop before the CSRF check; a page form's body is at most 64 KiB, refused before it is read
    amps = send_until_answered(port, head.replace(b"600000000", b"2097152"), [b"&" * 2097152])[0]
    assert amps.startswith(b"HTTP/1.1 413 ") and b"limit of 65,536 bytes" in amps, amps[:300]
    tiny = ("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    trickle, _ = send_until_answered(port, tiny, (b"1\r\n&\r\n" for _ in range(200_000)))
    assert trickle.startswith(b"HTTP/1.1 411 "), trickle[:300]
    after = rss(pid)
    print(f"\nHTTP process RSS around 600 MB login forms: {before / MB:.1f} -> {after / MB:.1f} MiB")
    assert after - before < RSS_GROWTH_LIMIT

    # within the size limit, the form limits hold: 40 fields, a 20 KB field, a file
    many = httpx.post(f"{pages.url}/login", data={f"f{i}": "x" for i in range(40)})
    assert many.status_code == 400 and "Too many fields" in many.json()["message"]
    big = httpx.post(f"{pages.url}/login", data={"token": "x" * 20_000}, headers={"Accept": "text/html"})
    assert big.status_code == 400 and "Field exceeded maximum size" in big.text and "<h1>" in big.text
    files = httpx.post(f"{pages.url}/login", files={"token": ("t.txt", b"x")})
    assert files.status_code == 400 and "Too many files" in files.json()["message"]
    for path in ("/logout", "/admin/rejudge", "/admin/freeze", "/admin/unfreeze"):  # every form route
        refused = httpx.post(f"{pages.url}{path}", data={f"f{i}": "x" for i in range(40)})
        assert refused.status_code == 400 and "Too many fields" in refused.json()["message"], path


def test_a_trickled_body_gets_408_and_the_connection_is_closed(make_deployment, start_server):
    deployment = make_deployment(http_body_timeout_seconds=2, http_body_min_bytes_per_second=1024)
    alice, root = add_user(deployment, "alice"), add_user(deployment, "root", admin=True)
    server = start_server(deployment)
    part = b'--B\r\nContent-Disposition: form-data; name="file"; filename="k.py"\r\n\r\n'
    for path, extra, first in (("/api/v1/admin/rejudge", f"Authorization: Bearer {root}\r\n"
                                                          "Content-Type: application/json\r\n", b""),
                               ("/login", "Content-Type: application/x-www-form-urlencoded\r\n", b""),
                               ("/api/v1/submissions", f"Authorization: Bearer {alice}\r\n"
                                                       "Content-Type: multipart/form-data; boundary=B\r\n", part)):
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Content-Length: 1000\r\n\r\n".encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(head + first)
            start = time.monotonic()
            answered = None
            for _ in range(40):  # one byte every 0.5 s: 20 s if nobody stops it
                if select.select([sock], [], [], 0.5)[0]:
                    answered = time.monotonic() - start
                    break
                sock.sendall(b"#")
            answer = read_to_close(sock)  # returns only once the server has closed the connection
            closed = time.monotonic() - start
        print(f"\n{path}: 408 after {answered:.2f} s (timeout 2 s), connection closed after {closed:.2f} s")
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:300]
        assert b'"error":"body_timeout"' in answer and b"arrived too slowly" in answer
        assert answered is not None and 1.9 < answered < 4.0 and closed < 5.0
    assert deployment.service.all_submissions() == []
    # a body that arrives in time is not refused
    with server.client(alice) as client:
        assert submit(client, NOTHING).status_code == 202


def test_a_client_that_stops_reading_its_answers_is_cut_off(make_deployment, start_server):
    """A tiny receive window, 200 pipelined requests for a large document, then nothing read: the app waits
    to write and held the connection for ever (an attacker held 2000 of them: everyone else got 503).
    Now a connection whose client takes nothing of its answer for the body timeout (2 s here) is aborted:
    reading afterwards ends in a reset or an end of stream, long before the 200 answers."""
    deployment = make_deployment(http_body_timeout_seconds=2)
    server = start_server(deployment, KDT_GRADE_HTTP_WORKERS=1)
    request = b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.connect(("127.0.0.1", server.port))
        sock.settimeout(10)
        sock.sendall(request * 200)
        time.sleep(6)  # the write buffer stays full: the server's 2 s stall timer runs out
        answer, ended = b"", "open"
        try:
            while data := sock.recv(65536):
                answer += data
            ended = "end of stream"
        except ConnectionResetError:
            ended = "reset"
        except TimeoutError:
            ended = "still open after 10 s"
    answers = answer.count(b"HTTP/1.1 200 ")
    assert ended in ("reset", "end of stream") and answers < 200, (ended, answers)
    assert httpx.get(f"{server.url}/api/v1/contest", timeout=10).status_code == 200  # the server is fine


def test_connections_that_never_finish_their_headers_are_closed(make_deployment, start_server):
    """The attacker review held connections open for ever by sending part of a request's headers, until
    the HTTP processes ran out of file descriptors. Now such a connection is closed after
    KDT_GRADE_HTTP_HEADER_TIMEOUT_SECONDS (2 here), before any authentication; a full request still works."""
    deployment = make_deployment(http_header_timeout_seconds=2)
    alice = add_user(deployment, "alice")
    server = start_server(deployment, KDT_GRADE_HTTP_WORKERS=1)
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(20)]
    try:
        for sock in socks:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        start = time.monotonic()
        answers = [read_to_close(sock) for sock in socks]  # returns once the server closed the connection
        closed = time.monotonic() - start
    finally:
        for sock in socks:
            sock.close()
    print(f"\n20 connections with unfinished headers closed after {closed:.2f} s (timeout 2 s)")
    assert answers == [b""] * 20 and 1.5 < closed < 10
    with server.client(alice) as client:
        assert client.get("/submissions").status_code == 200 and client.get("/submissions").json() == []


@shared
def test_the_cookie_is_a_session_id_and_logout_revokes_it(one_process):
    pages, _pid = one_process
    token = pages.add_user("cookie-alice")
    client = pages.client()

    def stored_hashes() -> set:
        with pages.deployment.service.read_session() as session:
            return set(session.execute(__import__("sqlalchemy").text("SELECT id_hash FROM web_sessions")).scalars())
    before = stored_hashes()  # the shared server's other tests' sessions
    response = login(client, token)
    cookie = client.cookies["kdt_session"]
    assert token not in response.headers["set-cookie"] and cookie != token and token not in cookie
    new = stored_hashes() - before  # only its hash is stored
    assert len(new) == 1 and cookie not in next(iter(new))

    stolen = httpx.Client(base_url=pages.url, cookies={"kdt_session": cookie}, follow_redirects=False)
    page = stolen.get("/submissions")
    assert page.status_code == 200 and 'data-user="cookie-alice"' in page.text  # a copied cookie works ...
    assert client.post("/logout", data={"csrf": csrf_of(client.get("/submissions").text)}).status_code == 303
    # ... until its session logs out: the old value is worthless, whoever holds it
    assert stolen.get("/submissions").status_code == 303
    assert stolen.get("/submissions").headers["location"] == "/login?next=/submissions"
    assert 'data-user="cookie-alice"' not in stolen.get("/").text
    assert stolen.post("/logout", data={"csrf": "x"}).status_code == 303  # nothing left to log out
    # the bearer token itself still works for the API
    assert httpx.get(f"{pages.url}/api/v1/submissions", headers={"Authorization": f"Bearer {token}"}).status_code == 200


@shared
def test_a_token_reset_and_disabling_end_every_session_of_the_account(one_process):
    pages, _pid = one_process
    alice, bob = pages.add_user("reset-alice"), pages.add_user("reset-bob")
    laptop, phone, other = pages.client(alice), pages.client(alice), pages.client(bob)
    for client in (laptop, phone, other):
        assert client.get("/submissions").status_code == 200
    new = pages.cli("admin", "users", "reset-token", "reset-alice", "--json")
    assert '"token"' in new
    assert laptop.get("/submissions").status_code == 303 and phone.get("/submissions").status_code == 303
    assert other.get("/submissions").status_code == 200  # bob's session is not touched

    pages.cli("admin", "users", "disable", "reset-bob")
    assert other.get("/submissions").status_code == 303
    pages.cli("admin", "users", "enable", "reset-bob")
    assert other.get("/submissions").status_code == 303  # re-enabling does not bring old sessions back
    assert pages.client(bob).get("/submissions").status_code == 200


def _login_cookies(url: str, token: str, **kwargs) -> str:
    """Log in with plain requests (cookies passed by hand: a Secure cookie would not be sent back over
    http by a cookie jar); return the ``Set-Cookie`` header of the session cookie."""
    form = httpx.get(f"{url}/login", **kwargs)
    login_csrf = re.search(r"kdt_login_csrf=([^;]+)", form.headers["set-cookie"]).group(1)
    response = httpx.post(f"{url}/login", data={"token": token, "csrf": csrf_of(form.text)},
                          headers={**kwargs.pop("headers", {}), "Cookie": f"kdt_login_csrf={login_csrf}"}, **kwargs)
    assert response.status_code == 303, response.text
    return next(v for k, v in response.headers.multi_items() if k == "set-cookie" and v.startswith("kdt_session="))


def test_the_secure_flag_follows_x_forwarded_proto_only_from_a_trusted_proxy(make_deployment, start_server):
    deployment = make_deployment(trusted_proxies="127.0.0.1")
    token = add_user(deployment, "alice")
    server = start_server(deployment)
    https = {"X-Forwarded-Proto": "https"}
    trusted = _login_cookies(server.url, token, headers=https)
    assert "Secure" in trusted and "HttpOnly" in trusted
    # the same header from a peer that is not a trusted proxy (127.0.0.2: another loopback address)
    untrusted = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
    form = untrusted.get(f"{server.url}/login", headers=https)
    assert "Secure" not in form.headers["set-cookie"]
    response = untrusted.post(f"{server.url}/login", data={"token": token, "csrf": csrf_of(form.text)}, headers=https)
    assert response.status_code == 303
    cookie = next(v for k, v in response.headers.multi_items() if k == "set-cookie" and v.startswith("kdt_session="))
    assert "Secure" not in cookie and "HttpOnly" in cookie
    assert "Secure" not in _login_cookies(server.url, token)  # a trusted proxy saying nothing: plain http


def test_the_default_trusts_no_proxy(make_deployment, start_server):
    deployment = make_deployment()
    token = add_user(deployment, "alice")
    server = start_server(deployment)
    assert "Secure" not in _login_cookies(server.url, token, headers={"X-Forwarded-Proto": "https"})


@shared
def test_organisers_are_not_on_the_public_board(one_process):
    pages, _pid = one_process
    root, alice = pages.add_user("board-root", admin=True), pages.add_user("board-alice")
    with pages.server.client(root) as organiser, pages.server.client(alice) as contestant:
        own = submit(organiser, NOTHING).json()["id"]
        theirs = submit(contestant, NOTHING).json()["id"]
        wait_graded(organiser, own)
        wait_graded(contestant, theirs)
        board = httpx.get(f"{pages.url}/api/v1/leaderboard").json()
        assert [row["user_name"] for row in board["rows"]] == ["board-alice"]  # the only test here that submits
    html = httpx.get(f"{pages.url}/").text
    assert 'data-user="board-alice"' in html and 'data-user="board-root"' not in html
    update = httpx.get(f"{pages.url}/scoreboard.json?since=0").json()
    assert [row["user"] for row in update["changed"]] == ["board-alice"]
    # the organiser still sees every submission, their own included
    admin = pages.client(root).get("/admin").text
    assert f'data-id="{own}"' in admin and f'data-id="{theirs}"' in admin


@shared
def test_the_admin_page_shows_no_text_from_the_link(one_process):
    pages, _pid = one_process
    admin = pages.client(pages.add_user("link-root", admin=True))
    for notice in ("<script>alert(1)</script>", "Your token expired: paste it at evil.example", "rejudged",
                   "frozen%20since"):  # one server for the four links (a start costs seconds of CPU)
        html = admin.get("/admin", params={"notice": notice}).text
        assert 'role="status"' not in html, notice  # no notice at all: free text, or a code without its id
        assert "evil.example" not in html and "<script>alert" not in html and "&lt;script&gt;" not in html, notice
        assert admin.get("/admin", params={"notice": notice, "id": "7"}).status_code == 200, notice
    shown = admin.get("/admin?notice=rejudged&id=7").text
    assert '<p class="ok" role="status">Submission 7 is queued for rejudging.</p>' in shown
    assert 'role="status"' not in admin.get("/admin?notice=rejudged&id=evil").text
