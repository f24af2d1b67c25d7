"""Running the app on uvicorn (``kdt-grade serve``), with the service's own logger next to uvicorn's.

uvicorn's access log shows the client, the request line and the status; tokens travel only in the
``Authorization`` header, which is never logged.
"""
from __future__ import annotations

import copy

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from grader.config import Settings

from .app import create_app


def log_config(level: str = "INFO") -> dict:
    """uvicorn's logging configuration plus the ``kdt_grade`` loggers on its default handler."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["kdt_grade"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    return config


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Serve the app until interrupted (SIGINT/SIGTERM end it cleanly)."""
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, log_config=log_config(log_level),
                server_header=False, proxy_headers=False)
