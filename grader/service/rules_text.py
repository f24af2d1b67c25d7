"""The contest's rules as a contestant reads them: how a test point's score follows from its cycles, how
the task scores, the total and the leaderboard follow from the points, every task and test point with
its threshold, the contest's times and submission limits, and a worked example.

One document (``contestant_rules``) for the ``/rules`` page, ``GET /api/v1/rules`` and ``kdt-grade rules``,
so the three say the same words and numbers. The numbers come from where they are defined: the formula
and its inverse from ``judger.scoring``, the tasks, thresholds, tolerances, trials and
time limit from ``judger.tasks``, the verdicts from ``judger.verdicts``, the times and
limits from ``grader.service.contest``; the sentences about ranking restate ``db.leaderboard``'s order.

``cycles_needed`` is the per-point "how many cycles for a better score" of the status document
(``grader.service.queries``) and of ``kdt-grade local``.

Public API: ``SCORE_LEVELS``, ``EXAMPLE``, ``cycles_needed``, ``point_cycles_for``, ``correctness_text``,
``verdict_lines``, ``contestant_rules``.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from grader.display import utc_text
from judger.scoring import cycles_for_score, point_score
from judger.tasks import COS_DIFF_TOL, TASKS, TIMEOUT_S, TRIALS, get_point
from judger.verdicts import Verdict
from kdt.utils.allclose import REL_EPS

from . import contest
from .database import Database

STEP = 10
"""The "for +10" of a graded point: the cycles for this many more points of score (100 at most)."""

SCORE_LEVELS = (90, 75, 50, 25)
"""The scores the rules' table gives the cycles for, per test point (besides 100: the threshold)."""

EXAMPLE = {"task": 1, "point": 1, "ratio": 1.25}
"""The worked example: the test point whose threshold T it uses, run at ``ratio`` * T cycles."""

FORMULA = "score = 100 if cycles <= T, else 10 + 90 * (T / cycles) ** 4"

SCORING = {
    "point": (f"A correct test point (verdict AC) with threshold T scores 100 if its cycles are at most T, else "
              f"10 + 90 * (T / cycles)^4: between 10 and 100, and twice T's cycles score 10 + 90/16 = 15.625. "
              f"Any other verdict ({', '.join(v.value for v in Verdict if v not in (Verdict.AC, Verdict.IE))}) "
              f"scores 0."),
    "trials": (f"Each test point runs {TRIALS} trials, each on different random inputs (the same inputs for "
               f"every submission); it is AC only if every trial's output is correct. Its cycles are the same "
               f"in every trial: timing never depends on the data."),
    "time_limit": (f"Time limit: {TIMEOUT_S:g} s of CPU time per kernel launch (one trial) on the judge's "
                   f"machine, however busy it is; a launch that uses more is TLE. (The contest's local judger, "
                   f"judger/judger.py, counts wall-clock time.)"),
    "task": "A task's score is the mean of its test points' scores times its weight / 100.",
    "total": "The total is the sum of the four task scores: 100 at most.",
    "leaderboard": ("On the leaderboard each contestant has one row: their best whole submission, by its "
                    "total. Task scores of different submissions are never combined: a row shows the task "
                    "scores of that one submission. Only graded submissions count (one still being graded "
                    "does not, even if it will score more); organisers' accounts are not ranked."),
    "ties": ("Higher totals rank first. Equal totals rank by the earlier submission first (the order in "
             "which the server stored them, its submission id), and every row has its own rank; among "
             "one contestant's own submissions with the same total, the earliest is the one that counts."),
    "freeze": ("From the freeze time on, the public leaderboard counts only submissions made before it, "
               "until the organisers lift the freeze; your own results are always shown to you in full."),
    "thresholds": ("The thresholds are the contest handout's, unchanged. Task 1 point 0's 1,919,810 cycles "
                   "is as generous as it looks: every correct kernel below it scores 100 there."),
}


def _tolerances(task) -> dict[str, float]:
    abs_tol, rel_tol = task.tolerances
    return {"abs": abs_tol, "rel": rel_tol, "cos_diff": COS_DIFF_TOL}


def _tolerance_groups() -> list[tuple[list[int], dict[str, float]]]:
    """The tasks grouped by equal tolerances, in task order: ``[([task ids], tolerances)]``."""
    groups: list[tuple[list[int], dict[str, float]]] = []
    for task in TASKS.values():
        tol = _tolerances(task)
        same = next((ids for ids, other in groups if other == tol), None)
        if same is None:
            groups.append(([task.id], tol))
        else:
            same.append(task.id)
    return groups


def _task_ids_text(ids: list[int]) -> str:
    if len(ids) == 1:
        return f"task {ids[0]}"
    return f"tasks {', '.join(map(str, ids[:-1]))} and {ids[-1]}"


def correctness_text() -> str:
    """When a trial's output is correct, with every task's tolerances as the judge
    (``judger.grading.judge_compiled`` through ``kdt.utils.check_is_allclose``) applies them."""
    per_task = "; ".join(f"{_task_ids_text(ids)}: abs_tol {tol['abs']:g}, rel_tol {tol['rel']:g}"
                         for ids, tol in _tolerance_groups())
    cos = COS_DIFF_TOL
    return (f"A trial's output is correct when it has the reference's shape and dtype, inf and nan in the same "
            f"places, every element (all of them: a 100% pass rate) has an absolute error |out - ref| below "
            f"abs_tol or a relative error |out - ref| / (|ref| + {REL_EPS:g}) below rel_tol, and the cosine "
            f"difference 1 - 2 * sum(out * ref) / sum(out^2 + ref^2) is at most {cos:g}. Tolerances: {per_task}.")


def verdict_lines() -> list[dict[str, str]]:
    """Every verdict in one line each, from ``judger.verdicts``: ``[{"verdict", "description", "text"}]``."""
    return [{"verdict": v.value, "description": v.description,
             "text": f"{v.value} ({v.description}): {v.explanation}."} for v in Verdict]


def _step_target(score: float) -> float:
    return min(100.0, score + STEP)


def cycles_needed(task_id: int, index: int, verdict: str | None, score: float | None) -> dict[str, int | None]:
    """The cycles a test point needs: ``{"cycles_for_100": its threshold, "cycles_for_plus_10": the most
    cycles that score at least 10 points more than ``score`` (100 at most)}``. The second is None unless
    the point is AC with a score below 100 (a point that is not AC needs to be correct first). Raises
    ``KeyError`` for a test point the contest does not have."""
    threshold = get_point(task_id, index).threshold
    plus = None
    if verdict == "AC" and score is not None and score < 100:
        plus = cycles_for_score(_step_target(score), threshold)
    return {"cycles_for_100": threshold, "cycles_for_plus_10": plus}


def point_cycles_for(threshold: int) -> dict[str, int]:
    """``{str(score): the most cycles that score at least it}`` for each of ``SCORE_LEVELS``."""
    return {str(level): cycles_for_score(level, threshold) for level in SCORE_LEVELS}


def _args_text(args: dict[str, int]) -> str:
    return ", ".join(f"{name} = {value}" for name, value in args.items())


def _tasks() -> list[dict[str, Any]]:
    return [{"id": t.id, "name": t.name, "weight": t.weight, "num_sms": t.tpu["num_sms"],
             "load_store_latency": t.tpu["load_store_latency"], "spm_size": t.tpu["spm_size"],
             "tolerances": _tolerances(t),
             "points": [{"index": p.index, "args": dict(p.task_args), "args_text": _args_text(p.task_args),
                         "threshold": p.threshold, "cycles_for": point_cycles_for(p.threshold)}
                        for p in t.points]}
            for t in TASKS.values()]


def example() -> dict[str, Any]:
    """The worked example: ``{"task", "point", "threshold", "cycles", "ratio", "score", "text"}``, the
    score being ``point_score(cycles, threshold)`` itself."""
    threshold = get_point(EXAMPLE["task"], EXAMPLE["point"]).threshold
    ratio = EXAMPLE["ratio"]
    cycles = round(threshold * ratio)
    score = point_score(cycles, threshold)
    text = (f"Task {EXAMPLE['task']} point {EXAMPLE['point']} has T = {threshold:,}. A correct kernel taking "
            f"{cycles:,} cycles ({ratio:g} T) scores 10 + 90 * ({threshold} / {cycles})^4 = 10 + 90 / "
            f"{ratio:g}^4 = {score:.2f}; task {EXAMPLE['task']} (weight {TASKS[EXAMPLE['task']].weight}) with "
            f"its other point at 100 scores ({score:.2f} + 100) / 2 * {TASKS[EXAMPLE['task']].weight} / 100 = "
            f"{(score + 100) / 2 * TASKS[EXAMPLE['task']].weight / 100:.2f}. For {_step_target(score):.2f} "
            f"(+{STEP}) it needs at most {cycles_for_score(_step_target(score), threshold):,} cycles.")
    return {"task": EXAMPLE["task"], "point": EXAMPLE["point"], "threshold": threshold, "cycles": cycles,
            "ratio": ratio, "score": score, "text": text}


def _when(value: datetime | None, unset: str) -> str:
    return unset if value is None else utc_text(value)


def _count(value: int | float | None, unit: str) -> str:
    return "no limit" if value is None else f"{value:g} {unit}"


def _lines(rules: contest.Rules, max_bytes: int, now: datetime) -> list[dict[str, str]]:
    """The window, the freeze and the limits in words (an unset one: "no limit" or what it means)."""
    freeze = _when(rules.freeze_at, "none: the leaderboard is never frozen")
    cutoff = rules.leaderboard_cutoff(now)
    if cutoff is not None and cutoff != rules.freeze_at:  # frozen by hand (before or without a schedule)
        freeze = f"{_when(rules.freeze_at, 'none scheduled')}; frozen by the organisers since {_when(cutoff, '')}"
    elif cutoff is not None:
        freeze += " (frozen now)"
    elif rules.freeze_at is not None and rules.unfrozen:
        freeze += " (lifted)"
    interval = rules.min_interval_seconds or None  # 0 is no limit, as in the check
    rows = [("starts_at", "Start", _when(rules.starts_at, "none: open now")),
            ("ends_at", "End", _when(rules.ends_at, "none: no end")),
            ("freeze_at", "Leaderboard freeze", freeze),
            ("min_interval_seconds", "Time between two of your submissions", _count(interval, "s at least")),
            ("max_per_hour", "Your submissions in any hour", _count(rules.max_per_hour, "at most")),
            ("max_pending", "Your submissions waiting to be graded", _count(rules.max_pending, "at most")),
            ("max_questions_per_hour", "Your questions in any hour", _count(rules.max_questions_per_hour,
                                                                                "at most")),
            ("max_bytes", "Size of a submitted file", f"{max_bytes:,} bytes at most")]
    return [{"key": key, "label": label, "text": text} for key, label, text in rows]


def contestant_rules(database: Database, now: datetime | None = None) -> dict[str, Any]:
    """The rules document: ``{"contest": {"name", "starts_at", "ends_at", "freeze_at" (ISO or None),
    "frozen", "limits": {"min_interval_seconds", "max_per_hour", "max_pending", "max_questions_per_hour"
    (None: no limit), "max_bytes"}}, "lines": [{"key", "label", "text"}], "formula", "scoring": {"point",
    "trials", "time_limit", "correct", "task", "total", "leaderboard", "ties", "freeze", "thresholds"},
    "verdicts": [{"verdict", "description", "text"}], "score_levels", "step", "example",
    "tasks": [{"id", "name", "weight", "num_sms", "load_store_latency", "spm_size" (bytes), "tolerances":
    {"abs", "rel", "cos_diff"}, "points":
    [{"index", "args", "args_text", "threshold", "cycles_for": {score: cycles}}]}]}``, read now from the
    database (``contest.get_rules``) and the judger."""
    now = now or datetime.now(UTC)
    rules = contest.get_rules(database)
    plain = rules.to_dict()
    max_bytes = database.settings.submission_max_bytes
    return {
        "contest": {"name": rules.name, "starts_at": plain["starts_at"], "ends_at": plain["ends_at"],
                    "freeze_at": plain["freeze_at"], "frozen": rules.frozen(now),
                    "limits": {"min_interval_seconds": rules.min_interval_seconds, "max_per_hour": rules.max_per_hour,
                               "max_pending": rules.max_pending,
                               "max_questions_per_hour": rules.max_questions_per_hour, "max_bytes": max_bytes}},
        "lines": _lines(rules, max_bytes, now),
        "formula": FORMULA, "scoring": {**SCORING, "correct": correctness_text()}, "verdicts": verdict_lines(),
        "score_levels": list(SCORE_LEVELS), "step": STEP,
        "example": example(), "tasks": _tasks(),
    }
