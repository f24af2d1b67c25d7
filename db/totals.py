"""Per-task scores and the total of a submission, computed from its result rows and stored once.

A task's score is `judger.scoring.task_score` (the mean of its points' scores times `weight / 100`, the
one place the formula is written); the total is the sum over the tasks (see judging.md). The weights and
point counts are the judger's and are passed in.

Call `finalize_submission` in its own transaction *after* the transaction that recorded a result
has committed (each worker does so after each point). The last worker to finish then sees every
row; an earlier one finds the submission incomplete and leaves it alone.

Public API: `finalize_submission`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from db.results import TestPointResult
from db.submissions import TASK_IDS, Submission
from judger.scoring import task_score as contest_task_score

TaskScore = Callable[[Sequence[float], float], float]


def _check_contest(weights: Mapping[int, float], points_per_task: Mapping[int, int]) -> None:
    if set(weights) != set(points_per_task):
        raise ValueError(f"weights {sorted(weights)} and point counts {sorted(points_per_task)} name different tasks")
    unknown = set(weights) - set(TASK_IDS)
    if unknown:
        raise ValueError(f"tasks {sorted(unknown)} have no score column; known tasks: {TASK_IDS}")
    if any(count < 1 for count in points_per_task.values()):
        raise ValueError(f"every task needs at least one test point: {dict(points_per_task)}")


def _finished_scores(session: Session, submission_id: int, generation: int = 0) -> dict[tuple[int, int], float]:
    """Map (task, point) -> score of the finished result rows of a submission's current generation."""
    rows = session.execute(
        select(TestPointResult.task, TestPointResult.point, TestPointResult.score).where(
            TestPointResult.submission_id == submission_id,
            TestPointResult.finished_at.is_not(None),
            TestPointResult.generation == generation,
        )
    )
    return {(task, point): score for task, point, score in rows}


def finalize_submission(
    session: Session,
    submission_id: int,
    weights: Mapping[int, float],
    points_per_task: Mapping[int, int],
    task_score: TaskScore = contest_task_score,
) -> dict[str, float | None] | None:
    """Compute and store `task1..task4` and `total` if every test point has finished; idempotent.

    Inputs: an open session (the caller commits); the submission's id; the contest's
    `{task: weight}` and `{task: number of points}` (the same task ids, a subset of 1..4; points
    are numbered from 0); `task_score(point_scores, weight)` (the contest's by default).
    Output: `{"task1": ..., "task4": ..., "total": ...}` as stored (None for a task not given), or
    None, storing nothing, while a point of the submission's current generation (see `db.rejudge`) is
    missing or unfinished; the previous generation's totals stay stored until then. Rows for points outside
    `points_per_task` are ignored.
    Raises `LookupError` if the submission does not exist; `ValueError` for inconsistent contest data.
    """
    _check_contest(weights, points_per_task)
    # Row lock on PostgreSQL (SQLite: the transaction already holds the write lock), so that two
    # finalizers of one submission run one after the other.
    submission = session.scalars(
        select(Submission).where(Submission.id == submission_id).with_for_update()
    ).one_or_none()
    if submission is None:
        raise LookupError(f"no submission with id {submission_id}")
    scores = _finished_scores(session, submission_id, submission.generation)
    totals: dict[str, float | None] = {f"task{task}": None for task in TASK_IDS}
    for task in sorted(weights):
        keys = [(task, point) for point in range(points_per_task[task])]
        if any(key not in scores for key in keys):
            return None
        totals[f"task{task}"] = task_score([scores[key] for key in keys], weights[task])
    # Summed in task order, so the float total is the same however the mappings were ordered.
    totals["total"] = sum(value for value in totals.values() if value is not None)
    for column, value in totals.items():
        setattr(submission, column, value)
    submission.scored_generation = submission.generation
    session.flush()
    return totals
