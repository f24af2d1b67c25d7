"""The organisers' page ``/admin`` (an admin account's session): the contestants' open questions (oldest
first, each with answer / answer to all / ignore), the announcement form, every submission, the queue
(points queued, running with worker and start time, stuck), the workers seen recently, and the rejudge
and freeze / unfreeze buttons (POST forms with the session's CSRF token, answered with a redirect back).

Workers are read from the result rows (the worker's name and start time stored with each claim, the
finish time with each result): a worker is "seen" when it claimed or finished a point in the last
``WORKERS_WINDOW``; a running point is "stuck" after ``stuck_after_seconds`` (the sweeper's setting).

After a button the page says what was done through ``/admin?notice=CODE[&id=N]``: ``CODE`` is one of
``NOTICES`` and ``N`` a submission id; the page shows the code's fixed message, never text from the
link (a crafted link cannot make the organisers' page say anything else). An unknown code shows nothing.
"""
from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from grader.refusals import Forbidden, NotFound, Refusal
from grader.service import contest, messages, queries
from grader.service.queries import WORKERS_WINDOW
from grader.web.http import cookie_session as session
from grader.web.http.csrf import check_csrf

from . import render as views
from .base import error_page, page, to_login
from .messages import announcement_view, question_view

router = APIRouter(prefix="/admin", include_in_schema=False)

# The notices the page can show, by code: the only texts a link to /admin can select ({id}: the link's
# submission id, an integer; {freeze}: the time of the freeze in force).
NOTICES = {
    "rejudged": "Submission {id} is queued for rejudging.",
    "no_submission": "There is no submission {id}; nothing was rejudged.",
    "frozen": "The scoreboard is frozen since {freeze}.",
    "unfrozen": "The scoreboard is unfrozen: it counts every submission again.",
    "answered": "Question {id} is answered, to its author only.",
    "answered_all": "Question {id} and its answer are published to everyone.",
    "ignored": "Question {id} is closed without an answer.",
    "no_question": "There is no question {id}; nothing was changed.",
    "announced": "The announcement is published.",
}


def _admin(request: Request):
    """The admin account of this session; a response (redirect to log in, 403 page) otherwise."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    if not account.is_admin:
        return error_page(request, 403, "Organisers only", "This page needs an organiser's account.", account)
    return account


def queue_view(service, now: datetime) -> dict:
    """``queries.grading_queue`` as display data: the running points with their start and age as text,
    and the stuck ones."""
    queue = queries.grading_queue(service, now)
    rows = [{**r, "started_at": r["started_at"] or "", "started_text": views.time_text(r["started_at"]),
             "age_text": views.duration_text(r["age_seconds"])} for r in queue["running"]]
    return {**queue, "running": rows, "stuck": [r for r in rows if r["stuck"]]}


def workers_view(service, now: datetime) -> list[dict]:
    """``queries.recent_workers`` as display data (last seen and age as text)."""
    return [{**w, "last_seen_text": views.time_text(w["last_seen"]), "age_text": views.duration_text(w["age_seconds"])}
            for w in queries.recent_workers(service, now, WORKERS_WINDOW)]


def notice_text(code: str | None, submission_id: int | None, rules) -> str | None:
    """The message of notice ``code`` (``NOTICES``), or None for no or an unknown code (or one that needs
    an id without it)."""
    template = NOTICES.get(code or "")
    if template is None or ("{id}" in template and submission_id is None):
        return None
    cutoff = rules.leaderboard_cutoff(datetime.now(UTC))
    freeze = views.time_text(cutoff) if cutoff else "\u2013"
    return template.format(id=submission_id, freeze=freeze)


@router.get("")
def admin_page(request: Request, notice: str | None = Query(None, max_length=1000),
               id: str | None = Query(None, max_length=12)) -> Response:
    account = _admin(request)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    now = datetime.now(UTC)
    rules = contest.get_rules(service)
    return page(request, "admin.html", account=account, rules=rules, banner=views.banner_view(rules, now),
                notice=notice_text(notice, int(id) if id and id.isdigit() else None, rules), queue=queue_view(service, now), workers=workers_view(service, now),
                workers_note=f"Workers that claimed or finished a test point in the last "
                             f"{views.duration_text(WORKERS_WINDOW.total_seconds())}, from the result rows.",
                submissions=[views.submission_row(r) for r in reversed(service.all_submissions())],
                **questions_context(service))


RECENT_QUESTIONS = 20


def questions_context(service) -> dict:
    """The messages part of the admin page: the open questions oldest first, the handled ones among the
    newest ``RECENT_QUESTIONS``, the announcements."""
    handled = [q for q in messages.all_questions(service, RECENT_QUESTIONS) if q["state"] != "open"]
    return {"open_questions": [question_view(q) for q in messages.open_questions(service)],
            "handled_questions": [question_view(q) for q in handled[:RECENT_QUESTIONS]],
            "announcements": [announcement_view(a) for a in messages.announcements(service)],
            "answer_max_chars": messages.ANSWER_MAX_CHARS}


def _checked(request: Request, csrf: str):
    account = _admin(request)
    if isinstance(account, Response):
        return account
    try:
        check_csrf(request, csrf)
    except Forbidden as exc:
        return error_page(request, 403, "Refused", exc.message, account)
    return account


def _back(code: str, submission_id: int | None = None) -> RedirectResponse:
    """Back to the admin page with the notice ``code`` (one of ``NOTICES``; ``submission_id``: the
    submission's or the question's id of its text)."""
    assert code in NOTICES
    query = f"notice={code}" + (f"&id={submission_id}" if submission_id is not None else "")
    return RedirectResponse(f"/admin?{query}", status_code=303)


@router.post("/rejudge")
async def rejudge(request: Request, id: int = Form(ge=1, le=2**31 - 1), csrf: str = Form("", max_length=128)):
    account = await run_in_threadpool(_checked, request, csrf)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    try:
        ids = await run_in_threadpool(service.rejudge, [id])
    except LookupError:
        return _back("no_submission", id)
    return _back("rejudged", ids[0])


@router.post("/freeze")
def freeze(request: Request, csrf: str = Form("", max_length=128)):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    contest.freeze_now(request.app.state.service)
    return _back("frozen")


@router.post("/unfreeze")
def unfreeze(request: Request, csrf: str = Form("", max_length=128)):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    contest.unfreeze(request.app.state.service)
    return _back("unfrozen")


QuestionId = Path(ge=1, le=2**31 - 1)


@router.post("/clarifications/{clarification_id}/answer")
def answer(request: Request, clarification_id: int = QuestionId, text: str = Form(""),
           public_text: str = Form(""), to: str = Form("author", max_length=8),
           csrf: str = Form("", max_length=128)):
    """Answer from the queue: ``to=author`` privately, ``to=all`` to everyone (with ``public_text``, when
    given, shown in place of the author's words). A bad text: the error page with the reason (400)."""
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    publish = to == "all"
    try:
        messages.answer(request.app.state.service, account, clarification_id, text, publish,
                        public_text.strip() or None)
    except NotFound:
        return _back("no_question", clarification_id)
    except Refusal as exc:
        return error_page(request, exc.status, "Not answered", exc.message[0].upper() + exc.message[1:] + ".",
                          account)
    return _back("answered_all" if publish else "answered", clarification_id)


@router.post("/clarifications/{clarification_id}/ignore")
def ignore(request: Request, clarification_id: int = QuestionId, csrf: str = Form("", max_length=128)):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    try:
        messages.ignore(request.app.state.service, account, clarification_id)
    except NotFound:
        return _back("no_question", clarification_id)
    return _back("ignored", clarification_id)


@router.post("/announce")
def announce(request: Request, text: str = Form(""), pinned: str = Form("", max_length=8),
             csrf: str = Form("", max_length=128)):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    try:
        messages.announce(request.app.state.service, account, text, pinned=bool(pinned))
    except Refusal as exc:
        return error_page(request, exc.status, "Not announced", exc.message[0].upper() + exc.message[1:] + ".",
                          account)
    return _back("announced")
