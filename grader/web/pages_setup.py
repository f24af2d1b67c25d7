"""Adding the pages to the server's app: the two page routers, our static files and the scoreboard state.

``install_pages(app)`` is called by ``create_app``; it needs ``app.state.service`` (set before).
"""
from __future__ import annotations

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import api_docs, errors, pages, pages_admin
from .pages_render import STATIC
from .scoreboard import Scoreboards


def install_pages(app: FastAPI) -> None:
    """Mount ``/`` (pages), ``/admin``, ``/api/v1/docs`` and ``/static`` on ``app``."""
    app.state.scoreboards = Scoreboards(app.state.service)
    app.include_router(pages.router)
    app.include_router(pages_admin.router)
    app.include_router(api_docs.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_api_route("/favicon.ico", lambda: Response(status_code=204), include_in_schema=False)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)


def wants_page(request: Request) -> bool:
    """A browser asking for a page (not ``/api/...``, HTML accepted): its errors are pages, not JSON."""
    return not request.url.path.startswith(("/api/", "/static/")) and "text/html" in request.headers.get("accept", "")


async def _http_error(request: Request, exc: StarletteHTTPException):
    if wants_page(request) and exc.status_code in (404, 405):
        heading = "Not found" if exc.status_code == 404 else "Not allowed"
        message = "There is no such page." if exc.status_code == 404 else f"{request.method} is not allowed here."
        return pages.error_page(request, exc.status_code, heading, message)
    return await errors.http_error(request, exc)


async def _validation_error(request: Request, exc: RequestValidationError):
    if wants_page(request):
        return pages.error_page(request, 404, "Not found", "There is no such page (check the address).")
    return await errors.validation_error(request, exc)
