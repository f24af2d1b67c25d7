"""Transient infrastructure errors (the database or the broker unreachable) and retrying them.

A task that meets one does not fail: it waits and tries the same step again, with exponential backoff,
for up to ``KDT_GRADE_TRANSIENT_RETRY_SECONDS``; every step it retries is idempotent (one transaction, or
an upsert). Only errors of the infrastructure count; a bug or bad data is raised at once.

Public API: ``is_transient(exc)``, ``retry_transient(fn, seconds, what)``, ``unavailable(exc, what)``.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import exc as sa_exc

from grader.errors import ServiceUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")
FIRST_DELAY, MAX_DELAY = 0.25, 5.0   # seconds


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` means "the database or the broker cannot be reached right now"."""
    if isinstance(exc, ServiceUnavailable):
        return True
    if isinstance(exc, (sa_exc.OperationalError, sa_exc.InterfaceError)):
        return True
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    try:
        import redis

        if isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
            return True
    except ImportError:  # redis-py is only needed in broker mode
        pass
    return isinstance(exc, (ConnectionError, TimeoutError))


def retry_transient(fn: Callable[[], T], seconds: float, what: str) -> T:
    """Call ``fn`` until it returns, retrying transient errors with backoff for up to ``seconds``.

    Raises the last transient error after ``seconds``; any other error at once."""
    deadline = time.monotonic() + seconds
    delay = FIRST_DELAY
    while True:
        try:
            return fn()
        except Exception as exc:
            if not is_transient(exc) or time.monotonic() + delay > deadline:
                raise
            log.warning("%s: %s; retrying in %.1f s", what, _one_line(exc), delay)
            time.sleep(delay)
            delay = min(MAX_DELAY, delay * 2)


def unavailable(exc: BaseException, what: str) -> ServiceUnavailable:
    """A ``ServiceUnavailable`` with one line saying what is down (for CLI errors and HTTP 503)."""
    if isinstance(exc, ServiceUnavailable):
        return exc
    return ServiceUnavailable(f"{what}: {_one_line(exc)}; nothing was stored, try again in a minute")


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
