"""Running the app on uvicorn (``kdt-grade serve``), with the service's own logger next to uvicorn's.

uvicorn's access log shows the client, the request line and the status; tokens travel only in the
``Authorization`` header, which is never logged. Query strings are not logged either (``QueryRedacted``):
a client that puts its token there by mistake must not leave it in the log.
"""
from __future__ import annotations

import copy
import logging

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from grader.config import Settings

from .app import create_app


class QueryRedacted(logging.Filter):
    """Replaces the query string of an access-log record's path with ``?…`` (uvicorn passes
    ``(client, method, path, http_version, status)`` as the record's arguments)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0] + "?…", *args[3:])
        return True


def log_config(level: str = "INFO") -> dict:
    """uvicorn's logging configuration plus the ``kdt_grade`` loggers on its default handler, and the
    access log without query strings."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["kdt_grade"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    config.setdefault("filters", {})["query_redacted"] = {"()": QueryRedacted}
    config["handlers"]["access"]["filters"] = ["query_redacted"]
    return config


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Serve the app until interrupted (SIGINT/SIGTERM end it cleanly).

    First the sandbox self-check (``grader.doctor.self_check``: a known-good kernel through the real
    sandbox with the configured limits): the server refuses to start, with ``SelfCheckFailed``'s message,
    rather than give every contestant a judge fault."""
    from grader.doctor import self_check

    self_check(settings)
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, log_config=log_config(log_level),
                server_header=False, proxy_headers=False)
