"""Totals of a submission's results (spec judging.md, "Totals"): per task and over the contest, with the
formulas of ``judger.scoring``. Plain data, no torch (``kdt-grade local`` sums its results without importing it)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from . import scoring
from .tasks import POINTS_PER_TASK, TASKS, get_task

if TYPE_CHECKING:
    from .verdicts import PointResult


def task_totals(results: Iterable[PointResult]) -> dict[int, float]:
    """``{task id: task score}`` for every task that has results, in task order (``scoring.task_score``).

    Each such task needs exactly one result per test point, else ``ValueError``.
    """
    by_task: dict[int, dict[int, float]] = {}
    for r in results:
        points = by_task.setdefault(r.task, {})
        if r.point in points:
            raise ValueError(f"two results for task {r.task} point {r.point}")
        points[r.point] = r.score
    totals = {}
    for task_id in sorted(by_task):
        task = get_task(task_id)
        want = set(range(POINTS_PER_TASK[task_id]))
        if set(by_task[task_id]) != want:
            raise ValueError(f"task {task_id} needs results for points {sorted(want)}, got "
                             f"{sorted(by_task[task_id])}")
        totals[task_id] = scoring.task_score([by_task[task_id][i] for i in sorted(want)], task.weight)
    return totals


def summarize(results: Iterable[PointResult]) -> dict:
    """``{"tasks": {id: {"name", "weight", "score"}}, "total": float}`` for complete tasks' results."""
    totals = task_totals(results)
    return {"tasks": {t: {"name": TASKS[t].name, "weight": TASKS[t].weight, "score": s} for t, s in totals.items()},
            "total": scoring.total(totals.values())}
