"""The ReusableResult aggregate: test point results that any later submission may copy instead of simulating.

A test point's result depends only on its compiled kernel's IR, the point's fixed inputs and the judge's
version, which together make its *key* (``grader.judging.reuse.result_key``: a SHA-256, 64 hex digits).
After a fresh simulation ends ``AC``, ``WA`` or ``RE`` (the verdicts no machine or load can change), the
worker stores the result here under its key, in the same transaction as the point's own result row
(``grader.service.results.record``): an entry exists only for a committed result, never half written.
Every worker on every machine shares the table, so a kernel graded once is never simulated again by the
same judge version; a new judge version makes new keys, and ``purge_other_versions`` drops the old entries.

Public API: ``ReusableResult``, ``REUSABLE_VERDICTS``, ``find_reusable``, ``store_reusable``,
``purge_other_versions``, ``reusable_count``.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Float, Integer, LargeBinary, String, Text, delete, func, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow
from db.dialects import upsert_insert

REUSABLE_VERDICTS = ("AC", "WA", "RE")  # TLE and MLE depend on the machine, CE/SV/IE are never simulated
KEY_LENGTH = 64


class ReusableResult(Base):
    """One reusable result: the point's verdict, cycles, score, message, MXM utilisation and trace blob
    (``grader.judging.trace_record``, or NULL) as the fresh simulation gave them; ``simulate_seconds`` is
    what that simulation cost (what each reuse saves)."""

    __tablename__ = "reusable_results"

    key: Mapped[str] = mapped_column(String(KEY_LENGTH), primary_key=True)
    judge_version: Mapped[str] = mapped_column(String(KEY_LENGTH), index=True)
    task: Mapped[int] = mapped_column(Integer)
    point: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str] = mapped_column(String(3))
    cycles: Mapped[int | None] = mapped_column(BigInteger)
    score: Mapped[float] = mapped_column(Float)
    message: Mapped[str] = mapped_column(Text)
    utilisation: Mapped[float | None] = mapped_column(Float)
    simulate_seconds: Mapped[float] = mapped_column(Float)
    trace: Mapped[bytes | None] = mapped_column(LargeBinary)
    created: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


_TABLE = ReusableResult.__table__
_FIELDS = ("task", "point", "verdict", "cycles", "score", "message", "utilisation", "simulate_seconds", "trace")


def find_reusable(session: Session, key: str) -> dict[str, Any] | None:
    """The stored result of ``key`` as ``{"task", "point", "verdict", "cycles", "score", "message",
    "utilisation", "simulate_seconds", "trace"}``, or None."""
    row = session.execute(select(*(_TABLE.c[f] for f in _FIELDS)).where(_TABLE.c.key == key)).mappings().one_or_none()
    return None if row is None else dict(row)


def store_reusable(session: Session, key: str, judge_version: str, result: dict[str, Any]) -> bool:
    """Store ``result`` (the keys of ``find_reusable``) under ``key``, replacing an entry of the same key
    (equal keys give equal results; the newest simulation, e.g. a ``--fresh`` rejudge's, wins). Returns
    whether a row was written; the caller commits.
    Raises ``ValueError`` for a verdict outside ``REUSABLE_VERDICTS`` or a key that is not 64 hex digits."""
    if result["verdict"] not in REUSABLE_VERDICTS:
        raise ValueError(f"a {result['verdict']} result is not reusable (only {', '.join(REUSABLE_VERDICTS)})")
    if len(key) != KEY_LENGTH or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"a result key is {KEY_LENGTH} lowercase hex digits, got {key!r}")
    insert = upsert_insert(session, _TABLE).values(key=key, judge_version=judge_version, created=utcnow(),
                                                   **{f: result[f] for f in _FIELDS})
    replace = {f: insert.excluded[f] for f in (*_FIELDS, "judge_version", "created")}
    return bool(session.execute(insert.on_conflict_do_update(index_elements=["key"], set_=replace)).rowcount)


def purge_other_versions(session: Session, judge_version: str) -> int:
    """Delete the entries of every other judge version (their keys can never match again); returns how many."""
    return session.execute(delete(_TABLE).where(_TABLE.c.judge_version != judge_version)).rowcount or 0


def reusable_count(session: Session) -> int:
    """How many entries the store holds."""
    return int(session.scalar(select(func.count()).select_from(_TABLE)))
