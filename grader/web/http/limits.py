"""HTTP limits of the contest server, enforced on every request before the app sees its body:
``BodyLimits``, an ASGI middleware (installed by ``create_app``).

- **Authentication first**: a request with a body to the JSON API (``/api/v1/``, the upload aside, which
  checks its token itself before reading) is refused (401/403) before its body is read unless its token
  is an enabled account's (an organiser's for ``/api/v1/admin/``): FastAPI parses a JSON body before
  the route's dependencies run, and a 2 MiB body of small objects costs tens of MiB while parsed.
- **Size**: a body larger than ``Settings.http_max_body_bytes`` (for a contestant's token on the JSON API,
  ``http_contestant_max_body_bytes``: what pydantic does with an object of 200,000 unknown keys takes
  most of a second of the event loop) is refused with 413 ``too_large``. A
  declared ``Content-Length`` above it is answered before the app runs (so before authentication and
  before a byte of the body is read); a body without one (chunked) is counted as it arrives and refused
  as soon as it passes the limit. The two upload routes (``UPLOAD_ROUTES``) keep their own, larger limit
  and their own order (token and rules first, then the declared length: ``grader.web.http.upload``); here
  they only get a backstop counter a little above that limit.
- **Time**: a body must arrive within ``http_body_timeout_seconds`` plus one second per
  ``http_body_min_bytes_per_second`` bytes received so far, counted from the app's first read. A client
  that trickles it slower (one byte every 4 s, say) gets 408 ``body_timeout`` and the connection is
  closed: it holds a connection for a bounded time, not forever. (uvicorn's ``timeout_keep_alive`` only
  covers idle connections between requests.) Each read waits under ``anyio.fail_after``.
- **Page forms** (every route outside ``/api/v1/`` but the upload) have the smaller
  ``http_form_max_body_bytes`` and must declare their length: a chunked one is 411 before it is read
  (Starlette counts no empty fields, so 2 MiB of ``&`` was parsed whole before the CSRF check).
- **Framing**: a request with both ``Content-Length`` and ``Transfer-Encoding`` is refused (400
  ``bad_framing``) before the app runs.
- A response the app starts before the request's body has fully arrived (a 401 before an upload is read,
  a 405 to a method the route does not take) carries ``Connection: close``, so a body the app did not want
  is never read on to find the next request. When the body is small (a declared length of at most
  ``DRAIN_MAX_BYTES``) the answer first waits for the rest of it, at most ``DRAIN_SECONDS``: a client
  sends such a body right behind its headers, and a server that closes a socket with unread bytes in it
  (or with more still arriving) makes the kernel send a TCP reset, so the client would see "connection
  reset" instead of the answer. A larger or chunked body is not waited for: it is refused before it is
  read (the point of answering early), and its client is the one still sending.

The refusals have the app's error format (``grader.web.http.error_responses``): ``{"error", "message"}``
JSON, or for a browser asking for a page the HTML error page ``create_app`` passes in
(``grader.web.pages.install.refusal_page``). When the app answers a request whose body was refused while
it read it (FastAPI turns the read's exception into a 400), that answer is replaced by the refusal.

Form limits (fields, files, field size of the page forms) are FastAPI's ``form_limits`` of the app
(``form_limits(settings)``, also in ``create_app``).
"""
from __future__ import annotations

import time
from collections.abc import Callable

import anyio
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from grader.config import Settings
from grader.display import count_text

from .upload import MULTIPART_OVERHEAD

# The HTML answer to a refused body for a browser (``grader.web.pages.install.refusal_page``), or None.
RefusalPage = Callable[[Request, int, str], Response | None]

# (method, path) of the routes that read a submission upload with their own limit (grader.web.http.upload).
UPLOAD_ROUTES = frozenset({("POST", "/api/v1/submissions"), ("POST", "/submit")})
API_PREFIX = "/api/v1/"  # its routes that take a body all need a token: checked before the body is read
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})  # others have no route here: 405 unread
CLOSE = (b"connection", b"close")
DRAIN_MAX_BYTES = 64 * 1024  # a body at most this large is read (and dropped) before an early answer...
DRAIN_SECONDS = 2.0  # ...waiting for it at most this long


def form_limits(settings: Settings) -> dict:
    """FastAPI's ``form_limits`` of the app: the page forms (login, logout, the admin buttons) take at
    most ``http_form_max_fields`` fields of ``http_form_max_field_bytes`` bytes each and no file (the
    upload and the users import read their own form: ``grader.web.http.upload``). Starlette's defaults were
    1000 fields of 1 MiB."""
    return {"max_fields": settings.http_form_max_fields, "max_files": 0,
            "max_part_size": settings.http_form_max_field_bytes}


class _Refused(Exception):
    """Raised into the app by a read of a refused body (its status, code and message)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


# Both framings at once (RFC 9112 §6.1): a proxy in front that reads the other one would see another
# request boundary than ours (request smuggling); h11 takes the chunked one without a word.
AMBIGUOUS_FRAMING = _Refused(400, "bad_framing", "the request has both Content-Length and Transfer-Encoding; "
                                                 "send one of them")


# A page form without a declared length (chunked): parsing one in tiny chunks costs the event loop
# far more than its bytes (an attacker review: 200,000 one-byte chunks took 3.4 s before the CSRF check).
LENGTH_REQUIRED = _Refused(411, "length_required", "a form must be sent with a Content-Length (browsers do); "
                                                   "nothing was read")


def _too_large(limit: int) -> _Refused:
    return _Refused(413, "too_large", f"the request body is larger than this server's limit of "
                                      f"{count_text(limit)} bytes; nothing was read or stored")


class BodyLimits:
    """The ASGI middleware of the module docstring, configured by ``settings``."""

    def __init__(self, app: ASGIApp, settings: Settings, page: RefusalPage | None = None):
        self.app, self.page = app, page
        self.max_bytes = settings.http_max_body_bytes
        self.contestant_max_bytes = min(settings.http_contestant_max_body_bytes, self.max_bytes)
        self.form_max_bytes = min(settings.http_form_max_body_bytes, self.max_bytes)
        self.upload_backstop = settings.submission_max_bytes + 2 * MULTIPART_OVERHEAD
        self.timeout = settings.http_body_timeout_seconds
        self.min_rate = settings.http_body_min_bytes_per_second

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if "content-length" in headers and "transfer-encoding" in headers:
            await refuse(scope, send, AMBIGUOUS_FRAMING, self.page)
            return
        declared = headers.get("content-length")
        length = int(declared) if declared is not None and declared.isdigit() else None
        upload = (scope["method"], scope["path"]) in UPLOAD_ROUTES
        page_form = not upload and not scope["path"].startswith(API_PREFIX)
        limit = self.upload_backstop if upload else self.form_max_bytes if page_form else self.max_bytes
        if not upload and length is not None and length > limit:
            await refuse(scope, send, _too_large(limit), self.page)  # before the app, so before authentication
            return
        has_body = bool(length) or "chunked" in headers.get("transfer-encoding", "").lower()
        if page_form and has_body and length is None:  # browsers declare a form's length
            await refuse(scope, send, LENGTH_REQUIRED, self.page)
            return
        if (has_body and not upload and scope["method"] in BODY_METHODS
                and scope["path"].startswith(API_PREFIX)):
            refusal, admin = await anyio.to_thread.run_sync(_authentication_refusal, scope, headers)
            if refusal is None and not admin:
                limit = self.contestant_max_bytes
                if length is not None and length > limit:
                    refusal = _too_large(limit)
            if refusal is not None:  # before a byte of the body is read or parsed
                await refuse(scope, send, refusal, self.page)
                return
        guard = _Guard(self, scope, receive, send, limit, length, has_body=has_body)
        try:
            await self.app(scope, guard.receive, guard.send)
        except Exception:
            if guard.refusal is None or guard.app_started:
                raise
        if guard.refusal is not None and not guard.app_started and not guard.refused:
            await guard.send_refusal()


def _authentication_refusal(scope: Scope, headers: Headers) -> tuple[_Refused | None, bool]:
    """Why a request with a body to the JSON API may not have it read: no valid token (401), a disabled
    account (403), a contestant's token on an organiser's route (403); None if it may; and whether the
    token is an organiser's (whose bodies have the larger limit). Every body-taking
    API route needs a token, and the route checks it again (FastAPI parses a body before it resolves
    the route's dependencies: without this, anyone could make the server parse 2 MiB of JSON)."""
    from grader.refusals import Refusal
    from grader.service import accounts

    from .auth import bearer_token, require_admin

    try:
        account = accounts.authenticate(scope["app"].state.service, bearer_token(headers.get("authorization")))
        if scope["path"].startswith(API_PREFIX + "admin/"):
            require_admin(account)
    except Refusal as exc:
        return _Refused(exc.status, exc.code, exc.message), False
    return None, account.is_admin


class _Guard:
    """One request's counting, timed ``receive`` and its ``send`` (see ``BodyLimits``)."""

    def __init__(self, limits: BodyLimits, scope: Scope, receive: Receive, send: Send, limit: int,
                 declared: int | None, has_body: bool):
        self.limits, self.scope, self._receive, self._send, self.limit = limits, scope, receive, send, limit
        self.declared = declared
        self.body_done = not has_body
        self.seen = 0  # bytes of the body received so far
        self.started: float | None = None  # time.monotonic() of the first read
        self.refusal: _Refused | None = None
        self.app_started = self.refused = False

    async def receive(self) -> Message:
        if self.refusal is not None:
            raise self.refusal
        if self.body_done:  # the whole body is in: later reads wait for a disconnect, untimed
            return await self._receive()
        now = time.monotonic()
        if self.started is None:
            self.started = now
        allowed = self.limits.timeout + self.seen / self.limits.min_rate  # seconds since the first read
        try:
            with anyio.fail_after(max(0.0, self.started + allowed - now)):
                message = await self._receive()
        except TimeoutError:
            self.refusal = _Refused(
                408, "body_timeout",
                f"the request body arrived too slowly ({self.seen} bytes in {time.monotonic() - self.started:.0f} s; "
                f"this server waits {self.limits.timeout:g} s plus 1 s per {self.limits.min_rate} bytes); nothing "
                "was stored. Send it again over a faster connection")
            raise self.refusal from None
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > self.limit:
                self.refusal = _too_large(self.limit)
                raise self.refusal
            if not message.get("more_body", False):
                self.body_done = True
        else:  # http.disconnect
            self.body_done = True
        return message

    async def send(self, message: Message) -> None:
        if self.refused:
            return  # the app's answer to a refused body: replaced by the refusal, already sent
        if message["type"] == "http.response.start":
            if self.refusal is not None:
                await self.send_refusal()
                return
            self.app_started = True
            if not self.body_done:
                await self._drain()
                message = {**message, "headers": [*message.get("headers", []), CLOSE]}
        await self._send(message)

    async def _drain(self) -> None:
        """Read (and drop) the rest of a small body the app answered without reading (module docstring)."""
        if self.declared is None or self.declared > DRAIN_MAX_BYTES:
            return
        with anyio.move_on_after(DRAIN_SECONDS):
            try:
                while not self.body_done:
                    await self.receive()
            except _Refused:
                pass  # too slow: the app's answer goes out now, and the connection closes

    async def send_refusal(self) -> None:
        self.refused = True
        await refuse(self.scope, self._send, self.refusal, self.limits.page)


async def refuse(scope: Scope, send: Send, refusal: _Refused, page: RefusalPage | None = None) -> None:
    """Answer ``refusal`` (``page``'s HTML for a browser asking for a page, else JSON) and close the
    connection."""
    request = Request(scope)
    response = page(request, refusal.status, refusal.message) if page is not None else None
    if response is None:
        response = JSONResponse({"error": refusal.code, "message": refusal.message}, status_code=refusal.status)
    response.headers["Connection"] = "close"

    async def no_body() -> Message:
        return {"type": "http.disconnect"}

    await response(scope, no_body, send)
