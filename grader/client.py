"""The contestant's HTTP client of the contest server (httpx), and where its server and token are kept.

Configuration: ``kdt-grade login`` saves ``{"server", "token"}`` in ``client.json`` in the user's config
directory (platformdirs: ``~/.config/kdt-grade/`` on Linux), file mode 0600 in a 0700 directory;
``KDT_GRADE_SERVER`` and ``KDT_GRADE_TOKEN`` override the file. With no server configured the CLI works
locally, as before. This module imports neither torch nor the simulator (``kdt-grade submit`` starts fast).

Every failure is a ``ClientError`` carrying the server's message (``{"error", "message"}``), the HTTP
status and ``Retry-After``; a server that cannot be reached is ``ClientError`` with status 0.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import platformdirs

from .polling import poll_until_final

ENV_SERVER, ENV_TOKEN = "KDT_GRADE_SERVER", "KDT_GRADE_TOKEN"
API = "/api/v1"


def config_path() -> Path:
    """The client's configuration file (``client.json`` in the user's config directory)."""
    return platformdirs.user_config_path("kdt-grade") / "client.json"


@dataclass(frozen=True)
class ClientConfig:
    """Where the server is (``server``: ``http(s)://host:port``) and the caller's token (or None)."""

    server: str
    token: str | None


def normalise_server(url: str) -> str:
    """``url`` without a trailing slash; ``ValueError`` unless it starts with http:// or https://."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"the server must be an http:// or https:// URL, got {url!r}")
    return url


def load_config() -> ClientConfig | None:
    """The configured server and token (environment over the saved file), or None: no server, work locally.
    Raises ``ValueError`` for an unreadable file or a malformed server URL."""
    saved: dict = {}
    path = config_path()
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read {path}: {exc}; run `kdt-grade login` again") from None
    server = os.environ.get(ENV_SERVER) or saved.get("server")
    if not server:
        return None
    return ClientConfig(normalise_server(server), os.environ.get(ENV_TOKEN) or saved.get("token"))


def save_config(config: ClientConfig) -> Path:
    """Write ``config`` to ``config_path()`` readable by its owner only (0600, directory 0700); return the path."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # also if the file existed with a wider mode
        os.write(fd, json.dumps({"server": config.server, "token": config.token}, indent=2).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return path


class ClientError(Exception):
    """A request that failed: ``status`` (0: no answer), ``code`` and ``message`` from the server's JSON
    error, ``retry_after`` seconds (429) or None."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after

    @property
    def refused(self) -> bool:
        """True for a refusal of the request itself (4xx), as opposed to a server or network fault."""
        return 400 <= self.status < 500


class Client:
    """The API of one server with one token. Methods return the server's JSON documents (plain data)."""

    def __init__(self, config: ClientConfig, timeout: float = 30.0):
        self.config = config
        headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
        self._http = httpx.Client(base_url=config.server + API, headers=headers, timeout=timeout,
                                  follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _request(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ClientError(0, "unreachable", f"cannot reach the server {self.config.server}: "
                                                f"{exc.__class__.__name__}: {exc}") from None
        if response.is_success:
            return response
        try:
            body = response.json()
            code, message = str(body["error"]), str(body["message"])
        except (ValueError, KeyError, TypeError):
            code, message = "http_error", f"the server answered {response.status_code} {response.reason_phrase}"
        retry = response.headers.get("Retry-After")
        raise ClientError(response.status_code, code, message, int(retry) if retry and retry.isdigit() else None)

    def contest(self) -> dict:
        """``GET /contest``: rules, limits, the caller's allowance (with a token), the grader's version."""
        return self._request("GET", "/contest").json()

    def submit(self, path: Path) -> dict:
        """``POST /submissions`` with the file: ``{"id", "status", "url"}``."""
        with open(path, "rb") as handle:
            return self._request("POST", "/submissions",
                                 files={"file": (path.name, handle, "text/x-python")}).json()

    def status(self, submission_id: int) -> dict:
        """``GET /submissions/{id}``: the status document."""
        return self._request("GET", f"/submissions/{int(submission_id)}").json()

    def source(self, submission_id: int) -> str:
        return self._request("GET", f"/submissions/{int(submission_id)}/source").text

    def submissions(self) -> list[dict]:
        """``GET /submissions``: the caller's own submissions, oldest first."""
        return self._request("GET", "/submissions").json()

    def leaderboard(self) -> dict:
        """``GET /leaderboard``: ``{"frozen", "freeze_at", "tasks", "rows"}``."""
        return self._request("GET", "/leaderboard").json()

    def wait(self, submission_id: int, on_progress: Callable[[dict], None] | None = None,
             timeout: float | None = None, poll: float = 0.5, max_poll: float = 3.0) -> dict:
        """Poll the status until ``done`` or ``failed`` (the interval grows from ``poll`` to ``max_poll``
        seconds); ``on_progress(status)`` after each poll. ``TimeoutError`` after ``timeout`` seconds."""
        return poll_until_final(lambda: self.status(submission_id), submission_id, on_progress, timeout,
                                poll, max_poll)
