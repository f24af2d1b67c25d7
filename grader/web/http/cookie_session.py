"""The pages' session: a server-side session id in an HttpOnly, SameSite=Strict cookie.

Logging in (``POST /login``) checks the pasted token and starts a server-side session
(``grader.service.login_sessions.log_in``); the cookie ``COOKIE`` carries only the session's random id,
never the token (HttpOnly: no script can read it; SameSite=Strict: no other site's page makes the browser
send it; Secure when the server is reached over https, also behind a trusted TLS proxy:
``Settings.trusted_proxies``; ``MAX_AGE`` seconds, the session's lifetime). Each request looks the
session up again (``page_account``), so logging out, a token reset or disabling the account ends it at
once. Logging out deletes the session's row and the cookie. The forms' CSRF tokens: ``csrf``.

Public API: ``COOKIE``, ``page_account``, ``session_token``, ``set_session``, ``clear_session``,
``end_session``.
"""
from __future__ import annotations

from fastapi import Request, Response

from grader.service import login_sessions
from grader.service.accounts import Account

COOKIE = "kdt_session"
MAX_AGE = login_sessions.SESSION_SECONDS  # seconds: a contest day
_UNSET = object()


def session_token(request: Request) -> str | None:
    """The session id in the session cookie, or None."""
    return request.cookies.get(COOKIE) or None


def page_account(request: Request) -> Account | None:
    """The logged-in account of this request (its cookie's session, looked up again:
    ``grader.service.login_sessions.account_of``), or None when there is no cookie, or its session is
    unknown, over or of a disabled account. Looked up once per request (``request.state``)."""
    cached = getattr(request.state, "page_account", _UNSET)
    if cached is not _UNSET:
        return cached
    account = login_sessions.account_of(request.app.state.service, session_token(request))
    request.state.page_account = account
    return account


def set_session(request: Request, response: Response, session_id: str) -> None:
    """Put the session id ``session_id`` (``grader.service.login_sessions.log_in``; never a token) in the
    session cookie of ``response`` (HttpOnly, SameSite=Strict, Secure on https)."""
    response.set_cookie(COOKIE, session_id, max_age=MAX_AGE, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")


def end_session(request: Request) -> None:
    """End the request's session on the server (``grader.service.login_sessions.log_out``): its cookie
    stops working."""
    login_sessions.log_out(request.app.state.service, session_token(request))
    request.state.page_account = None


def clear_session(response: Response) -> None:
    """Delete the session cookie."""
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
