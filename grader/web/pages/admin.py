"""The organisers' page ``/admin`` (an admin account's session): the contestants' open questions (oldest
first, each with answer / answer to all / ignore), the announcement form, every submission, the queue
(points queued, running with worker and start time, stuck), its last hour (the queue's length, the
grading rate and the verdicts: ``plots.queue_chart``, ``plots.graded_chart``, ``/admin/activity.csv``), the
workers seen recently, and the rejudge
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

import re
from datetime import UTC, datetime
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from grader.refusals import BadRequest, Forbidden, NotFound, Refusal
from grader.service import accounts, contest, glance, messages, progress, queries, search
from grader.service.queries import WORKERS_WINDOW
from grader.web.http import cookie_session as session
from grader.web.http.csrf import check_csrf

from . import plots, render as views
from .base import csv_download, error_page, page, to_login
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


def organiser_account(request: Request):
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


FILTERS = ("user", "verdict", "task", "since", "until")  # the submissions list's filters (search.parse_query)


@router.get("")
def admin_page(request: Request, notice: str | None = Query(None, max_length=1000),
               id: str | None = Query(None, max_length=12), user: str | None = None, verdict: str | None = None,
               task: str | None = None, since: str | None = None, until: str | None = None,
               page_number: str | None = Query(None, alias="page")) -> Response:
    """The organisers' page; the submissions list filtered by ``FILTERS`` (checked by ``search``: a bad
    one answers 400 with the reason above an empty list) and paged (``page``)."""
    account = organiser_account(request)
    if isinstance(account, Response):
        return account
    service = request.app.state.service
    now = datetime.now(UTC)
    rules = contest.get_rules(service)
    listing = submissions_context(service, {"user": user, "verdict": verdict, "task": task, "since": since,
                                            "until": until}, page_number)
    return page(request, "admin.html", 400 if listing["filter_error"] else 200, account=account, rules=rules,
                banner=views.banner_view(rules, now),
                notice=notice_text(notice, int(id) if id and id.isdigit() else None, rules),
                queue=queue_view(service, now), workers=workers_view(service, now),
                activity=plots.activity_view(progress.grading_activity(service, now)),
                workers_note=f"Workers that claimed or finished a test point in the last "
                             f"{views.duration_text(WORKERS_WINDOW.total_seconds())}, from the result rows.",
                **listing, **questions_context(service))


@router.get("/activity.csv")
def activity_csv(request: Request) -> Response:
    """The last hour minute by minute (``progress.grading_activity``) as CSV; organisers only."""
    account = organiser_account(request)
    if isinstance(account, Response):
        return account
    return csv_download(progress.grading_activity_csv(progress.grading_activity(request.app.state.service)),
                        "grading-activity")


@router.get("/submissions.json")
def submissions_live(request: Request, user: str | None = None, verdict: str | None = None,
                     task: str | None = None, since: str | None = None, until: str | None = None,
                     page_number: str | None = Query(None, alias="page")) -> Response:
    """The submissions list's live update (the same filters and page as ``/admin``), polled while one of
    its submissions is queued or running: ``{"live", "rows"}`` (``render.list_document``), 304 when
    unchanged; 400 with the reason for a bad filter, 401/403 without an organiser's session."""
    account = session.page_account(request)
    if account is None or not account.is_admin:
        status = 401 if account is None else 403
        return JSONResponse({"error": "forbidden", "message": "an organiser's session is needed"}, status)
    listing = submissions_context(request.app.state.service, {"user": user, "verdict": verdict, "task": task,
                                                               "since": since, "until": until}, page_number)
    if listing["filter_error"]:
        return JSONResponse({"error": "bad_request", "message": listing["filter_error"]}, 400)
    return views.list_document(request, listing["submissions"])


_FIELD_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?")  # a datetime-local field's value


def utc_field(value: str | None) -> str | None:
    """A time field of the filter form: the page's fields are UTC and send no offset, so one without it
    gets ``+00:00``; anything else goes to the service's check as sent."""
    if value is not None and _FIELD_TIME.fullmatch(value.strip()):
        return value.strip() + "+00:00"
    return value


def field_time(value) -> str:
    """An aware time as a datetime-local field's value in UTC (``2026-12-06T09:00``), '' for None."""
    return "" if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def parse_filters(given: dict[str, str | None], page_number: str | None = None,
                  up_to: str | None = None) -> search.SubmissionQuery:
    """``search.parse_query`` of the filter form's fields (its times UTC); ``BadRequest`` with the reason."""
    times = {key: utc_field(given.get(key)) for key in ("since", "until")}
    return search.parse_query(**{**given, **times}, page=page_number, up_to=up_to)


def submissions_context(service, given: dict[str, str | None], page_number: str | None) -> dict:
    """The submissions part of the admin page: the filter form as sent, one page of the matching
    submissions newest first, the links to the other pages, and the filter as the "rejudge these" form's
    fields; or ``filter_error`` (no rows) when a filter is bad."""
    context = {"filter_form": {key: value or "" for key, value in given.items()}, "filter_error": None,
               "verdicts": views.verdict_options(), "users": accounts.list_users(service),
               "submissions": [], "listing": None, "filter_fields": (), "live_url": None}
    try:
        query = parse_filters(given, page_number)
    except BadRequest as exc:
        return {**context, "filter_error": exc.message[0].upper() + exc.message[1:] + "."}
    found = search.search(service, query)
    params = query.params()
    form = {**params, "since": field_time(query.filter.since), "until": field_time(query.filter.until)}
    rows = [views.submission_row(r) for r in glance.at_a_glance(service, found["rows"])]
    return {**context, "filter_form": form, "submissions": rows,
            "live_url": "/admin/submissions.json?" + urlencode({**params, "page": query.page}),
            "listing": {**found, "described": query.describe(), "newer": _page_link(params, query.page - 1),
                        "older": _page_link(params, query.page + 1) if query.page < found["pages"] else None},
            "filter_fields": tuple(params.items())}


def _page_link(params: dict[str, str], number: int) -> str | None:
    """The admin page's link to page ``number`` of the same filters (None before the first)."""
    if number < 1:
        return None
    return "/admin?" + urlencode({**params, "page": number}) + "#submissions"


RECENT_QUESTIONS = 20


def questions_context(service) -> dict:
    """The messages part of the admin page: the open questions oldest first, the handled ones among the
    newest ``RECENT_QUESTIONS``, the announcements."""
    handled = [q for q in messages.all_questions(service, RECENT_QUESTIONS) if q["state"] != "open"]
    return {"open_questions": [question_view(q) for q in messages.open_questions(service)],
            "handled_questions": [question_view(q) for q in handled[:RECENT_QUESTIONS]],
            "announcements": [announcement_view(a) for a in messages.announcements(service)],
            "answer_max_chars": messages.ANSWER_MAX_CHARS}


def checked(request: Request, csrf: str):
    """The admin account of this session if ``csrf`` is its CSRF token; else the response to send (to
    log in; 403 for a contestant or a bad token)."""
    account = organiser_account(request)
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
def confirm_field():
    """The ``confirm`` form field (a new FastAPI parameter each time: one instance cannot serve two)."""
    return Form("", max_length=8)


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
                  confirm: str = confirm_field()):
    account = await run_in_threadpool(checked, request, csrf)
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
def freeze(request: Request, csrf: str = Form("", max_length=128), confirm: str = confirm_field()):
    account = checked(request, csrf)
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
def unfreeze(request: Request, csrf: str = Form("", max_length=128), confirm: str = confirm_field()):
    account = checked(request, csrf)
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


RejudgeId = Path(ge=1, le=2**31 - 1)


def filter_field():
    """A filter's form field (``search`` checks it; a new FastAPI parameter each time)."""
    return Form("", max_length=search.FIELD_MAX_LENGTH)

LISTED = 50  # submissions listed on the confirmation of a rejudge of a filtered set


@router.post("/rejudge-filtered")
async def rejudge_filtered(request: Request, csrf: str = Form("", max_length=128), confirm: str = confirm_field(),
                           user: str = filter_field(), verdict: str = filter_field(), task: str = filter_field(),
                           since: str = filter_field(), until: str = filter_field(), up_to: str = filter_field()):
    """"Rejudge these": the confirmation lists what the filters keep now (its form carries them and the
    newest id, so later submissions stay out); confirmed, the rejudge starts, with the totals before
    recorded, and the answer is its before/after page."""
    account = await run_in_threadpool(checked, request, csrf)
    if isinstance(account, Response):
        return account
    given = {"user": user, "verdict": verdict, "task": task, "since": since, "until": until}
    try:
        query = parse_filters(given, up_to=up_to if confirm == CONFIRMED else None)
        if confirm != CONFIRMED:
            return await run_in_threadpool(_confirm_filtered, request, account, query)
        if query.filter.up_to_id is None:
            raise BadRequest("the confirmation lacks the newest submission it covers (up_to); start again")
        batch_id, _ = await run_in_threadpool(request.app.state.service.rejudge_filtered, query.filter, account.id,
                                              query.describe())
    except BadRequest as exc:
        return error_page(request, 400, "Nothing rejudged", exc.message[0].upper() + exc.message[1:] + ".", account)
    return RedirectResponse(f"/admin/rejudges/{batch_id}", status_code=303)


def _confirm_filtered(request: Request, account, query: search.SubmissionQuery) -> Response:
    """The confirmation of a rejudge of the filtered set: how many, the newest ``LISTED`` of them."""
    found = search.search(request.app.state.service, search.SubmissionQuery(query.filter, 1, LISTED))
    if not found["total"]:
        raise BadRequest("no submission matches these filters; nothing to rejudge")
    fields = (*query.params().items(), ("up_to", str(found["newest_id"])))
    described = query.describe()
    return confirm_page(request, account, heading=f"Rejudge {found['total']} submission(s)",
                        action="/admin/rejudge-filtered",
                        lines=[f"{described[0].upper()}{described[1:]}: {found['total']} submission(s), "
                               f"up to #{found['newest_id']} (any submitted after this page are not included).",
                               "Each is graded again from scratch; its current total stays on the scoreboard "
                               "until its new grading finishes.",
                               "Their totals now are recorded, and the next page compares them with the new ones."],
                        button=f"Rejudge these {found['total']}", fields=fields,
                        listed=[views.submission_row(r) for r in found["rows"]],
                        listed_more=found["total"] - len(found["rows"]),
                        cancel="/admin?" + urlencode(query.params()) + "#submissions")


@router.get("/rejudges/{batch_id}")
def rejudge_page(request: Request, batch_id: int = RejudgeId) -> Response:
    """A rejudge of a filtered set: each submission's total before (when it was requested) and after."""
    account = organiser_account(request)
    if isinstance(account, Response):
        return account
    try:
        batch = search.rejudge_comparison(request.app.state.service, batch_id)
    except NotFound as exc:
        return error_page(request, 404, "Not found", exc.message[0].upper() + exc.message[1:] + ".", account)
    return page(request, "rejudge.html", account=account, batch=views.comparison_view(batch))


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
    account = checked(request, csrf)
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
    account = checked(request, csrf)
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
    account = checked(request, csrf)
    if isinstance(account, Response):
        return account
    try:
        messages.announce(request.app.state.service, account, text, pinned=bool(pinned))
    except Refusal as exc:
        return error_page(request, exc.status, "Not announced", exc.message[0].upper() + exc.message[1:] + ".",
                          account)
    return _back("announced")
