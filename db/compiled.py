"""The CompiledPoint aggregate: a submission's *compiled point* per test point, between compile and judge.

The grading service compiles a submission once, in a sandbox, for all its test points
(`grader.judging.pipeline.prepare`), and judges each point separately, possibly on another machine. What passes
between the two steps is plain data, a compiled point: `{"ir": <IR JSON>, "compile_s": ...}` or
`{"verdict": "CE"|"SV"|"IE", "message": ..., "compile_s": ...}`. It is stored here as JSON text, one row
per (submission, task, point); this module does not look inside it.

Rows are written with one `INSERT ... ON CONFLICT DO UPDATE` per point (a re-run compile overwrites), and
go with their submission (`ON DELETE CASCADE`). A rejudge deletes them (`delete_compiled`) so the file is
compiled again.

An identical file compiles to the same points: `compiled_of_source` finds another submission's compiled
points for a file's sha256, so the compile is not run again.

Public API: `CompiledPoint`, `store_compiled`, `get_compiled`, `compiled_points`, `delete_compiled`,
`compiled_of_source`.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import ForeignKey, Integer, Text, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base
from db.dialects import upsert_insert
from db.submissions import Submission


class CompiledPoint(Base):
    """The compiled point of one test point of one submission (`payload`: JSON text)."""

    __tablename__ = "compiled_points"
    __table_args__ = (UniqueConstraint("submission_id", "task", "point"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    task: Mapped[int] = mapped_column(Integer)
    point: Mapped[int] = mapped_column(Integer)
    payload: Mapped[str] = mapped_column(Text)


_TABLE = CompiledPoint.__table__


def store_compiled(session: Session, submission_id: int, points: Mapping[tuple[int, int], dict[str, Any]]) -> int:
    """Insert or replace the compiled points `{(task, point): compiled point}` of a submission.

    Inputs: an open session (the caller commits), the submission's id, and JSON-able dicts.
    Output: the number of points written. Raises `TypeError` for data JSON cannot encode;
    `sqlalchemy.exc.IntegrityError` if the submission does not exist.
    """
    for (task, point), compiled in sorted(points.items()):
        insert = upsert_insert(session, _TABLE).values(
            submission_id=submission_id, task=task, point=point, payload=json.dumps(compiled)
        )
        session.execute(
            insert.on_conflict_do_update(
                index_elements=["submission_id", "task", "point"], set_={"payload": insert.excluded.payload}
            )
        )
    return len(points)


def get_compiled(session: Session, submission_id: int, task: int, point: int) -> dict[str, Any] | None:
    """Return the compiled point of one test point, or None if it was not stored (yet)."""
    payload = session.scalars(
        select(_TABLE.c.payload).where(
            _TABLE.c.submission_id == submission_id, _TABLE.c.task == task, _TABLE.c.point == point
        )
    ).one_or_none()
    return None if payload is None else json.loads(payload)


def compiled_points(session: Session, submission_id: int) -> set[tuple[int, int]]:
    """Return the (task, point) keys that have a stored compiled point (payloads are not loaded)."""
    rows = session.execute(
        select(_TABLE.c.task, _TABLE.c.point).where(_TABLE.c.submission_id == submission_id)
    )
    return {(task, point) for task, point in rows}


def delete_compiled(session: Session, submission_id: int) -> int:
    """Delete every compiled point of a submission; return how many rows went."""
    return session.execute(delete(_TABLE).where(_TABLE.c.submission_id == submission_id)).rowcount or 0


def compiled_of_source(session: Session, sha256: str, points, judge: str, exclude_id: int,
                       candidates: int = 5) -> dict[tuple[int, int], dict[str, Any]] | None:
    """The compiled points `{(task, point): compiled point}` of the newest other submission (not
    `exclude_id`; among the `candidates` newest) with this `sha256` that has every one of `points`
    compiled by judge version `judge` (its payloads' `"judge"`), none of them `IE` or fresh; else None."""
    ids = select(Submission.id).where(Submission.sha256 == sha256, Submission.id != exclude_id) \
        .order_by(Submission.id.desc()).limit(candidates)
    rows = session.execute(select(_TABLE.c.submission_id, _TABLE.c.task, _TABLE.c.point, _TABLE.c.payload)
                           .where(_TABLE.c.submission_id.in_(ids)))
    found: dict[int, dict] = {}
    for submission_id, task, point, payload in rows:
        found.setdefault(submission_id, {})[(task, point)] = json.loads(payload)
    for submission_id in sorted(found, reverse=True):
        got = found[submission_id]
        if all(p in got and got[p].get("judge") == judge and got[p].get("verdict") != "IE"
               and not got[p].get("fresh") for p in points):
            return {p: dict(got[p]) for p in points}
    return None
