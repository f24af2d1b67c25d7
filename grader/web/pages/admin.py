"""The organisers' page ``/admin`` (an admin account's session): the contestants' open questions (oldest
first, each with answer / answer to all / ignore), the announcement form, every submission, the queue
(points queued, running with worker and start time, stuck), the workers seen recently, and the rejudge
and freeze / unfreeze buttons (POST forms with the session's CSRF token, answered with a redirect back).

Freeze, unfreeze and rejudge are confirmed first, without JavaScript: the button's POST (checked for its
CSRF token) changes nothing and answers the confirmation page (``confirm.html``: what will happen, and a
second form with the same fields, the token and ``confirm=yes``); only that second POST acts.

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


CONFIRMED = "yes"  # the value of the confirmation form's ``confirm`` field
Confirm = Form("", max_length=8)


def confirm_page(request: Request, account, *, heading: str, lines: list[str], action: str, button: str,
                 fields: tuple[tuple[str, str], ...] = (), listed: list[dict] = (), listed_more: int = 0,
                 cancel: str = "/admin") -> Response:
    """The confirmation step of a destructive button (nothing changed yet): ``lines`` say what will happen;
    the form posts ``fields`` again to ``action`` with the CSRF token and ``confirm=yes``. ``listed``: the
    submissions concerned (``submission_row`` data), ``listed_more`` how many more are not shown."""
    return page(request, "confirm.html", account=account, heading=heading, lines=lines, action=action,
                button=button, fields=fields, listed=listed, listed_more=listed_more, cancel=cancel)


@router.post("/rejudge")
async def rejudge(request: Request, id: int = Form(ge=1, le=2**31 - 1), csrf: str = Form("", max_length=128),
                  confirm: str = Confirm):
    account = await run_in_threadpool(_checked, request, csrf)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    if confirm != CONFIRMED:
        return await run_in_threadpool(_confirm_rejudge, request, account, id)
    try:
        ids = await run_in_threadpool(service.rejudge, [id])
    except LookupError:
        return _back("no_submission", id)
    return _back("rejudged", ids[0])


def _confirm_rejudge(request: Request, account, submission_id: int) -> Response:
    """The confirmation of one submission's rejudge (or back with ``no_submission``)."""
    try:
        state = request.app.state.service.status(submission_id)
    except LookupError:
        return _back("no_submission", submission_id)
    return confirm_page(request, account, heading=f"Rejudge submission {submission_id}", action="/admin/rejudge",
                        lines=[f"Submission {submission_id} of {state['user']} is graded again from scratch.",
                               f"Its current total ({views.score_text(state['total'])}) stays on the scoreboard "
                               f"until the new grading finishes."],
                        button=f"Rejudge submission {submission_id}", fields=(("id", str(submission_id)),))


@router.post("/freeze")
def freeze(request: Request, csrf: str = Form("", max_length=128), confirm: str = Confirm):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    if confirm != CONFIRMED:
        rules, now = contest.get_rules(service), datetime.now(UTC)
        return confirm_page(request, account, heading="Freeze the scoreboard now", action="/admin/freeze",
                            lines=[f"The public scoreboard counts only the submissions made before "
                                   f"{views.time_text(now)} (when you confirm), until you unfreeze it.",
                                   _schedule_line(rules, now),
                                   "Contestants keep seeing their own results in full."],
                            button="Freeze the scoreboard")
    contest.freeze_now(service)
    return _back("frozen")


@router.post("/unfreeze")
def unfreeze(request: Request, csrf: str = Form("", max_length=128), confirm: str = Confirm):
    account = _checked(request, csrf)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    if confirm != CONFIRMED:
        rules, now = contest.get_rules(service), datetime.now(UTC)
        return confirm_page(request, account, heading="Unfreeze the scoreboard", action="/admin/unfreeze",
                            lines=["The public scoreboard counts every submission again, at once: everyone "
                                   "sees the results hidden since the freeze.",
                                   _schedule_line(rules, now, unfreezing=True)],
                            button="Unfreeze the scoreboard")
    contest.unfreeze(service)
    return _back("unfrozen")


def _schedule_line(rules, now: datetime, unfreezing: bool = False) -> str:
    """What a freeze (or an unfreeze) now does to the scheduled freeze, in words."""
    if rules.freeze_at is None:
        return "No freeze is scheduled."
    when = views.time_text(rules.freeze_at)
    if now < rules.freeze_at:
        return f"The scheduled freeze at {when} stays: it still comes at its time."
    if unfreezing:
        return f"The scheduled freeze (since {when}) is lifted too."
    return f"The scheduled freeze time ({when}) stays as it is."


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
