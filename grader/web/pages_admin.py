"""The organisers' page ``/admin`` (an admin account's session): every submission, the queue (points
queued, running with worker and start time, stuck), the workers seen recently, and the rejudge and
freeze / unfreeze buttons (POST forms with the session's CSRF token, answered with a redirect back).

Workers are read from the result rows (the worker's name and start time stored with each claim, the
finish time with each result): a worker is "seen" when it claimed or finished a point in the last
``WORKERS_WINDOW``; a running point is "stuck" after ``stuck_after_seconds`` (the sweeper's setting).
"""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import quote

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

import db
from db.activity import recent_workers, running_points
from grader import contest
from grader.refusals import Forbidden
from judger.tasks import POINTS_PER_TASK

from . import pages_render as views
from . import session
from .pages import error_page, page, to_login

router = APIRouter(prefix="/admin", include_in_schema=False)

WORKERS_WINDOW = timedelta(hours=1)
MAX_NOTICE = 300


def _admin(request: Request):
    """The admin account of this session; a response (redirect to log in, 403 page) otherwise."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    if not account.is_admin:
        return error_page(request, 403, "Organisers only", "This page needs an organiser's account.", account)
    return account


def queue_view(service, now: datetime) -> dict:
    """Points queued (no claim yet), running (worker, start, attempts) and stuck."""
    stuck_after = service.settings.stuck_after_seconds
    with service.session() as session_:
        pending = db.pending_points(session_, timedelta(0), POINTS_PER_TASK, now=now)
        running = running_points(session_)
    queued = sum(1 for p in pending if p["reason"] == "missing")
    rows = []
    for r in running:
        age = (now - r["started_at"]).total_seconds() if r["started_at"] else 0.0
        rows.append({**r, "started_at": r["started_at"].isoformat() if r["started_at"] else "",
                     "started_text": views.time_text(r["started_at"]), "age_text": views.duration_text(age),
                     "stuck": age > stuck_after})
    return {"queued": queued, "running": rows, "stuck": [r for r in rows if r["stuck"]], "stuck_after": stuck_after}


def workers_view(service, now: datetime) -> list[dict]:
    with service.session() as session_:
        workers = recent_workers(session_, now - WORKERS_WINDOW)
    return [{"name": w["worker"], "last_seen": w["last_seen"].isoformat(), "last_seen_text": views.time_text(w["last_seen"]),
             "age_text": views.duration_text((now - w["last_seen"]).total_seconds()), "graded": w["graded"],
             "running": w["running"]} for w in workers]


@router.get("")
def admin_page(request: Request, notice: str | None = Query(None, max_length=MAX_NOTICE)) -> Response:
    account = _admin(request)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    now = datetime.now(UTC)
    rules = contest.get_rules(service)
    return page(request, "admin.html", account=account, rules=rules, banner=views.banner_view(rules, now),
                notice=notice, queue=queue_view(service, now), workers=workers_view(service, now),
                workers_note=f"Workers that claimed or finished a test point in the last "
                             f"{views.duration_text(WORKERS_WINDOW.total_seconds())}, from the result rows.",
                submissions=[views.submission_row(r) for r in reversed(service.all_submissions())])


def _checked(request: Request, csrf: str):
    account = _admin(request)
    if isinstance(account, Response):
        return account
    try:
        session.check_csrf(request, csrf)
    except Forbidden as exc:
        return error_page(request, 403, "Refused", exc.message, account)
    return account


def _back(notice: str) -> RedirectResponse:
    return RedirectResponse(f"/admin?notice={quote(notice[:MAX_NOTICE])}", status_code=303)


@router.post("/rejudge")
async def rejudge(request: Request, id: int = Form(ge=1, le=2**31 - 1), csrf: str = Form("", max_length=128)):
    account = await run_in_threadpool(_checked, request, csrf)
    if isinstance(account, Response):
        return account
    service, dispatcher = request.app.state.service, request.app.state.dispatcher
    try:
        ids = await run_in_threadpool(service.rejudge, [id], None, False, None, dispatcher.dispatch)
    except LookupError:
        return _back(f"There is no submission {id}; nothing was rejudged.")
    return _back(f"Submission {ids[0]} is queued for rejudging.")


@router.post("/freeze")
def freeze(request: Request, csrf: str = Form("", max_length=128)):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    rules = contest.set_rules(request.app.state.service, freeze_at=datetime.now(UTC))
    return _back(f"The scoreboard is frozen since {views.time_text(rules.freeze_at)}.")


@router.post("/unfreeze")
def unfreeze(request: Request, csrf: str = Form("", max_length=128)):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    contest.unfreeze(request.app.state.service)
    return _back("The scoreboard is unfrozen: it counts every submission again.")
