"""CSRF tokens of the pages' forms (hidden field ``csrf``).

For a logged-in user the token is an HMAC of the session id (``csrf_for``), so it needs no server state
and changes with every session; the login form, before there is a session, uses a random value that is
also set in the cookie ``LOGIN_CSRF_COOKIE`` (double submit). A POST whose token does not match is
refused (403) and changes nothing.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import Request, Response

from grader.refusals import Forbidden

from .cookie_session import session_token

LOGIN_CSRF_COOKIE = "kdt_login_csrf"
_CSRF_CONTEXT = b"kdt-grade pages csrf v1"


def csrf_for(token: str) -> str:
    """The CSRF token of a session: HMAC-SHA256 of a fixed context, keyed by the session id (hex)."""
    return hmac.new(token.encode("utf-8"), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def check_csrf(request: Request, submitted: str | None) -> None:
    """Raise ``Forbidden`` (403 ``csrf``) unless ``submitted`` is this session's CSRF token."""
    token = session_token(request)
    if token is None or not submitted or not hmac.compare_digest(csrf_for(token), submitted):
        raise Forbidden("the form expired or did not come from this site; reload the page and try again",
                        code="csrf")


def login_csrf(request: Request) -> str:
    """The login form's CSRF value: the one in ``LOGIN_CSRF_COOKIE`` or a new random one (set it with
    ``remember_login_csrf``)."""
    return request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(24)


def remember_login_csrf(request: Request, response: Response, value: str) -> None:
    """Set the login form's CSRF value in its cookie (an hour, the login path only)."""
    response.set_cookie(LOGIN_CSRF_COOKIE, value, max_age=3600, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/login")


def check_login_csrf(request: Request, submitted: str | None) -> None:
    """Raise ``Forbidden`` unless ``submitted`` equals the login CSRF cookie (double submit)."""
    expected = request.cookies.get(LOGIN_CSRF_COOKIE)
    if not expected or not submitted or not hmac.compare_digest(expected, submitted):
        raise Forbidden("the login form expired; reload the page and try again", code="csrf")


def forget_login_csrf(response: Response) -> None:
    """Delete the login CSRF cookie (logged in: the session's token takes over)."""
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login", httponly=True, samesite="strict")
