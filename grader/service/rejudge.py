"""Grading submissions again from scratch (``admin rejudge``, the admin API and page).

One transaction starts a new *generation* of each chosen submission (``db.start_rejudge``: the old results
and totals stay on the leaderboard until the new ones land) and reserves its grading
(``Service.scheduler``: in broker mode the outbox row ``compile N``); after the commit the grading starts.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import db
from grader.runtime.retries import is_transient, unavailable

if TYPE_CHECKING:
    from .facade import Service


def rejudge(service: Service, ids: Iterable[int] = (), user: str | None = None, everything: bool = False,
            on_result=None) -> list[int]:
    """Grade the chosen submissions again from scratch; returns their ids. ``ids``, ``user`` and
    ``everything`` combine (union). ``LookupError`` for an unknown id (nothing changes then);
    ``ServiceUnavailable`` when the database is unreachable. Embedded mode in a command grades them
    here, before returning (``on_result`` sees each point); the server queues them for its grading
    threads."""
    try:
        chosen, keys = _start(service, ids, user, everything)
    except LookupError:
        raise
    except Exception as exc:
        if is_transient(exc):
            raise unavailable(exc, "the database is unreachable") from exc
        raise
    service.scheduler.send(keys)
    if service.scheduler.embedded:
        for submission_id in chosen:
            service.enqueue(submission_id, on_result=on_result)
    return chosen


def _start(service: Service, ids: Iterable[int], user: str | None, everything: bool) -> tuple[list[int], list[str]]:
    """The new generations of the chosen submissions and what their grading needs, in one transaction:
    ``(ids, keys for Scheduler.send)``."""
    with service.session() as session:
        chosen = set(ids)
        if user is not None:
            chosen.update(db.submission_ids(session, user))
        if everything:
            chosen.update(db.submission_ids(session))
        keys = []
        for submission_id in sorted(chosen):
            db.start_rejudge(session, submission_id)
            keys += service.scheduler.reserve(session, submission_id)
    return sorted(chosen), keys
