"""Healing by hand: ``admin sweep`` now, and the embedded mode's resumption of an interrupted run.

Both run one sweep of ``grader.runtime.sweeper`` over this service (the automatic one runs in the
background loop of every worker and of the server in broker mode).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from grader.runtime.sweeper import Sweeper

if TYPE_CHECKING:
    from .facade import Service


def sweep(service: Service, older_than: float | None = None) -> list[dict]:
    """One manual sweep (``admin sweep``, see ``grader.runtime.sweeper.Sweeper.run``) with ``older_than``
    (default ``stuck_after_seconds``) as the age a point may be unclaimed or silent; returns the
    re-queued test points, each with ``"reason"`` and ``"action"`` (``compile`` or ``judge``)."""
    return sweep_report(service, older_than)["points"]


def sweep_report(service: Service, older_than: float | None = None) -> dict:
    """Everything one manual sweep did (``Sweeper.run``'s report)."""
    age = service.settings.stuck_after_seconds if older_than is None else older_than
    return Sweeper(service).run(age, manual=True)


def resume_interrupted(service: Service) -> list[int]:
    """Embedded mode: grade what an interrupted run left, at once: points claimed by a process of this
    host that is gone, and submissions nobody is compiling (no live lease "compile N") with points
    nobody claimed. Claims and leases keep a live process's work its own, so at worst a submission
    still waiting in an embedded server's queue is graded here instead. Returns the submissions it
    graded (none in broker mode)."""
    if not service.settings.embedded:
        return []
    report = Sweeper(service).run(0.0, manual=True)
    return sorted({p["submission_id"] for p in report["points"]} | set(report["totals"]))
