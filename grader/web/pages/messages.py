"""The Messages page and the unread badge, over ``grader.service.messages``.

- ``/messages`` (logged in): the announcements (pinned first), the caller's questions with their answers
  and every question answered to all, and the form to ask (a task or general; CSRF field). Showing the
  page marks everything made until then read. ``POST /messages`` asks: 303 back to the page, or the page
  again with the refusal (400 text or task, 429 the hourly question limit). A text field is bounded by
  the forms' field size (``http.limits.form_limits``: 16 KiB, more than 4000 characters of any script);
  the service counts its characters.
- The badge: every page of a logged-in user shows, next to "Messages", how many answers and
  announcements they have not read (``contestant.page`` puts ``messages.unread`` in every page's context). ``static/live.js``
  keeps it current by polling ``/messages.json`` with ``If-None-Match``, as the scoreboard polls: the tag
  is made of the user's own counts, so an unchanged badge costs a 304 (and the counts' query), and says
  nothing of anyone else's questions.

The organisers' side (the queue, answer / answer to all / ignore, announcing) is on ``/admin``
(``pages.admin``). Every text reaches the page through the autoescaping templates or ``textContent``.
"""
from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from grader.refusals import Forbidden, Refusal
from grader.service import messages
from grader.web.http import cookie_session as session
from grader.web.http.csrf import check_csrf

from . import render as views
from .base import error_page, page, to_login

router = APIRouter(include_in_schema=False)

NOTICES = {"asked": "Your question is sent. Its answer will appear here (and in the badge above)."}


def question_view(q: dict) -> dict:
    """A question (contestant's or organiser's view) with display strings for its subject and times."""
    return {**q, "about": "General" if q["task"] is None else f"Task {q['task']}",
            "created_text": views.time_text(q["created"]),
            "answered_text": views.time_text(q.get("answered_at") or q.get("handled_at"))}


def announcement_view(a: dict) -> dict:
    return {**a, "created_text": views.time_text(a["created"])}


def _messages_page(request: Request, account, status: int = 200, error: str | None = None, text: str = "",
                   task: str = "", notice: str | None = None) -> Response:
    service = request.app.state.service
    now = datetime.now(UTC)
    if status == 200:
        messages.mark_read(service, account, now)  # before reading: what arrives later stays unread
    return page(request, "messages.html", status, account=account, error=error, notice=notice, text=text,
                task=task, announcements=[announcement_view(a) for a in messages.announcements(service)],
                questions=[question_view(q) for q in messages.clarifications_for(service, account)],
                max_chars=messages.QUESTION_MAX_CHARS, max_lines=messages.QUESTION_MAX_LINES)


@router.get("/messages")
def messages_page(request: Request, notice: str | None = Query(None, max_length=64)) -> Response:
    """Announcements, questions and answers; the form to ask. Marks everything shown read."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    return _messages_page(request, account, notice=NOTICES.get(notice or ""))


@router.post("/messages")
def ask(request: Request, text: str = Form(""), task: str = Form("", max_length=8),
        csrf: str = Form("", max_length=128)) -> Response:
    """Ask from the form: 303 back to the page, or the page with the refusal (and the text kept)."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    try:
        check_csrf(request, csrf)
    except Forbidden as exc:
        return error_page(request, 403, "Refused", exc.message, account)
    try:
        subject = int(task) if task.strip() else None
    except ValueError:
        return _messages_page(request, account, 400, f"not a task: {task!r}", text, "")
    try:
        messages.ask(request.app.state.service, account, text, subject)
    except Refusal as exc:
        return _messages_page(request, account, exc.status, exc.message, text, task)
    return RedirectResponse("/messages?notice=asked", status_code=303)


@router.get("/messages.json")
def badge(request: Request) -> Response:
    """The badge's live document ``{"answers", "announcements", "total"}``; 304 when ``If-None-Match``
    is its current tag. The tag is made from the caller's own document only: one made from the server's
    change stamp told every contestant, to the second, when anyone asked or was answered."""
    account = session.page_account(request)
    if account is None:
        return JSONResponse({"error": "unauthorized", "message": "log in to see your messages"}, 401)
    return views.etag_json(request, messages.unread(request.app.state.service, account))
