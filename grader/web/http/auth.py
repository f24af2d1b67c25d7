"""Authentication as FastAPI dependencies: ``Authorization: Bearer TOKEN`` -> ``grader.service.accounts.Account``.

- ``current_account``: a valid token of an enabled user, else 401 (none or unknown) / 403 (disabled);
- ``optional_account``: None without a token (public endpoints that say more to a logged-in caller);
  a token that is sent must still be valid;
- ``admin_account``: ``current_account`` of an admin, else 403 ``admin_only``.

The token is checked by ``grader.service.accounts.authenticate`` (hash lookup, constant-time comparison) and never
logged or echoed.
"""
from __future__ import annotations

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from grader.refusals import Forbidden
from grader.service import accounts
from grader.service.accounts import Account

bearer = HTTPBearer(auto_error=False, scheme_name="token",
                    description="The token from `kdt-grade admin users add` (`kdt-grade login` saves it).")


def token_of(credentials: HTTPAuthorizationCredentials | None) -> str | None:
    """The bearer token of the request's ``Authorization`` header (``bearer``), or None."""
    return credentials.credentials if credentials is not None else None


def current_account(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Account:
    """The caller's account (401/403 otherwise)."""
    return accounts.authenticate(request.app.state.service, token_of(credentials))


# A route using ``optional_account`` documents its security as optional (no token, or the bearer token).
OPTIONAL_SECURITY = {"security": [{}, {"token": []}]}


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization`` header's value ``Bearer TOKEN``; None for none or another
    scheme (``accounts.authenticate`` then answers 401 with the usual explanation)."""
    scheme, _, token = (header or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def optional_account(request: Request) -> Account | None:
    """The caller's account, or None when no ``Authorization`` header is sent (the route passes
    ``openapi_extra=OPTIONAL_SECURITY``)."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    return accounts.authenticate(request.app.state.service, bearer_token(header))


def require_admin(account: Account) -> Account:
    """``account`` if it is an organiser's; ``Forbidden`` (403 ``admin_only``) otherwise."""
    if not account.is_admin:
        raise Forbidden("this needs an organiser's (admin) token", code="admin_only")
    return account


def admin_account(account: Account = Depends(current_account)) -> Account:
    """The caller's account if it is an organiser's (403 ``admin_only`` otherwise)."""
    return require_admin(account)
