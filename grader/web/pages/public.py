"""The public pages and the login (HTML, server-rendered; everything works without JavaScript).

- ``/``: the contest banner and the public scoreboard (while frozen, a logged-in contestant's own row
  marked with their submissions it hides), and its top 10 over time (``plots.scoreboard_chart``, the freeze
  applied as on the board; ``/scoreboard/progress.csv``); ``/scoreboard.json?since=VERSION`` its live update (304, or
  only the changed rows: ``scoreboard``), for ``static/live.js``;
- ``/rules``: how a score follows from the cycles, the ranking, every test point's threshold, the
  contest's times and limits (``grader.service.rules_text``, as ``GET /api/v1/rules``);
- ``/login`` (paste the token -> a server-side session, its id in an HttpOnly, SameSite=Strict cookie:
  ``grader.web.http.cookie_session``), ``/logout`` (ends the session on the server).
"""
from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from grader.refusals import Forbidden, NotAuthenticated
from grader.service import contest, login_sessions, progress, rules_text, standings
from grader.web.http import cookie_session as session
from grader.web.http.csrf import check_csrf, check_login_csrf, forget_login_csrf, login_csrf, remember_login_csrf

from . import plots, render as views
from .base import csv_download, error_page, page
from .scoreboard import pending_mark

router = APIRouter(include_in_schema=False)


def _next(target: str | None) -> str:
    """A local path to go to after logging in (anything else: the submissions page)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/submissions"


@router.get("/")
def index(request: Request) -> Response:
    """The banner and the public scoreboard; while it is frozen, a logged-in contestant's own row says
    how many of their submissions since the freeze it hides (``scoreboard.pending_mark``), for them only."""
    service = request.app.state.service
    rules = contest.get_rules(service)
    board = request.app.state.scoreboards.current()
    account = session.page_account(request)
    own = None
    if board.frozen and account is not None and not account.is_admin:
        own = pending_mark(standings.hidden_submissions(service, account.id))
    return page(request, "index.html", account=account, rules=rules,
                banner=views.banner_view(rules, datetime.now(UTC)), board=board, bands=views.SCORE_BANDS,
                own=own, own_row=bool(own) and account.name in board.by_user,
                rows_html=board.rows_html_for(account.name, own) if own else board.rows_html,
                progress=plots.scoreboard_view(progress.scoreboard_progress(service)))


@router.get("/scoreboard/progress.csv")
def scoreboard_progress_csv(request: Request) -> Response:
    """The top 10's best totals over contest time (``progress.scoreboard_progress``: the freeze applies) as CSV."""
    return csv_download(progress.scoreboard_progress_csv(progress.scoreboard_progress(request.app.state.service)),
                        "scoreboard-progress")


@router.get("/scoreboard.json")
def scoreboard_update(request: Request, since: str | None = Query(None, max_length=64)) -> Response:
    """The scoreboard's live update: 304 when ``since`` is current, else only what changed."""
    update = request.app.state.scoreboards.update(since)
    if update is None:
        return Response(status_code=304, headers={"Cache-Control": "no-store"})
    return JSONResponse(update, headers={"Cache-Control": "no-store"})


@router.get("/rules")
def rules_page(request: Request) -> Response:
    """The rules: scoring, ranking, the tasks' thresholds, the contest's times and limits (public)."""
    service = request.app.state.service
    doc = rules_text.contestant_rules(service)
    return page(request, "rules.html", rules=contest.get_rules(service), doc=views.rules_view(doc))


@router.get("/pygments.css")
def pygments_css() -> Response:
    return Response(views.pygments_css(), media_type="text/css", headers={"Cache-Control": "max-age=86400"})


@router.get("/login")
def login_form(request: Request, next: str | None = Query(None, max_length=512)) -> Response:
    value = login_csrf(request)
    response = page(request, "login.html", login_csrf=value, next=_next(next))
    remember_login_csrf(request, response, value)
    return response


@router.post("/login")
def login(request: Request, token: str = Form("", max_length=256), csrf: str = Form("", max_length=128),
          next: str = Form("/submissions", max_length=512)) -> Response:
    """Check the pasted token; on success a new server-side session, its id in the cookie, and a redirect (303)."""
    try:
        check_login_csrf(request, csrf)
        _account, session_id = login_sessions.log_in(request.app.state.service, token.strip())
    except (NotAuthenticated, Forbidden) as exc:
        value = login_csrf(request)
        response = page(request, "login.html", exc.status, error=exc.message, login_csrf=value,
                        next=_next(next), account=None)
        remember_login_csrf(request, response, value)
        return response
    response = RedirectResponse(_next(next), status_code=303)
    session.set_session(request, response, session_id)
    forget_login_csrf(response)
    return response


@router.post("/logout")
def logout(request: Request, csrf: str = Form("", max_length=128)) -> Response:
    if session.page_account(request) is not None:
        try:
            check_csrf(request, csrf)
        except Forbidden as exc:
            return error_page(request, 403, "Not logged out", exc.message)
        session.end_session(request)  # the server forgets it: the cookie's value is worthless from now on
    response = RedirectResponse("/", status_code=303)
    session.clear_session(response)
    return response
