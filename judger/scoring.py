"""The contest's scoring formulas (spec judging.md, "One test point" step 4 and "Totals").

This module is the only place where scores are computed: the local judger, the grading service and the
database layer (``db.totals.finalize_submission(..., task_score=task_score)``) all call these functions.
The expressions are written exactly as in the spec so that the floats are bit-for-bit the same
everywhere.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

MXM_PEAK_PER_SM = 2048
"""Multiply-accumulates per cycle of one SM's MXM in the utilisation formula (the default ``mxm_trpt``)."""


def point_score(cycles: int, threshold: int) -> float:
    """Score of a correct test point: ``100`` if ``cycles <= threshold``, else
    ``10 + 90 * (threshold / cycles) ** 4``. Raises ``ValueError`` unless ``cycles`` is an int ``>= 0``
    and ``threshold`` an int ``>= 1``.
    """
    if type(cycles) is not int or cycles < 0:
        raise ValueError(f"cycles must be a non-negative int, got {cycles!r}")
    if type(threshold) is not int or threshold < 1:
        raise ValueError(f"threshold must be a positive int, got {threshold!r}")
    if cycles <= threshold:
        return 100.0
    return 10 + 90 * (threshold / cycles) ** 4


def task_score(point_scores: Sequence[float], weight: float) -> float:
    """A task's score: the mean of its test points' scores times ``weight / 100``.

    The database layer stores exactly this (``db.totals.finalize_submission``); raises ``ValueError`` when
    empty.
    """
    if not point_scores:
        raise ValueError("a task needs at least one test point score")
    return sum(point_scores) / len(point_scores) * weight / 100


def total(task_scores: Iterable[float]) -> float:
    """The submission's total: the sum of its task scores (pass them in task order for a stable float)."""
    return sum(task_scores)


def mxm_utilisation(work: int, cycles: int, num_sms: int) -> float:
    """Fraction of the MXM peak: ``(work / cycles) / (2048 * num_sms)``; ``work`` is ``M*N*K`` (tasks 2,
    3) or ``S_qo * S_kv * 2 * D`` (task 4), see ``judger.tasks.Task.mxm_work``."""
    if cycles < 1:
        raise ValueError(f"cycles must be positive, got {cycles!r}")
    return (work / cycles) / (MXM_PEAK_PER_SM * num_sms)


def cycles_for_score(score: float, threshold: int) -> int | None:
    """The most cycles at which a correct point still scores at least ``score`` under ``threshold`` (the
    inverse of ``point_score``, exact for its floats): ``threshold`` for 100, None for 10 or less (every
    correct point scores more than 10). Raises ``ValueError`` for a score above 100 or a bad threshold."""
    if type(threshold) is not int or threshold < 1:
        raise ValueError(f"threshold must be a positive int, got {threshold!r}")
    if not score <= 100:
        raise ValueError(f"a point scores at most 100, got {score!r}")
    if score <= 10:
        return None
    if score == 100:
        return threshold
    cycles = int(threshold * (90 / (score - 10)) ** 0.25)
    while point_score(cycles + 1, threshold) >= score:
        cycles += 1
    while point_score(cycles, threshold) < score:
        cycles -= 1
    return cycles
