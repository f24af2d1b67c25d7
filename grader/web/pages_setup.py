"""Adding the pages to the server's app: the two page routers, our static files and the scoreboard state.

``install_pages(app)`` is called by ``create_app``; it needs ``app.state.service`` (set before).
"""
from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from . import pages, pages_admin
from .pages_render import STATIC
from .scoreboard import Scoreboards


def install_pages(app: FastAPI) -> None:
    """Mount ``/`` (pages), ``/admin`` and ``/static`` on ``app``."""
    app.state.scoreboards = Scoreboards(app.state.service)
    app.include_router(pages.router)
    app.include_router(pages_admin.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
