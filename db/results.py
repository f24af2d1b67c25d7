"""The TestPointResult aggregate: one row per (submission, task, point), written idempotently.

Life of a row:

1. `claim_attempt` (the worker, before grading) creates the row if missing, or resets an existing one,
   to the *running* state (`started_at` set; `verdict`, `score`, `cycles`, `finished_at` NULL) and
   atomically increments `attempts`. The worker decides what to do with the count (e.g. give up
   with `IE` after 3 attempts); that policy is not the database's. With `seen` (the row the worker
   read before deciding to claim) the claim is a compare-and-set: it fails (None) when another claim
   or a result came in between, so two deliveries of one point never both count an attempt.
2. `record_result` (the worker, after grading) writes the verdict, score, cycles, message and
   timings: the row is *finished* (`finished_at` and `verdict` set). Writing the same point again
   updates the single row, so a redelivered task cannot create a duplicate.

Both writes are one `INSERT ... ON CONFLICT (submission_id, task, point) DO UPDATE` statement
(SQLite and PostgreSQL), which is what makes them safe under concurrent workers.

Public API: `TestPointResult`, `VERDICTS`, `record_result`, `claim_attempt`, `beat` (heartbeats),
`get_result`, `list_results`. Everything returned is plain data (dicts, ints).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    and_,
    case,
    false,
    func,
    null,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow
from db.dialects import upsert_insert
from judger.verdicts import VERDICTS  # the one list of verdicts (judging.md); only AC scores above zero

# ``claim_attempt(seen=...)``'s default: claim whatever the row is.
_ANY_ROW: Any = object()
WORKER_MAX_LENGTH = 255
_VERDICT_SQL_LIST = ", ".join(f"'{verdict}'" for verdict in VERDICTS)


class TestPointResult(Base):
    """The outcome (or the running state) of one test point of one submission.

    `verdict`, `score` and `finished_at` are NULL while the point runs; `cycles` is NULL unless the
    simulation produced a cycle count. Times are aware UTC; `wall_seconds` is the grading time.
    """

    __tablename__ = "test_point_results"
    __test__ = False  # not a pytest test class, despite the name
    __table_args__ = (
        UniqueConstraint("submission_id", "task", "point"),
        CheckConstraint(f"verdict IN ({_VERDICT_SQL_LIST})", name="verdict"),
        CheckConstraint("score >= 0 AND score <= 100", name="score_range"),
        CheckConstraint("attempts >= 0", name="attempts_nonnegative"),
        CheckConstraint("task >= 1 AND point >= 0", name="task_point_range"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    task: Mapped[int] = mapped_column(Integer)
    point: Mapped[int] = mapped_column(Integer)
    verdict: Mapped[str | None] = mapped_column(String(3))
    cycles: Mapped[int | None] = mapped_column(BigInteger)
    score: Mapped[float | None] = mapped_column(Float)
    message: Mapped[str] = mapped_column(Text, default="")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    worker: Mapped[str | None] = mapped_column(String(WORKER_MAX_LENGTH))
    queued_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    wall_seconds: Mapped[float | None] = mapped_column(Float)
    # Written every few seconds by the worker judging the point (liveness for the sweeper).
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The submission's generation this row belongs to (a rejudge starts a new one; older rows are stale).
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # True when the result was copied from an identical kernel's (``db.reuse``), not simulated here.
    reused: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    def to_dict(self) -> dict[str, Any]:
        """Return the row as plain data, one key per column."""
        return {column.key: getattr(self, column.key) for column in self.__table__.columns}


_TABLE = TestPointResult.__table__
_CONFLICT_KEY = ["submission_id", "task", "point"]


def _check_point(task: int, point: int) -> None:
    if task < 1 or point < 0:
        raise ValueError(f"invalid test point: task {task} (>= 1) point {point} (>= 0)")


def _check_outcome(verdict: str, score: float, cycles: int | None, worker: str) -> None:
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}; expected one of {VERDICTS}")
    if not 0 <= score <= 100:
        raise ValueError(f"score must be within 0..100, got {score!r}")
    if verdict != "AC" and score != 0:
        raise ValueError(f"only AC scores above zero; got verdict {verdict} with score {score!r}")
    if cycles is not None and cycles < 0:
        raise ValueError(f"cycles must be >= 0, got {cycles!r}")
    if len(worker) > WORKER_MAX_LENGTH:
        raise ValueError(f"worker name longer than {WORKER_MAX_LENGTH} characters")


def record_result(
    session: Session,
    submission_id: int,
    task: int,
    point: int,
    verdict: str,
    cycles: int | None,
    score: float,
    message: str,
    worker: str,
    *,
    queued_at: datetime | None = None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    wall_seconds: float | None = None,
    generation: int = 0,
    reused: bool = False,
) -> dict[str, Any] | None:
    """Insert or update the single result row of a test point and return it as a dict.

    Inputs: an open session (the caller commits), the point's key, its outcome and the worker's name;
    `reused`: the outcome was copied from an identical kernel's (`db.reuse`); aware UTC timings: `finished_at` defaults to now, and a timing passed as None keeps the value
    already stored (so `started_at` written by `claim_attempt` survives). `attempts` is never changed.
    Output: the row after the write, as `TestPointResult.to_dict()` would give it; None (nothing
    written) when the stored row belongs to a newer `generation`.
    Raises `ValueError` for an unknown verdict, a score outside 0..100, a non-zero score without
    `AC`, negative cycles or an invalid point; `sqlalchemy.exc.IntegrityError` if the submission
    does not exist.

    Totals are not updated here: call `db.totals.finalize_submission` in a later transaction.
    """
    _check_point(task, point)
    _check_outcome(verdict, score, cycles, worker)
    insert = upsert_insert(session, _TABLE).values(
        submission_id=submission_id,
        task=task,
        point=point,
        verdict=verdict,
        cycles=cycles,
        score=score,
        message=message,
        attempts=0,
        worker=worker,
        queued_at=queued_at,
        started_at=started_at,
        finished_at=finished_at or utcnow(),
        wall_seconds=wall_seconds,
        generation=generation,
        reused=reused,
    )
    new = insert.excluded
    statement = insert.on_conflict_do_update(
        index_elements=_CONFLICT_KEY,
        set_={
            "reused": new.reused,
            "verdict": new.verdict,
            "cycles": new.cycles,
            "score": new.score,
            "message": new.message,
            "worker": new.worker,
            "finished_at": new.finished_at,
            "queued_at": func.coalesce(new.queued_at, _TABLE.c.queued_at),
            "started_at": func.coalesce(new.started_at, _TABLE.c.started_at),
            "wall_seconds": func.coalesce(new.wall_seconds, _TABLE.c.wall_seconds),
            "generation": new.generation,
        },
        # A late result of an older generation (a rejudge started meanwhile) must not overwrite a newer row.
        where=_TABLE.c.generation <= new.generation,
    ).returning(*_TABLE.columns)
    row = session.execute(statement).mappings().one_or_none()
    return None if row is None else dict(row)


def claim_attempt(
    session: Session,
    submission_id: int,
    task: int,
    point: int,
    worker: str,
    *,
    queued_at: datetime | None = None,
    now: datetime | None = None,
    generation: int = 0,
    seen: Mapping[str, Any] | None = _ANY_ROW,
) -> int | None:
    """Mark a test point as running for `worker` and return its new attempt count (1, 2, 3, ...).

    Creates the row if missing; otherwise increments `attempts` atomically (concurrent claims of one
    point get distinct counts) and clears the previous outcome, so the point reads as running
    until `record_result`. A claim in a newer `generation` (a rejudge) starts counting from 1 again.
    `started_at` and `heartbeat_at` are set to `now` (default: the current UTC time);
    `queued_at`, if given, is kept only when none is stored yet.

    `seen`: the row as the caller read it in this transaction before deciding to claim (`get_result`;
    None: there was none). The claim is then made only if no other claim or result came in between
    (the row is still missing, or still has the seen `generation` and `attempts` and the seen
    finished state), else nothing is written and None is returned: two deliveries of one point that
    both read it as free cannot both claim it (PostgreSQL does not serialise the read and the write).
    By default the claim is unconditional.
    Raises `ValueError` for an invalid point or worker name; `sqlalchemy.exc.IntegrityError` if the
    submission does not exist. The caller commits, before grading, so the claim is visible.
    """
    _check_point(task, point)
    if len(worker) > WORKER_MAX_LENGTH:
        raise ValueError(f"worker name longer than {WORKER_MAX_LENGTH} characters")
    insert = upsert_insert(session, _TABLE).values(
        submission_id=submission_id,
        task=task,
        point=point,
        message="",
        attempts=1,
        worker=worker,
        queued_at=queued_at,
        started_at=now or utcnow(),
        heartbeat_at=now or utcnow(),
        generation=generation,
    )
    new = insert.excluded
    if seen is None:  # only if nobody created the row meanwhile
        statement = insert.on_conflict_do_nothing(index_elements=_CONFLICT_KEY).returning(_TABLE.c.attempts)
        return session.execute(statement).scalar_one_or_none()
    unchanged = None
    if seen is not _ANY_ROW:
        unchanged = and_(_TABLE.c.generation == seen["generation"], _TABLE.c.attempts == seen["attempts"],
                         _TABLE.c.finished_at.is_(None) if seen["finished_at"] is None
                         else _TABLE.c.finished_at.is_not(None))
    statement = insert.on_conflict_do_update(
        index_elements=_CONFLICT_KEY,
        where=unchanged,
        set_={
            # Incremented in SQL, not read-modify-write in Python: atomic under concurrent claims.
            "attempts": case((_TABLE.c.generation == new.generation, _TABLE.c.attempts + 1), else_=1),
            "generation": new.generation,
            "heartbeat_at": new.heartbeat_at,
            "worker": new.worker,
            "started_at": new.started_at,
            "queued_at": func.coalesce(_TABLE.c.queued_at, new.queued_at),
            "verdict": null(),
            "cycles": null(),
            "score": null(),
            "message": "",
            "finished_at": null(),
            "wall_seconds": null(),
            "reused": false(),
        },
    ).returning(_TABLE.c.attempts)
    return session.execute(statement).scalar_one_or_none() if unchanged is not None \
        else int(session.execute(statement).scalar_one())


def get_result(session: Session, submission_id: int, task: int, point: int) -> dict[str, Any] | None:
    """Return the result row of one test point as a dict, or None if it has never been claimed or recorded."""
    statement = select(_TABLE).where(
        _TABLE.c.submission_id == submission_id, _TABLE.c.task == task, _TABLE.c.point == point
    )
    row = session.execute(statement).mappings().one_or_none()
    return None if row is None else dict(row)


def list_results(session: Session, submission_id: int) -> list[dict[str, Any]]:
    """Return all result rows of a submission as dicts, ordered by task, then point."""
    statement = (
        select(_TABLE)
        .where(_TABLE.c.submission_id == submission_id)
        .order_by(_TABLE.c.task, _TABLE.c.point)
    )
    return [dict(row) for row in session.execute(statement).mappings()]


def beat(session: Session, submission_id: int, points: list[tuple[int, int]], worker: str,
         now: datetime | None = None) -> int:
    """Write the heartbeat of ``points`` that ``worker`` is judging (unfinished rows it claimed); return
    how many rows were touched (0: another worker took them over, or they finished)."""
    if not points:
        return 0
    touched = 0
    for task, point in points:
        touched += session.execute(
            update(_TABLE)
            .where(_TABLE.c.submission_id == submission_id, _TABLE.c.task == task, _TABLE.c.point == point,
                   _TABLE.c.worker == worker, _TABLE.c.finished_at.is_(None))
            .values(heartbeat_at=now or utcnow())
        ).rowcount or 0
    return touched
