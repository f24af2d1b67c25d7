"""Adding the pages to the server's app: the page routers, our static files, the scoreboard's and the messages
badge's state, and the pages' answers to errors (a browser asking for a page gets an HTML error page, anyone
else JSON).

``install_pages(app)`` is called by ``create_app``; it needs ``app.state.service`` (set before).
``refusal_page`` is the HTML answer of ``grader.web.http.limits.BodyLimits`` to a browser.
"""
from __future__ import annotations

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from grader.web.http import error_responses

from . import admin, admin_board, admin_rules, admin_users, api_reference, compare, contestant, messages, public
from .base import PAGE_HEADERS, error_page
from .render import STATIC, render
from .scoreboard import Scoreboards


def install_pages(app: FastAPI) -> None:
    """Mount ``/`` (public pages), the contestants' pages (with ``/submissions/A/compare/B``), ``/messages``, ``/admin`` (with the jury's
    ``/admin/scoreboard``, ``/admin/users`` and ``/admin/contest``), ``/api/v1/docs`` and ``/static``."""
    app.state.scoreboards = Scoreboards(app.state.service)
    app.include_router(public.router)
    app.include_router(contestant.router)
    app.include_router(compare.router)
    app.include_router(messages.router)
    app.include_router(admin.router)
    app.include_router(admin_board.router)
    app.include_router(admin_users.router)
    app.include_router(admin_rules.router)
    app.include_router(api_reference.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_api_route("/favicon.ico", lambda: Response(status_code=204), include_in_schema=False)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)


def wants_page(request: Request) -> bool:
    """A browser asking for a page (not ``/api/...``, HTML accepted): its errors are pages, not JSON."""
    return not request.url.path.startswith(("/api/", "/static/")) and "text/html" in request.headers.get("accept", "")


def refusal_page(request: Request, status: int, message: str) -> Response | None:
    """The error page of a body the HTTP limits refused (413 too large, 408 too slow, 400 or 411 framing)
    for a browser asking for a page; None for anyone else (they get JSON). No account is looked up: nothing
    of the request has been read."""
    if not wants_page(request):
        return None
    heading = {413: "Too large", 408: "Too slow"}.get(status, "Bad request")
    return render(request, "error.html", status, account=None, headers=dict(PAGE_HEADERS), code=status,
                  heading=heading, message=message[0].upper() + message[1:] + ".")


async def _http_error(request: Request, exc: StarletteHTTPException):
    if wants_page(request) and exc.status_code in (404, 405):
        heading = "Not found" if exc.status_code == 404 else "Not allowed"
        message = "There is no such page." if exc.status_code == 404 else f"{request.method} is not allowed here."
        return error_page(request, exc.status_code, heading, message)
    if wants_page(request) and exc.status_code == 400:  # a form over its limits (limits.form_limits)
        detail = exc.detail if isinstance(exc.detail, str) else "The form could not be read."
        return error_page(request, 400, "Bad request", f"{detail} Go back, reload the page and try again.")
    return await error_responses.http_error(request, exc)


async def _validation_error(request: Request, exc: RequestValidationError):
    if wants_page(request):
        return error_page(request, 404, "Not found", "There is no such page (check the address).")
    return await error_responses.validation_error(request, exc)
