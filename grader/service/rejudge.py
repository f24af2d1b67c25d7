"""Grading submissions again from scratch (``admin rejudge``, the admin API and page).

One transaction starts a new *generation* of each chosen submission (``db.start_rejudge``: the old results
and totals stay on the leaderboard until the new ones land) and reserves its grading
(``Service.scheduler``: in broker mode the outbox row ``compile N``); after the commit the grading starts.

``rejudge_filtered`` (the admin page's "rejudge these") does the same for the submissions a filter keeps
(``db.search``), and in the same transaction records them with their totals before the rejudge
(``db.rejudge_batches``), which ``search.rejudge_comparison`` compares with the totals after.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import db
import db.rejudge_batches as batches_db
from db.search import SubmissionFilter, matching_ids
from grader.refusals import BadRequest
from grader.runtime.retries import is_transient, unavailable

if TYPE_CHECKING:
    from .facade import Service


def rejudge(service: Service, ids: Iterable[int] = (), user: str | None = None, everything: bool = False,
            on_result=None, fresh: bool = False) -> list[int]:
    """Grade the chosen submissions again from scratch; returns their ids. ``ids``, ``user`` and
    ``everything`` combine (union). ``fresh``: compile and simulate every point again, reusing no stored
    result or compile (``grader.service.reuse``); else an unchanged kernel takes its stored result. ``LookupError`` for an unknown id (nothing changes then);
    ``ServiceUnavailable`` when the database is unreachable. Embedded mode in a command grades them
    here, before returning (``on_result`` sees each point); the server queues them for its grading
    threads."""
    chosen, keys = _in_transaction(_start, service, ids, user, everything, fresh)
    _send(service, chosen, keys, on_result)
    return chosen


def rejudge_filtered(service: Service, chosen: SubmissionFilter, requested_by: int | None, description: str,
                     on_result=None) -> tuple[int, list[int]]:
    """Grade the submissions ``chosen`` keeps again from scratch, recording them first with their totals
    (the batch); returns ``(batch id, ids)``. ``BadRequest`` when no submission matches (nothing changes)."""
    (batch_id, ids), keys = _in_transaction(_start_filtered, service, chosen, requested_by, description)
    _send(service, ids, keys, on_result)
    return batch_id, ids


def _in_transaction(start, service: Service, *args):
    """``start(service, *args)``, its database faults as ``ServiceUnavailable`` when transient."""
    try:
        return start(service, *args)
    except (LookupError, BadRequest):
        raise
    except Exception as exc:
        if is_transient(exc):
            raise unavailable(exc, "the database is unreachable") from exc
        raise


def _send(service: Service, chosen: list[int], keys: list[str], on_result) -> None:
    """After the commit: the grading of the new generations starts."""
    service.scheduler.send(keys)
    if service.scheduler.embedded:
        for submission_id in chosen:
            service.enqueue(submission_id, on_result=on_result)


def _start_filtered(service: Service, chosen: SubmissionFilter, requested_by: int | None,
                    description: str) -> tuple[tuple[int, list[int]], list[str]]:
    """The batch and the new generations of the submissions ``chosen`` keeps, in one transaction."""
    with service.session() as session:
        ids = matching_ids(session, chosen)
        if not ids:
            raise BadRequest("no submission matches these filters; nothing was rejudged")
        batch_id = batches_db.create_batch(session, requested_by, description[:batches_db.DESCRIPTION_MAX_LENGTH],
                                           ids)
        keys = _generations(service, session, ids)
    return (batch_id, ids), keys


def _generations(service: Service, session, ids: Iterable[int], fresh: bool = False) -> list[str]:
    """Start a new generation of each submission (``fresh``: reusing nothing) and reserve its grading; the
    keys for ``send``."""
    keys = []
    for submission_id in sorted(ids):
        db.start_rejudge(session, submission_id, fresh=fresh)
        keys += service.scheduler.reserve(session, submission_id)
    return keys


def _start(service: Service, ids: Iterable[int], user: str | None, everything: bool,
           fresh: bool = False) -> tuple[list[int], list[str]]:
    """The new generations of the chosen submissions and what their grading needs, in one transaction:
    ``(ids, keys for Scheduler.send)``."""
    with service.session() as session:
        chosen = set(ids)
        if user is not None:
            chosen.update(db.submission_ids(session, user))
        if everything:
            chosen.update(db.submission_ids(session))
        keys = _generations(service, session, chosen, fresh)
    return sorted(chosen), keys
