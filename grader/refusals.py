"""Refusals: a request the service declines, with a code, a message a person can act on, and an HTTP status.

Raised by ``grader.service.accounts`` (authentication), ``grader.service.submission_limits`` (window and limits) and the server's
routes; the server turns one into ``{"error": code, "message": message}`` with ``status`` (and
``Retry-After`` when ``retry_after`` is set), the CLI into a one-line error. A refusal is never a fault
of the judge (those are ``grader.errors.ServiceUnavailable``, 503) and nothing is stored for one.
"""
from __future__ import annotations

import math


class Refusal(Exception):
    """A declined request. ``code``: a short machine-readable word (``"rate_limited"``); ``status``: the HTTP
    status; ``retry_after``: seconds until trying again makes sense (429), rounded up, or None."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.retry_after = None if retry_after is None else max(1, math.ceil(retry_after))


class BadRequest(Refusal):
    """400: the request is malformed (the intake's reasons: empty, not UTF-8, not Python)."""


class NotAuthenticated(Refusal):
    """401: no token, or a token that belongs to nobody."""

    status, code = 401, "unauthorized"


class Forbidden(Refusal):
    """403: a disabled user, an admin-only operation, or outside the contest window."""

    status, code = 403, "forbidden"


class NotFound(Refusal):
    """404: no such thing, or one the caller may not see (the two are indistinguishable on purpose)."""

    status, code = 404, "not_found"


class TooLarge(Refusal):
    """413: the upload is larger than the intake's limit."""

    status, code = 413, "too_large"


class TooMany(Refusal):
    """429: a submission limit (minimum interval, per hour, pending) or the hourly question limit;
    ``retry_after`` says when to retry."""

    status, code = 429, "rate_limited"
