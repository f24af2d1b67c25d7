"""Errors the grading service raises to its entry points (CLI commands, HTTP routes).

They carry a message a person can act on; the entry point turns them into a one-line error (CLI) or an
HTTP status (the server). None of them is ever shown to a contestant as a verdict: they are faults of the
judge's infrastructure, not of a submission.
"""
from __future__ import annotations


class ServiceUnavailable(Exception):
    """The database or the broker cannot be reached right now; nothing was stored (HTTP 503).

    ``str(error)`` is one line naming what is down and what to do (retry later).
    """
