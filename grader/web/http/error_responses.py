"""JSON errors everywhere: ``{"error": CODE, "message": TEXT}`` for refusals, 404/405/422 and crashes.

- ``grader.refusals.Refusal``: its status and code (``Retry-After`` for 429);
- ``grader.judging.pipeline.Rejected`` (the intake: empty, not UTF-8, not Python): 400 ``rejected``;
- ``grader.errors.ServiceUnavailable`` and a database that cannot be reached: 503 ``unavailable``
  (the judge's fault, never the contestant's), with ``Retry-After``;
- Starlette's HTTP errors (unknown path 404, wrong method 405) and request validation (422);
- anything else: 500 ``internal`` with a fixed message; the traceback goes to the server's log only.

413 ``too_large`` and 408 ``body_timeout`` for a body over the limits come from ``limits.BodyLimits``, in
the same format, before the app sees the request.

``error_responses(*statuses)`` documents these bodies in the OpenAPI document.
"""
from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from grader.errors import ServiceUnavailable
from grader.judging.pipeline import Rejected
from grader.refusals import Refusal

log = logging.getLogger("kdt_grade.web")

UNAVAILABLE_RETRY_SECONDS = 30
_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 406: "not_acceptable", 408: "body_timeout", 413: "too_large", 415: "unsupported_media_type",
               422: "invalid_request", 429: "rate_limited"}
_DESCRIPTIONS = {400: "Bad request (the intake's reason)", 401: "No token or an unknown token",
                 403: "Disabled user, admin only, or outside the contest window", 404: "Not found (or not yours)",
                 413: "The file is too large", 422: "Invalid parameters", 429: "A submission limit (see Retry-After)",
                 503: "The judge is unavailable; retry later"}


class ErrorBody(BaseModel):
    """The body of every error response."""

    error: str
    message: str


def error_responses(*statuses: int) -> dict:
    """OpenAPI ``responses`` entries with the ``ErrorBody`` schema for ``statuses``."""
    return {status: {"model": ErrorBody, "description": _DESCRIPTIONS.get(status, "Error")} for status in statuses}


def error_response(status: int, code: str, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status_code=status, headers=headers)


async def _refusal(_request: Request, exc: Refusal) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return error_response(exc.status, exc.code, exc.message, headers)


async def _rejected(_request: Request, exc: Rejected) -> JSONResponse:
    return error_response(400, "rejected", f"{exc}. Nothing was stored.")


async def _unavailable(_request: Request, exc: Exception) -> JSONResponse:
    log.error("service unavailable: %s", exc.__class__.__name__)
    message = str(exc) if isinstance(exc, ServiceUnavailable) else \
        "the judge's database cannot be reached right now; nothing was stored. Retry in a minute"
    return error_response(503, "unavailable", message, {"Retry-After": str(UNAVAILABLE_RETRY_SECONDS)})


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app answers on this path (Starlette's 405 names only one route's):
    the methods for which the router would find a full match."""
    return [method for method in _METHODS
            if any(route.matches({**request.scope, "method": method})[0] == Match.FULL
                   for route in request.app.router.routes)]


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Starlette's HTTP errors (404, 405 with a full ``Allow``, ...) as ``{"error", "message"}``."""
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 404 and message == "Not Found":
        message = "no such path; the API is under /api/v1 (see /api/v1/openapi.json)"
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed_methods(request))
        message = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
    return error_response(exc.status_code, _HTTP_CODES.get(exc.status_code, "error"), message, headers or None)


async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 ``invalid_request`` naming up to five bad parameters (never echoing their values)."""
    problems = []
    for error in exc.errors()[:5]:  # the location and the reason; never the (possibly huge) input itself
        where = ".".join(str(part) for part in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return error_response(422, "invalid_request", "; ".join(problems) or "invalid request")


async def _crash(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal", "internal error of the server (not your fault); the organisers "
                                           "can see it in the server's log. Please retry later")


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers of the module docstring on ``app``."""
    app.add_exception_handler(Refusal, _refusal)
    app.add_exception_handler(Rejected, _rejected)
    for unavailable in (ServiceUnavailable, OperationalError, InterfaceError):
        app.add_exception_handler(unavailable, _unavailable)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, _crash)
