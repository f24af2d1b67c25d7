"""Sending the outbox: the messages to the workers, each first a row of ``db.outbox``.

Every message (``compile N``, ``judge N t.p``) is written as a row in the transaction it follows from
(the submission, the compiled points, a rejudge), so the database, not the broker, holds what must be
done. ``Outbox.send`` publishes rows and deletes each one the broker took; while the broker is down the
rows stay, and the next ``send`` (the background loop's, every ``KDT_GRADE_DISPATCH_INTERVAL_SECONDS``)
tries again.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

import db
from db.base import utcnow

from .broker import Broker, BrokerUnavailable

log = logging.getLogger(__name__)


class Outbox:
    """The outbox of the database behind ``sessions`` (anything with ``session()``), sent with ``broker``."""

    def __init__(self, sessions, broker: Broker):
        self.sessions, self.broker = sessions, broker

    def send(self, keys: Iterable[str] | None = None, min_age: float = 0.0) -> int:
        """Send rows (``keys``, or all of them at least ``min_age`` seconds old) and delete each one the
        broker took; returns how many were sent. Stops at the first broker error (counted on the rows;
        they stay for the next try)."""
        with self.sessions.session() as session:
            rows = db.list_outbox(session, keys)
        if min_age:
            cutoff = utcnow() - timedelta(seconds=min_age)
            rows = [r for r in rows if r["created"] <= cutoff]
        sent = 0
        for row in rows:
            try:
                self.broker.send(row["kind"], row["submission_id"], row["task"], row["point"])
            except BrokerUnavailable as exc:
                log.warning("outbox: %s; %d message(s) wait in the database", exc, len(rows) - sent)
                with self.sessions.session() as session:
                    db.note_outbox_failure(session, [r["id"] for r in rows[sent:]], str(exc))
                return sent
            with self.sessions.session() as session:
                db.delete_outbox(session, row["id"])
            sent += 1
        return sent

    def pending(self, keys: list[str]) -> list[str]:
        """Those of ``keys`` still waiting in the outbox (not sent yet, here or by another process)."""
        with self.sessions.session() as session:
            return [row["key"] for row in db.list_outbox(session, keys)]

    def in_flight(self) -> set[tuple]:
        """What is on its way to a worker: every outbox row and every message waiting in the broker's queue,
        as ``("compile", id, None, None)`` / ``("judge", id, task, point)``. Raises ``BrokerUnavailable``."""
        with self.sessions.session() as session:
            keys = db.outbox_keys(session)
        return keys | self.broker.waiting()
