"""The ASGI app of ``kdt-grade serve``: ``create_app(settings, relay=None)``, and ``create_http_app()``,
the factory each HTTP process of ``kdt-grade serve`` calls (``grader.web.server``).

``app.state`` carries ``settings``, ``service`` (one ``grader.service.Service`` for the process; its engine
is thread-safe and every call opens its own transaction) and ``dispatcher`` (``grading.Dispatcher``).
The lifespan creates or upgrades the schema (embedded mode, as ``submit`` does). Without ``relay`` (the
app alone in one process) it also starts the dispatcher (and in broker mode the outbox dispatcher and
sweeper loops) and closes them at shutdown; with ``relay`` (an HTTP process of ``serve``) the grading
process next to it runs those, and accepted ids go there (``grading.Relay``). Routers, one per
audience: ``api_contestant``, ``api_public``, ``api_admin`` (pages: ``pages_setup.install_pages``). The
OpenAPI document is at ``/api/v1/openapi.json``, its reference page (``grader.web.api_docs``, no CDN) at ``/api/v1/docs``.
"""
from __future__ import annotations

import gc
import os
from contextlib import asynccontextmanager

from fastapi import FastAPI

from grader.config import Settings, load_settings
from grader.service import Service
from grader.version import grader_version

from . import api_admin, api_contestant, api_public, intake
from .errors import install_error_handlers
from .grading import RELAY_ENV, Dispatcher
from .pages_setup import install_pages

API_ROUTERS = (api_contestant.router, api_public.router, api_admin.router)


def create_http_app() -> FastAPI:
    """The app of one HTTP process of ``kdt-grade serve``: settings from ``KDT_GRADE_*``, accepted ids
    relayed to the grading process whose socket path is ``$KDT_GRADE_RELAY_SOCKET`` (set by the server)."""
    relay = os.environ.get(RELAY_ENV)
    if not relay:
        raise RuntimeError(f"{RELAY_ENV} is not set: run the server with `kdt-grade serve`")
    return create_app(load_settings(), relay=relay)


def create_app(settings: Settings | None = None, relay: str | None = None) -> FastAPI:
    """A new app over the service configured by ``settings`` (default: ``KDT_GRADE_*``); ``relay``: the
    grading process's socket (see the module docstring)."""
    settings = settings or load_settings()
    service = Service(settings)
    dispatcher = Dispatcher(service, relay=relay)
    grades_here = relay is None

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        service.factory  # noqa: B018  (creates the engine, and in embedded mode the schema, before requests)
        _app.state.intake_limiter, _app.state.uploads = intake.limiter(), intake.Uploads()
        dispatcher.start()
        # Broker mode: the outbox dispatcher and the automatic sweeper (grader.sweeper). Embedded mode:
        # the dispatcher above is the only grader; it queues again at start what a previous process left,
        # and a sweeper grading beside it would take submissions still waiting in its queue.
        loops = service.start_background(sweep=True) if grades_here and not settings.embedded else None
        gc.freeze()  # the start-up objects (numpy, torch, SQLAlchemy...) leave the collector's rounds
        try:
            yield
        finally:
            if loops is not None:
                loops.stop()
            dispatcher.close()
            service.close()

    app = FastAPI(title="kdt-grade", version=grader_version()["version"], lifespan=lifespan,
                  description="The KDT contest's judge. Contestants: `kdt-grade login`, `kdt-grade submit`.",
                  openapi_url="/api/v1/openapi.json", docs_url=None, redoc_url=None)
    app.state.settings, app.state.service, app.state.dispatcher = settings, service, dispatcher
    install_error_handlers(app)
    for router in API_ROUTERS:
        app.include_router(router)
    install_pages(app)
    return app
