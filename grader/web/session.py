"""The pages' session: the token in an HttpOnly, SameSite=Strict cookie, and CSRF tokens for every form.

- Logging in (``POST /login``) checks the pasted token with ``grader.accounts.authenticate`` and stores it
  in the cookie ``COOKIE`` (HttpOnly: no script can read it; SameSite=Strict: no other site's page makes
  the browser send it; Secure when the server is reached over https; ``MAX_AGE`` seconds). Each request
  authenticates it again, so a disabled account or a reset token ends the session at once. Logging out
  deletes the cookie.
- Forms carry a CSRF token (hidden field ``csrf``): for a logged-in user an HMAC of the session token
  (``csrf_for``), so it needs no server state and changes with the token; the login form, before there
  is a session, uses a random value that is also set in the cookie ``LOGIN_CSRF_COOKIE`` (double submit).
  A POST whose token does not match is refused (403) and changes nothing.

Public API: ``COOKIE``, ``page_account``, ``session_token``, ``csrf_for``, ``check_csrf``, ``login_csrf``,
``check_login_csrf``, ``set_session``, ``clear_session``.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import Request, Response

from grader import accounts
from grader.accounts import Account
from grader.refusals import Forbidden, NotAuthenticated

COOKIE = "kdt_session"
LOGIN_CSRF_COOKIE = "kdt_login_csrf"
MAX_AGE = 12 * 3600  # seconds: a contest day
_CSRF_CONTEXT = b"kdt-grade pages csrf v1"


def session_token(request: Request) -> str | None:
    """The token in the session cookie, or None."""
    return request.cookies.get(COOKIE) or None


def page_account(request: Request) -> Account | None:
    """The logged-in account of this request (the cookie's token, checked again), or None when there is
    no cookie, or its token is unknown or disabled."""
    token = session_token(request)
    if token is None:
        return None
    try:
        return accounts.authenticate(request.app.state.service, token)
    except (NotAuthenticated, Forbidden):
        return None


def csrf_for(token: str) -> str:
    """The CSRF token of a session: HMAC-SHA256 of a fixed context, keyed by the session token (hex)."""
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
    response.set_cookie(LOGIN_CSRF_COOKIE, value, max_age=3600, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/login")


def check_login_csrf(request: Request, submitted: str | None) -> None:
    """Raise ``Forbidden`` unless ``submitted`` equals the login CSRF cookie (double submit)."""
    expected = request.cookies.get(LOGIN_CSRF_COOKIE)
    if not expected or not submitted or not hmac.compare_digest(expected, submitted):
        raise Forbidden("the login form expired; reload the page and try again", code="csrf")


def set_session(request: Request, response: Response, token: str) -> None:
    """Put ``token`` in the session cookie of ``response`` (HttpOnly, SameSite=Strict, Secure on https)."""
    response.set_cookie(COOKIE, token, max_age=MAX_AGE, httponly=True, samesite="strict",
                        secure=request.url.scheme == "https", path="/")
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/login", httponly=True, samesite="strict")


def clear_session(response: Response) -> None:
    """Delete the session cookie."""
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
