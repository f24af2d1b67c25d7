"""``kdt-grade serve`` as processes: one grading process, HTTP processes on sockets of their own (issue 10),
and what happens when one of them dies or the whole server is stopped or killed (issue 11)."""
from __future__ import annotations

import errno
import logging
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader.config import load_settings
from grader.service import Service
from grader.runtime.relay import READY, Relay, RelayListener
from grader.service.scheduling import Dispatcher, grading_threads as grading
from grader.serve.supervisor import listening_sockets, port_lock
from tests.grader.service.service_testlib import KDT_GRADE, ROOT, wait_until
from weblib import NOTHING, Server, add_user, submit, wait_graded


def children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def http_processes(server: Server) -> list[int]:
    """The server's HTTP processes: forked from its fork server, named by their process title."""
    title = f"kdt-grade serve: HTTP process on port {server.port}".encode()
    found = []
    for pid in group_members(server.proc.pid):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(title):
                found.append(pid)
        except OSError:
            continue
    return sorted(found)


def test_reuseport_sockets_share_one_port_and_the_kernel_spreads_connections():
    sockets = listening_sockets("127.0.0.1", 0, 2)
    try:
        port = sockets[0].getsockname()[1]
        assert sockets[1].getsockname()[1] == port
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
        time.sleep(0.2)
        counts = []
        for sock in sockets:
            sock.setblocking(False)
            n = 0
            while True:
                try:
                    conn, _ = sock.accept()
                except BlockingIOError:
                    break
                conn.close()
                n += 1
            counts.append(n)
        for c in clients:
            c.close()
        assert sum(counts) == 40
        assert min(counts) > 0, counts  # both queues got connections (all in one: chance 2**-39)
    finally:
        for sock in sockets:
            sock.close()


def test_only_one_server_holds_a_port_even_when_two_start_at_once():
    """Two servers starting at the same moment both pass the plain bind (SO_REUSEADDR sockets share an
    address until one listens): the port lock lets one through."""
    sockets = listening_sockets("127.0.0.1", 0, 1)
    port = sockets[0].getsockname()[1]
    lock = port_lock(port)
    try:
        with pytest.raises(OSError) as caught:
            port_lock(port)
        assert caught.value.errno == errno.EADDRINUSE
    finally:
        os.close(lock)
        sockets[0].close()
    os.close(port_lock(port))  # free again


def test_relay_listener_dispatches_ids_and_readiness_and_drops_anything_else(tmp_path, caplog):
    taken, ready = [], []
    dispatcher = SimpleNamespace(embedded=True, dispatch=taken.append)
    listener = RelayListener(dispatcher, str(tmp_path / "relay.sock"), ready.append).start()
    try:
        assert (os.stat(listener.path).st_mode & 0o777) == 0o600
        relay = Relay(listener.path)
        relay.send(7)
        relay.ready()
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for junk in (b"", b"-3", b"0", b"99999999999", b"7; DROP TABLE", b"\xff\xfe", READY + b"x"):
            raw.sendto(junk, listener.path)
        relay.send(2**31 - 1)
        wait_until(lambda: len(taken) == 2, 10, "the relayed ids")
        assert taken == [7, 2**31 - 1]
        assert ready == [os.getpid()]
        assert sum("dropped a message" in r.getMessage() for r in caplog.records) == 7
    finally:
        listener.close()
    assert not Path(listener.path).exists()
    Relay(listener.path).send(8)  # the grading process is gone: logged, not raised
    assert "did not take it" in caplog.text


def test_a_grading_that_fails_is_tried_again_after_a_pause(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(grading, "RETRY_SECONDS", (0.2, 0.4))
    settings = load_settings(data_dir=tmp_path / "var", workers=1)
    calls = []

    class FlakyService(Service):
        def grade_embedded(self, submission_id, **kwargs):
            calls.append((submission_id, time.monotonic()))
            if len(calls) < 3:
                raise OSError("database unreachable")
            return None

    service = FlakyService(settings)
    service.init_db()
    dispatcher = Dispatcher(service)
    dispatcher.start()
    try:
        with caplog.at_level(logging.ERROR, logger="kdt_grade.web.grading"):
            dispatcher.dispatch(5)
            wait_until(lambda: len(calls) == 3, 20, "three attempts")
        assert [c[0] for c in calls] == [5, 5, 5]
        assert calls[1][1] - calls[0][1] >= 0.2 and calls[2][1] - calls[1][1] >= 0.4
        assert "grading submission 5 failed (1 time(s)); trying again in 0.2 s" in caplog.text
        time.sleep(1.0)
        assert len(calls) == 3  # it succeeded: not tried again
    finally:
        dispatcher.close()
        service.close()


def test_the_server_runs_two_http_processes_and_replaces_one_that_dies(make_deployment, start_server):
    deployment = make_deployment()
    server = start_server(deployment)  # returns once the log says "serving on ..."
    assert "with 2 HTTP process(es)" in server.log()
    first = http_processes(server)
    assert len(first) == 2
    token = add_user(deployment, "alice")
    os.kill(first[0], signal.SIGKILL)
    wait_until(lambda: "started (a replacement)" in server.log(), 120, "a new HTTP process")
    now = http_processes(server)
    assert len(now) == 2 and first[0] not in now and first[1] in now
    with server.client(token) as client:
        for _ in range(6):  # new connections reach both sockets
            with server.client(token) as fresh:
                assert fresh.get("/submissions").status_code == 200
        response = submit(client, NOTHING)
        assert response.status_code == 202
        assert wait_graded(client, response.json()["id"], timeout=300)["total"] == 0
    assert "ended (exit status -9); starting another" in server.log()


def server_after_one_submission(make_deployment, start_server) -> Server:
    """A started server (all its HTTP processes ready) that has accepted one submission."""
    deployment = make_deployment()
    server = start_server(deployment)
    token = add_user(deployment, "bob")
    with server.client(token) as client:
        assert submit(client, NOTHING).status_code == 202  # the pool has processes now
    return server


def test_sigterm_stops_every_process_of_the_server(make_deployment, start_server):
    server = server_after_one_submission(make_deployment, start_server)
    os.kill(server.proc.pid, signal.SIGTERM)
    server.proc.wait(60)
    assert server.proc.returncode == 0, server.log()
    wait_until(lambda: not group_members(server.proc.pid), 30, "no process of the server left")
    assert "Traceback" not in server.log()


def test_a_killed_grading_process_takes_its_http_and_pool_processes_with_it(make_deployment, start_server):
    server = server_after_one_submission(make_deployment, start_server)
    wait_until(lambda: len(group_members(server.proc.pid)) >= 5, 60, "the pool's processes")
    os.kill(server.proc.pid, signal.SIGKILL)  # only the main process: the others must notice by themselves
    server.proc.wait(10)
    wait_until(lambda: not group_members(server.proc.pid), 30,
               "no process of the server left after its grading process was killed")


def test_a_second_server_on_a_taken_port_refuses_to_start(make_deployment, start_server):
    """SO_REUSEPORT would let a second server of the same user share the port silently (part of the
    contestants then land on the other contest): it must fail as for any taken port."""
    first = start_server(make_deployment())
    other = make_deployment()
    done = subprocess.run(KDT_GRADE + ["serve", "--port", str(first.port)], env=other.env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == f"Error: cannot listen on 127.0.0.1:{first.port}: Address already in use"
    assert "Traceback" not in done.stdout + done.stderr
    with first.client() as client:
        assert client.get("/contest").status_code == 200


def test_an_upload_cut_off_by_its_client_leaves_no_traceback(make_deployment, start_server):
    deployment = make_deployment()
    server = start_server(deployment)
    token = add_user(deployment, "dave")
    body = b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.py\"\r\n\r\nx = 1\n"
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port)) as raw:
            raw.sendall(b"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\n"
                        b"Authorization: Bearer " + token.encode() + b"\r\n"
                        b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 500\r\n\r\n" + body)
            time.sleep(0.3)
    with server.client(token) as client:
        assert client.get("/submissions").json() == []  # nothing stored
    time.sleep(1.0)
    log = server.log()
    assert "Traceback" not in log and "ERROR" not in log, log
