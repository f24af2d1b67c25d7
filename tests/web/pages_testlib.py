"""A real contest server for the page tests: ``kdt-grade serve`` (uvicorn) on a free loopback port over a
fresh data directory (embedded mode, SQLite), with accounts made by ``kdt-grade admin users add``."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "submissions" / "examples"
FIXTURES = Path(__file__).parent / "fixtures"
_SCRIPT = Path(sys.executable).with_name("kdt-grade")
KDT_GRADE = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "grader.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll ``predicate`` until it returns something true; return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


class Server:
    """One ``kdt-grade serve`` process and its data directory."""

    def __init__(self, tmp_path: Path, **settings):
        self.data_dir = tmp_path / "var"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KDT_GRADE_")}
        self.env.update({"KDT_GRADE_DATA_DIR": str(self.data_dir), "KDT_GRADE_WORKERS": "2", "PYTHONUNBUFFERED": "1"})
        self.env.update({f"KDT_GRADE_{k.upper()}": str(v) for k, v in settings.items()})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp_path / "server.log"
        self.proc: subprocess.Popen | None = None

    def cli(self, *args) -> str:
        proc = subprocess.run(KDT_GRADE + [str(a) for a in args], env=self.env, capture_output=True, text=True,
                              timeout=300, cwd=ROOT)
        if proc.returncode != 0:
            raise AssertionError(f"kdt-grade {args} exited {proc.returncode}: {proc.stdout}\n{proc.stderr}")
        return proc.stdout

    def add_user(self, name: str, admin: bool = False, display_name: str | None = None) -> str:
        """Create an account and return its token."""
        args = ["admin", "users", "add", name, "--json"] + (["--admin"] if admin else [])
        if display_name:
            args += ["--display-name", display_name]
        return json.loads(self.cli(*args))["token"]

    def start(self) -> "Server":
        self.cli("admin", "init-db")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(KDT_GRADE + ["serve", "--port", str(self.port)], env=self.env, cwd=ROOT,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def up():
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited {self.proc.returncode}:\n{self.log.read_text()}")
            try:
                return httpx.get(f"{self.url}/api/v1/contest", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(up, 60, "the server to answer")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def client(self, token: str | None = None) -> httpx.Client:
        """An HTTP client; with ``token``, logged in to the pages (session cookie set by ``POST /login``)."""
        client = httpx.Client(base_url=self.url, timeout=30, follow_redirects=False)
        if token is not None:
            login(client, token)
        return client


def login(client: httpx.Client, token: str) -> httpx.Response:
    form = client.get("/login")
    csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    response = client.post("/login", data={"token": token, "csrf": csrf, "next": "/submissions"})
    assert response.status_code == 303, response.text
    return response


def csrf_of(html: str) -> str:
    """The CSRF token of a logged-in page (the logout form's hidden field)."""
    return html.split('name="csrf" value="', 1)[1].split('"', 1)[0]


@pytest.fixture
def server(tmp_path):
    """A started server (stopped after the test); add users with ``server.add_user``."""
    srv = Server(tmp_path)
    try:
        yield srv.start()
    finally:
        srv.stop()
