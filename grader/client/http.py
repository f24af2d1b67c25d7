"""The contestant's HTTP client of the contest server (httpx) for one server and token
(``grader.client.login.ClientConfig``). It imports neither torch nor the simulator (``kdt-grade submit``
starts fast).

Every failure is a ``ClientError`` carrying the server's message (``{"error", "message"}``), the HTTP
status and ``Retry-After``; a server that cannot be reached is ``ClientError`` with status 0.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from grader.runtime.polling import poll_until_final

from .login import ClientConfig

API = "/api/v1"


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

    def compare(self, a: int, b: int) -> dict:
        """``GET /submissions/{a}/compare/{b}``: the two submissions side by side, each change from A to B
        (``grader.service.compare.compare``)."""
        return self._request("GET", f"/submissions/{int(a)}/compare/{int(b)}").json()

    def source(self, submission_id: int) -> str:
        """``GET /submissions/{id}/source``: the submitted file's text (the caller's own submissions only)."""
        return self._request("GET", f"/submissions/{int(submission_id)}/source").text

    def submissions(self) -> list[dict]:
        """``GET /submissions``: the caller's own submissions, oldest first (the CLI shows them newest first)."""
        return self._request("GET", "/submissions").json()

    def leaderboard(self) -> dict:
        """``GET /leaderboard``: ``{"frozen", "freeze_at", "tasks", "rows"}``."""
        return self._request("GET", "/leaderboard").json()

    def leaderboard_progress(self) -> dict:
        """``GET /leaderboard/progress``: ``{"frozen", "freeze_at", "start", "end", "users": [{"rank",
        "user_name", "display_name", "total", "steps": [{"at", "submission_id", "total"}]}]}``."""
        return self._request("GET", "/leaderboard/progress").json()

    def rules(self) -> dict:
        """``GET /rules``: the scoring, the ranking, every test point's threshold, the times and limits
        (``grader.service.rules_text.contestant_rules``; no token needed)."""
        return self._request("GET", "/rules").json()

    # ---- contest communication ----------------------------------------------------------------------
    def ask(self, text: str, task: int | None = None) -> dict:
        """``POST /clarifications``: the stored question."""
        return self._request("POST", "/clarifications", json={"text": text, "task": task}).json()

    def clarifications(self) -> list[dict]:
        """``GET /clarifications``: the caller's questions and the published ones, newest first."""
        return self._request("GET", "/clarifications").json()

    def announcements(self) -> list[dict]:
        """``GET /announcements``: pinned first, then newest first."""
        return self._request("GET", "/announcements").json()

    def open_questions(self, every: bool = False) -> list[dict]:
        """``GET /admin/clarifications`` (an organiser's token): the open questions, oldest first, or
        with ``every`` all of them, newest first."""
        return self._request("GET", "/admin/clarifications", params={"all": "true"} if every else None).json()

    def answer(self, clarification_id: int, text: str, publish: bool = False,
               public_text: str | None = None) -> dict:
        """``POST /admin/clarifications/{id}/answer``: the question after the answer."""
        return self._request("POST", f"/admin/clarifications/{int(clarification_id)}/answer",
                             json={"text": text, "publish": publish, "public_text": public_text}).json()

    def ignore(self, clarification_id: int) -> dict:
        """``POST /admin/clarifications/{id}/ignore``."""
        return self._request("POST", f"/admin/clarifications/{int(clarification_id)}/ignore").json()

    def announce(self, text: str, pinned: bool = False) -> dict:
        """``POST /admin/announcements``: the stored announcement."""
        return self._request("POST", "/admin/announcements", json={"text": text, "pinned": pinned}).json()

    def wait(self, submission_id: int, on_progress: Callable[[dict], None] | None = None,
             timeout: float | None = None, poll: float = 0.5, max_poll: float = 3.0) -> dict:
        """Poll the status until ``done`` or ``failed`` (the interval grows from ``poll`` to ``max_poll``
        seconds); ``on_progress(status)`` after each poll. ``TimeoutError`` after ``timeout`` seconds."""
        return poll_until_final(lambda: self.status(submission_id), submission_id, on_progress, timeout,
                                poll, max_poll)
