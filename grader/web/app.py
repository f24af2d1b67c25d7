"""The ASGI app of ``kdt-grade serve``: ``create_app(settings, relay=None)``, and ``create_http_app()``,
the factory each HTTP process of ``kdt-grade serve`` calls (``grader.serve.server``).

``app.state`` carries ``settings`` and ``service`` (one ``grader.service.Service`` for the process; its
engine is thread-safe and every call opens its own transaction), whose ``scheduler`` is the server's
(``grader.service.scheduling.scheduler_for(..., server=True)``). The lifespan creates or upgrades the
schema (embedded mode, as ``submit`` does). Without ``relay`` (the app alone in one process) the app
grades too: its scheduler is the embedded ``Dispatcher`` (in broker mode the background loop runs the
outbox and the sweeper); with ``relay`` (an HTTP process of ``serve``) the grading process next to it
does, and accepted ids go there (``grader.runtime.relay``). Routers: ``api`` (one per audience:
``contestant``, ``public``, ``admin``; ``messages``: one for contestants, one for organisers) and
``pages`` (``pages.install.install_pages``). The OpenAPI
document is at ``/api/v1/openapi.json``, its reference page (``pages.api_reference``, no CDN) at
``/api/v1/docs``. Every request passes ``http.limits.BodyLimits`` (body size and time, before the app
reads it); the page forms have ``http.limits.form_limits``.
"""
from __future__ import annotations

import gc
import os
from contextlib import asynccontextmanager

from fastapi import FastAPI

from grader.config import Settings, load_settings
from grader.runtime.relay import RELAY_ENV, announce_ready
from grader.service import Service
from grader.service.scheduling import scheduler_for
from grader.version import grader_version

from .api import admin as api_admin, contestant as api_contestant, messages as api_messages, public as api_public
from .http import admission
from .http.error_responses import install_error_handlers
from .http.limits import BodyLimits, form_limits
from .pages.install import install_pages, refusal_page

API_ROUTERS = (api_contestant.router, api_messages.router, api_public.router, api_admin.router,
               api_messages.admin_router)


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
    service.scheduler = scheduler_for(service, relay=relay, server=True)
    grades_here = relay is None

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        service.factory  # noqa: B018  (creates the engine, and in embedded mode the schema, before requests)
        _app.state.intake_limiter, _app.state.uploads = admission.limiter(), admission.Uploads()
        service.scheduler.start()
        if relay is not None:
            announce_ready(relay)
        # Broker mode: the outbox and the automatic sweeper (grader.runtime.background). Embedded mode: the
        # scheduler above is the only grader; it queues again at start what a previous process left, and a
        # sweeper grading beside it would take submissions still waiting in its queue.
        loops = service.start_background(sweep=True) if grades_here and not settings.embedded else None
        gc.freeze()  # the start-up objects (numpy, torch, SQLAlchemy...) leave the collector's rounds
        try:
            yield
        finally:
            if loops is not None:
                loops.stop()
            service.close()

    app = FastAPI(title="kdt-grade", version=grader_version()["version"], lifespan=lifespan,
                  description="The KDT contest's judge. Contestants: `kdt-grade login`, `kdt-grade submit`.",
                  openapi_url="/api/v1/openapi.json", docs_url=None, redoc_url=None,
                  form_limits=form_limits(settings))
    app.state.settings, app.state.service = settings, service
    install_error_handlers(app)
    for router in API_ROUTERS:
        app.include_router(router)
    install_pages(app)
    # Body size and time limits on every route, before the app (and so authentication) sees the body.
    app.add_middleware(BodyLimits, settings=settings, page=refusal_page)
    return app
