"""Helpers of the contest server tests: a real ``kdt-grade serve`` process on a free loopback port."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import httpx

from grader.service import accounts
from tests.grader.service.service_testlib import KDT_GRADE, ROOT, Deployment, wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NOTHING = FIXTURES / "nothing.py"          # solves no task: every point is graded at once, total 0
VADD_ONLY = ROOT / "tests" / "judger" / "fixtures" / "vadd_only.py"   # task 1 only (partly)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ``kdt-grade serve`` subprocess of one deployment (its own process group, log in a file)."""

    def __init__(self, deployment: Deployment, extra_env: dict | None = None):
        self.deployment = deployment
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = deployment.log_dir / f"server-{self.port}.log"
        env = {**deployment.env, **(extra_env or {})}
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(KDT_GRADE + ["serve", "--port", str(self.port)], env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
        wait_until(self._up, 120, f"the server on port {self.port} (log {self.log_path})")

    def _up(self) -> bool:
        """Every HTTP process has started its app (the server logs "serving on" then; connections
        reaching a process still starting would wait for it), and the port answers."""
        if self.proc.poll() is not None:
            raise AssertionError(f"the server exited {self.proc.returncode}:\n{self.log()}")
        if "serving on http://" not in self.log():
            return False
        try:
            httpx.get(self.url + "/api/v1/contest", timeout=2)  # any answer: the app has started
            return True
        except httpx.HTTPError:
            return False

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url + "/api/v1", headers=headers, timeout=30)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the grading pool's processes too
        except ProcessLookupError:
            pass
        self.proc.wait(30)


def add_user(deployment: Deployment, name: str, admin: bool = False) -> str:
    """Create an account in the deployment's database; return its token."""
    return accounts.add_user(deployment.service, name, is_admin=admin)[1]


def submit(client: httpx.Client, path: Path, name: str | None = None) -> httpx.Response:
    return client.post("/submissions", files={"file": (name or path.name, path.read_bytes(), "text/x-python")})


def wait_graded(client: httpx.Client, submission_id: int, timeout: float = 600) -> dict:
    """Poll the status document until ``done`` or ``failed``."""
    def done():
        state = client.get(f"/submissions/{submission_id}").json()
        return state if state["status"] in ("done", "failed") else None
    return wait_until(done, timeout, f"submission {submission_id} to be graded", interval=0.5)
