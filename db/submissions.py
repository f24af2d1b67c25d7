"""The Submission aggregate: one uploaded Python file and its stored scores.

What is stored and what is derived (CMS style: nothing is stored twice):

- Stored: who submitted what and when (`user_id`, `file_name`, `sha256`, `source`, `created`), and the
  per-task scores `task1`..`task4` and `total`. The scores are derivable from the test point results,
  but they are written once by `db.totals.finalize_submission` when the last point finishes, because
  the leaderboard sorts and filters by them and needs them indexed. They stay NULL until then.
- Derived, never stored: the status (queued / running / done / failed); see `db.status`.

Public API: `Submission`, `create_submission(...) -> dict`, `get_submission(...) -> dict | None`.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Integer, String, Text, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from db.base import Base, UTCDateTime, utcnow

SHA256_HEX_LENGTH = 64
FILE_NAME_MAX_LENGTH = 255
# The fixed per-task score columns; the tasks' weights and point counts belong to the judger.
TASK_IDS = (1, 2, 3, 4)
SCORE_COLUMNS = tuple(f"task{task}" for task in TASK_IDS) + ("total",)


class Submission(Base):
    """One submitted file. Scores are NULL until `db.totals.finalize_submission` stores them."""

    __tablename__ = "submissions"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    file_name: Mapped[str] = mapped_column(String(FILE_NAME_MAX_LENGTH))
    sha256: Mapped[str] = mapped_column(String(SHA256_HEX_LENGTH), index=True)
    source: Mapped[str] = mapped_column(Text)
    created: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    task1: Mapped[float | None] = mapped_column(Float)
    task2: Mapped[float | None] = mapped_column(Float)
    task3: Mapped[float | None] = mapped_column(Float)
    task4: Mapped[float | None] = mapped_column(Float)
    # Indexed: the leaderboard ranks by it.
    total: Mapped[float | None] = mapped_column(Float, index=True)
    # Each rejudge starts a new generation; the stored scores belong to `scored_generation`, so the old
    # totals stay on the leaderboard until the new ones land (`db.rejudge`, `db.totals`).
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    scored_generation: Mapped[int | None] = mapped_column(Integer)
    # A rejudge with ``--fresh`` names its generation here: that generation simulates every point again
    # instead of copying reusable results (``db.reuse``) or another submission's compile.
    fresh_generation: Mapped[int | None] = mapped_column(Integer)

    def to_dict(self, include_source: bool = False) -> dict[str, Any]:
        """Return the row as plain data; `source` only if `include_source` (it can be large)."""
        data: dict[str, Any] = {
            "id": self.id,
            "user_id": self.user_id,
            "file_name": self.file_name,
            "sha256": self.sha256,
            "created": self.created,
            "generation": self.generation,
        }
        data.update({column: getattr(self, column) for column in SCORE_COLUMNS})
        if include_source:
            data["source"] = self.source
        return data


def create_submission(
    session: Session,
    user_id: int,
    file_name: str,
    sha256: str,
    source: str,
    created: datetime | None = None,
) -> dict[str, Any]:
    """Insert a submission and return `Submission.to_dict()` of it (with its new `id`).

    Inputs: an open session (the caller commits, and enqueues grading only after the commit), the
    owner's id, the uploaded file's name, the hex SHA-256 of its bytes, its text, and optionally the
    aware creation time (default: now, UTC).
    Raises `ValueError` for a malformed sha256 or file name; `sqlalchemy.exc.IntegrityError` (at
    flush) if the user does not exist.
    """
    if len(sha256) != SHA256_HEX_LENGTH or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"sha256 must be 64 lowercase hex digits, got {sha256!r}")
    if not file_name or len(file_name) > FILE_NAME_MAX_LENGTH:
        raise ValueError(f"file name must have 1..{FILE_NAME_MAX_LENGTH} characters, got {file_name!r}")
    submission = Submission(
        user_id=user_id, file_name=file_name, sha256=sha256, source=source, created=created or utcnow()
    )
    session.add(submission)
    session.flush()
    return submission.to_dict()


def is_fresh(session: Session, submission_id: int) -> bool:
    """Whether the submission's current generation is a fresh rejudge's (``fresh_generation``): it reuses
    no result and no compile."""
    row = session.execute(select(Submission.generation, Submission.fresh_generation)
                          .where(Submission.id == submission_id)).one_or_none()
    return row is not None and row.fresh_generation == row.generation


def get_submission(session: Session, submission_id: int, include_source: bool = False) -> dict[str, Any] | None:
    """Return `Submission.to_dict(include_source)` of submission `submission_id`, or None if missing."""
    submission = session.get(Submission, submission_id)
    return None if submission is None else submission.to_dict(include_source=include_source)
