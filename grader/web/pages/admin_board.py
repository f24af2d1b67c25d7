"""The jury's scoreboard ``/admin/scoreboard`` (an admin account's session): every submission counts, the
freeze ignored, each row beside the same user's place on the public board (what the freeze hides is
marked); and ``/admin/scoreboard.csv``, the final standings as CSV in the format of ``kdt-grade
leaderboard --csv`` (``grader.service.export``, one source)."""
from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import Response

from grader.service import contest, export, standings
from judger.tasks import TASKS

from . import render as views
from .admin import organiser_account
from .base import csv_download, page

router = APIRouter(prefix="/admin", include_in_schema=False)


def jury_rows(board: dict) -> list[dict]:
    """``standings.jury_leaderboard`` rows as display data; ``hidden``: the public board shows this user
    otherwise (another rank or total, or not at all)."""
    return [{"user": r["user_name"], "display_name": r["display_name"] or "", "rank": r["rank"],
             "submission_id": r["submission_id"], "tasks": [views.score_text(r[f"task{t}"]) for t in TASKS],
             "bands": views.task_bands(r),
             "total": views.score_text(r["total"]), "created": r["created"],
             "created_text": views.time_text(r["created"]), "public": _public_text(r),
             "hidden": (r["public_rank"], r["public_total"]) != (r["rank"], r["total"])}
            for r in board["rows"]]


def _public_text(row: dict) -> str:
    """The user's place on the public board: ``#2, 0.00`` or ``not shown``."""
    if row["public_rank"] is None:
        return "not shown"
    return f"#{row['public_rank']}, {views.score_text(row['public_total'])}"


@router.get("/scoreboard")
def jury_scoreboard(request: Request) -> Response:
    account = organiser_account(request)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    now = datetime.now(UTC)
    board = standings.jury_leaderboard(service, now)
    rules = contest.get_rules(service)
    rows = jury_rows(board)
    return page(request, "jury.html", account=account, rules=rules, banner=views.banner_view(rules, now),
                rows=rows, frozen=board["frozen"], hidden=sum(r["hidden"] for r in rows))


@router.get("/scoreboard.csv")
def standings_csv(request: Request) -> Response:
    account = organiser_account(request)
    if isinstance(account, Response):
        return account
    return csv_download(export.standings_csv(request.app.state.service), "standings")
