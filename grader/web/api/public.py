"""The public API (``/api/v1``, no token needed): the leaderboard and its top's progress, the contest's rules and clock, and the
rules as a contestant reads them (``/rules``: scoring, thresholds, limits).

With a token, ``/contest`` also tells the caller their remaining allowance.
"""
from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Request

from grader.service import contest, progress, rules_text, standings, submission_limits
from grader.service.accounts import Account
from grader.version import grader_version
from grader.web.http.auth import OPTIONAL_SECURITY, optional_account
from grader.web.http.error_responses import error_responses
from judger.tasks import TASKS

from .schemas import Contest, ContestantRules, Leaderboard, ScoreboardProgress

router = APIRouter(prefix="/api/v1", tags=["public"])


def task_info() -> dict:
    """``{task id: {"name", "weight"}}`` of the contest's tasks."""
    return {str(task_id): {"name": t.name, "weight": t.weight} for task_id, t in TASKS.items()}


@router.get("/leaderboard", response_model=Leaderboard, responses=error_responses(503))
def leaderboard(request: Request) -> dict:
    """Each user's best submission, best first (ties: the earlier). While the scoreboard is frozen, only
    submissions made before the freeze count."""
    return {**standings.public_leaderboard(request.app.state.service), "tasks": task_info()}


@router.get("/leaderboard/progress", response_model=ScoreboardProgress, responses=error_responses(503))
def leaderboard_progress(request: Request) -> dict:
    """The top 10 of the leaderboard and each one's best total over contest time (the scoreboard's graph;
    CSV: ``/scoreboard/progress.csv``). While frozen, only submissions made before the freeze count."""
    return progress.scoreboard_progress(request.app.state.service)


@router.get("/contest", response_model=Contest, responses=error_responses(401, 403, 503),
            openapi_extra=OPTIONAL_SECURITY)
def contest_info(request: Request, account: Account | None = Depends(optional_account)) -> dict:
    """The contest: name, window, freeze, limits, server time, the grader's version, and (with a token)
    the caller's remaining allowance."""
    service = request.app.state.service
    now = datetime.now(UTC)
    rules = contest.get_rules(service)
    plain = rules.to_dict()
    return {
        "name": rules.name, "starts_at": plain["starts_at"], "ends_at": plain["ends_at"],
        "freeze_at": plain["freeze_at"], "frozen": rules.frozen(now),
        "limits": {"min_interval_seconds": rules.min_interval_seconds, "max_per_hour": rules.max_per_hour,
                   "max_pending": rules.max_pending, "max_questions_per_hour": rules.max_questions_per_hour,
                   "max_bytes": service.settings.submission_max_bytes},
        "user": account.name if account else None,
        "allowance": submission_limits.allowance(service, account.id, now) if account else None,
        "server_time": now.isoformat(), "grader": grader_version(),
    }


@router.get("/rules", response_model=ContestantRules, responses=error_responses(503))
def rules(request: Request) -> dict:
    """How a point's score follows from its cycles, the task scores, the total and the ranking; every task
    and test point with its threshold; the contest's times and submission limits (null: no limit)."""
    return rules_text.contestant_rules(request.app.state.service)
