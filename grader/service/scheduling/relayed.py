"""Embedded mode in an HTTP process of ``kdt-grade serve``: the grading process grades; this process only
hands it the ids it accepted (``grader.runtime.relay``)."""
from __future__ import annotations

from collections.abc import Callable

from grader.runtime.relay import Relay
from judger.verdicts import PointResult

from .base import Scheduler


class RelayScheduler(Scheduler):
    """Sends each id to the grading process listening on the Unix socket ``path``."""

    def __init__(self, path: str):
        self.relay = Relay(path)

    def dispatch(self, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> bool:
        """One datagram to the grading process (a lost one is graded at its next start)."""
        self.relay.send(submission_id)
        return True

    def close(self) -> None:
        """Close the socket."""
        self.relay.close()
