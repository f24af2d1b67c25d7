"""The contestants' pages (HTML, server-rendered; architecture.md "Rooms": pages are an audience of their own).

Thin: read the session (``session``), call ``Service`` / ``grader.contest`` / ``grader.visibility``, render
(``pages_render``). Everything works without JavaScript; ``static/live.js`` only adds the live updates,
through two small JSON routes (``/scoreboard.json``, ``/submissions/ID/status.json``).

- ``/``: banner and public scoreboard; ``/scoreboard.json?since=VERSION`` (304 or only the changed rows);
- ``/login`` (paste the token -> HttpOnly, SameSite=Strict cookie), ``/logout``;
- ``/submit``: the caller's limits and the upload form (CSRF token in the form's action, since the
  multipart body is read by the shared size-capped reader);
- ``/submissions``, ``/submissions/ID`` (per-point table, timelines, highlighted source),
  ``/submissions/ID/status.json``, ``/submissions/ID/points/T/P/timeline.svg`` and ``.../perfetto.json``.

Another user's submission answers 404, exactly as a missing one (``grader.visibility``).
"""
from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from urllib.parse import quote

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from grader import accounts, contest, traces, visibility
from grader.pipeline import Rejected
from grader.refusals import Forbidden, NotAuthenticated, NotFound, Refusal

from . import pages_render as views
from . import intake, session
from .timeline import timeline_height, timeline_svg
from .upload import read_upload_form

router = APIRouter(include_in_schema=False)

MAX_ID = 2**31 - 1
SubmissionId = Path(ge=1, le=MAX_ID)
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data:; frame-ancestors 'self'; form-action 'self'; base-uri 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}
SVG_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'",
               "X-Content-Type-Options": "nosniff", "Cache-Control": "private, max-age=3600"}


def page(request: Request, template: str, status: int = 200, **context) -> Response:
    """Render with the page headers, the caller's account and the contest rules."""
    if "account" not in context:
        context["account"] = session.page_account(request)
    if "rules" not in context:
        context["rules"] = contest.get_rules(request.app.state.service)
    return views.render(request, template, status, headers=PAGE_HEADERS, **context)


def error_page(request: Request, status: int, heading: str, message: str, account=None) -> Response:
    return page(request, "error.html", status, code=status, heading=heading, message=message, account=account)


def to_login(request: Request) -> RedirectResponse:
    return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)


def _next(target: str | None) -> str:
    """A local path to go to after logging in (anything else: the submissions page)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/submissions"


# ---- public -----------------------------------------------------------------------------------------

@router.get("/")
def index(request: Request) -> Response:
    """The banner and the public scoreboard."""
    rules = contest.get_rules(request.app.state.service)
    board = request.app.state.scoreboards.current()
    return page(request, "index.html", rules=rules, banner=views.banner_view(rules, datetime.now(UTC)),
                board=board)


@router.get("/scoreboard.json")
def scoreboard_update(request: Request, since: str | None = Query(None, max_length=64)) -> Response:
    """The scoreboard's live update: 304 when ``since`` is current, else only what changed."""
    update = request.app.state.scoreboards.update(since)
    if update is None:
        return Response(status_code=304, headers={"Cache-Control": "no-store"})
    return JSONResponse(update, headers={"Cache-Control": "no-store"})


@router.get("/pygments.css")
def pygments_css() -> Response:
    return Response(views.pygments_css(), media_type="text/css", headers={"Cache-Control": "max-age=86400"})


# ---- session ----------------------------------------------------------------------------------------

@router.get("/login")
def login_form(request: Request, next: str | None = Query(None, max_length=512)) -> Response:
    value = session.login_csrf(request)
    response = page(request, "login.html", login_csrf=value, next=_next(next))
    session.remember_login_csrf(request, response, value)
    return response


@router.post("/login")
def login(request: Request, token: str = Form("", max_length=256), csrf: str = Form("", max_length=128),
          next: str = Form("/submissions", max_length=512)) -> Response:
    """Check the pasted token; on success the session cookie and a redirect (303)."""
    try:
        session.check_login_csrf(request, csrf)
        account = accounts.authenticate(request.app.state.service, token.strip())
    except (NotAuthenticated, Forbidden) as exc:
        value = session.login_csrf(request)
        response = page(request, "login.html", exc.status, error=exc.message, login_csrf=value,
                        next=_next(next), account=None)
        session.remember_login_csrf(request, response, value)
        return response
    response = RedirectResponse(_next(next), status_code=303)
    session.set_session(request, response, token.strip())
    return response


@router.post("/logout")
def logout(request: Request, csrf: str = Form("", max_length=128)) -> Response:
    if session.page_account(request) is not None:
        try:
            session.check_csrf(request, csrf)
        except Forbidden as exc:
            return error_page(request, 403, "Not logged out", exc.message)
    response = RedirectResponse("/", status_code=303)
    session.clear_session(response)
    return response


# ---- submitting -------------------------------------------------------------------------------------

def _submit_page(request: Request, account, status: int = 200, error: str | None = None) -> Response:
    service = request.app.state.service
    rules = contest.get_rules(service)
    now = datetime.now(UTC)
    allowance = views.allowance_view(contest.allowance(service, account.id, now), now)
    return page(request, "submit.html", status, account=account, rules=rules, allowance=allowance, error=error,
                limit_lines=views.limit_lines(rules), max_bytes=service.settings.submission_max_bytes)


@router.get("/submit")
def submit_form(request: Request) -> Response:
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    return _submit_page(request, account)


@router.post("/submit")
async def submit(request: Request) -> Response:
    """Upload from the form: stored and queued (303 to its page), or the form again with the refusal. The
    CSRF token is a field of the multipart body (never in the URL, so never in an access log)."""
    account = await run_in_threadpool(session.page_account, request)
    if account is None:
        return to_login(request)
    service = request.app.state.service
    try:
        # before the upload is read or parsed: a refused contestant costs nothing
        await run_in_threadpool(intake.check, service, account)
        with request.app.state.uploads.one_of(account):  # one upload at a time per account (intake.Uploads)
            name, data, fields = await read_upload_form(request, service.settings.submission_max_bytes)
            session.check_csrf(request, fields.get("csrf", "")[:128])
            submission_id = await intake.in_thread(request, intake.accept, service, request.app.state.dispatcher,
                                                   account, name, data)
    except Rejected as exc:
        return await run_in_threadpool(_submit_page, request, account, 400, f"{exc}. Nothing was stored.")
    except Refusal as exc:
        return await run_in_threadpool(_submit_page, request, account, exc.status, exc.message)
    return RedirectResponse(f"/submissions/{submission_id}", status_code=303)


# ---- reading one's submissions ----------------------------------------------------------------------

@router.get("/submissions")
def my_submissions(request: Request) -> Response:
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    rows = visibility.submissions_for(request.app.state.service, account)
    return page(request, "submissions.html", account=account,
                submissions=[views.submission_row(r) for r in reversed(rows)])


def _visible_state(request: Request, account, submission_id: int) -> dict | None:
    try:
        return visibility.status_for(request.app.state.service, account, submission_id)
    except NotFound:
        return None


def _missing(request: Request, account, submission_id: int) -> Response:
    return error_page(request, 404, "Not found", f"There is no submission {submission_id} of yours.", account)


@router.get("/submissions/{submission_id}")
def submission_page(request: Request, submission_id: int = SubmissionId) -> Response:
    """Per-point table (live while grading), the timelines of the graded points, the highlighted source."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    state = _visible_state(request, account, submission_id)
    if state is None:
        return _missing(request, account, submission_id)
    service = request.app.state.service
    _, source = visibility.source_for(service, account, submission_id)
    sub = views.submission_view(state, _frames(service, submission_id))
    return page(request, "submission.html", account=account, sub=sub, source_html=views.highlight(source))


@router.get("/submissions/{submission_id}/status.json")
def submission_live(request: Request, submission_id: int = SubmissionId) -> Response:
    """The small document the page polls while grading (304 with ``If-None-Match`` when unchanged)."""
    account = session.page_account(request)
    state = None if account is None else _visible_state(request, account, submission_id)
    if state is None:
        return JSONResponse({"error": "not_found", "message": f"no submission {submission_id} of yours"}, 404)
    doc = views.live_document(state, _frames(request.app.state.service, submission_id))
    body = json.dumps(doc, separators=(",", ":")).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _frames(service, submission_id: int) -> dict:
    """(task, point) -> timeline height in pixels, for each stored trace of the submission."""
    return {key: timeline_height(record, 0) for key, record in traces.stored_records(service, submission_id).items()}


def _point_record(request: Request, submission_id: int, task: int, point: int):
    """(account, record) of a graded point the caller may see, or a 404/redirect response."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    state = _visible_state(request, account, submission_id)
    entry = None if state is None else next((p for p in state["points"] if (p["task"], p["point"]) == (task, point)),
                                            None)
    record = None
    if entry is not None and entry["state"] == "done":
        record = traces.stored_record(request.app.state.service, submission_id, task, point)
    if record is None:
        return error_page(request, 404, "Not found", f"No timeline for task {task} point {point} of submission "
                          f"{submission_id} (not yours, not graded yet, or nothing was simulated).", account)
    return record


@router.get("/submissions/{submission_id}/points/{task}/{point}/timeline.svg")
def timeline(request: Request, submission_id: int = SubmissionId, task: int = Path(ge=1, le=99),
             point: int = Path(ge=0, le=99)) -> Response:
    """The timeline picture (SVG) of job 0 of a graded point."""
    record = _point_record(request, submission_id, task, point)
    if isinstance(record, Response):
        return record
    svg = timeline_svg(record, 0, svg_id=f"timeline-{task}-{point}")
    return Response(svg, media_type="image/svg+xml", headers=SVG_HEADERS)


@router.get("/submissions/{submission_id}/points/{task}/{point}/perfetto.json")
def perfetto(request: Request, submission_id: int = SubmissionId, task: int = Path(ge=1, le=99),
             point: int = Path(ge=0, le=99)) -> Response:
    """The point's Perfetto / Chrome trace JSON (jobs 0-3 and the placement), as a download."""
    record = _point_record(request, submission_id, task, point)
    if isinstance(record, Response):
        return record
    name = f"submission-{submission_id}-task{task}-point{point}.perfetto.json"
    return Response(traces.perfetto_json(record), media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "private"})
