"""The contestants' own pages (HTML, server-rendered; architecture: pages are an audience of their own).

Thin: read the session (``grader.web.http.cookie_session``), call the service (``contest``,
``visibility``, ``queries``), render (``render``). Everything works without JavaScript; ``static/live.js``
only adds the live updates through ``/submissions/ID/status.json``.

- ``/submit``: the caller's limits and the upload form (its CSRF token is a field of the multipart body,
  read by the shared size-capped reader);
- ``/submissions`` (each row's verdicts at a glance, the one that counts marked; the scores over time:
  ``plots.own_chart``, ``/submissions/progress.csv``), ``/submissions.json`` (its live update while one is
  graded), ``/submissions/ID`` (per-point table, the cycles against the thresholds: ``plots.cycles_chart``,
  ``.../cycles.csv``; timelines, highlighted source), ``/submissions/ID/status.json``, ``/submissions/ID/points/T/P/timeline.svg`` and ``.../perfetto.json``.

Another user's submission answers 404, exactly as a missing one (``grader.service.visibility``).
"""
from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from grader.judging import trace_record
from grader.judging.pipeline import Rejected
from grader.display import count_text
from grader.refusals import NotFound, Refusal
from grader.service import compare, contest, glance, progress, queries, submission_limits, visibility
from grader.web.http import admission, cookie_session as session
from grader.web.http.csrf import check_csrf
from grader.web.http.upload import read_upload_form

from . import plots, render as views
from .base import SVG_HEADERS, SubmissionId, csv_download, error_page, page, to_login
from .compare import picker_view
from .timeline import ZOOMS, timeline_height, timeline_svg

router = APIRouter(include_in_schema=False)


def _submit_page(request: Request, account, status: int = 200, error: str | None = None) -> Response:
    service = request.app.state.service
    rules = contest.get_rules(service)
    now = datetime.now(UTC)
    allowance = views.allowance_view(submission_limits.allowance(service, account.id, now), now)
    return page(request, "submit.html", status, account=account, rules=rules, allowance=allowance, error=error,
                limit_lines=views.limit_lines(rules),
                max_bytes_text=count_text(service.settings.submission_max_bytes))


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
        await run_in_threadpool(admission.check, service, account)
        with request.app.state.uploads.one_of(account):  # one upload at a time per account (admission.Uploads)
            name, data, fields = await read_upload_form(request, service.settings.submission_max_bytes)
            check_csrf(request, fields.get("csrf", "")[:128])
            submission_id = await admission.in_thread(request, admission.accept, service, account, name, data)
    except Rejected as exc:
        return await run_in_threadpool(_submit_page, request, account, 400, f"{exc}. Nothing was stored.")
    except Refusal as exc:
        return await run_in_threadpool(_submit_page, request, account, exc.status, exc.message)
    return RedirectResponse(f"/submissions/{submission_id}", status_code=303)


def _my_rows(request: Request, account) -> list[dict]:
    """The caller's submissions newest first as display rows, with their verdicts at a glance and the
    one that counts (``grader.service.glance``)."""
    service = request.app.state.service
    rows = glance.at_a_glance(service, visibility.submissions_for(service, account))
    return [views.submission_row(r) for r in reversed(rows)]


@router.get("/submissions")
def my_submissions(request: Request) -> Response:
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    own = plots.own_view(progress.own_progress(request.app.state.service, account))
    return page(request, "submissions.html", account=account, submissions=_my_rows(request, account), own=own)


@router.get("/submissions/progress.csv")
def my_progress_csv(request: Request) -> Response:
    """The caller's scored submissions over time (``progress.own_progress``) as CSV."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    return csv_download(progress.own_progress_csv(progress.own_progress(request.app.state.service, account)),
                        "my-scores")


@router.get("/submissions.json")
def my_submissions_live(request: Request) -> Response:
    """The list's live update, polled while a submission is queued or running (304 with ``If-None-Match``
    when unchanged): ``{"live": bool, "rows": [submission_row, ...]}``."""
    account = session.page_account(request)
    if account is None:
        return JSONResponse({"error": "not_authenticated", "message": "log in first"}, 401)
    return views.list_document(request, _my_rows(request, account))


def _visible_state(request: Request, account, submission_id: int) -> dict | None:
    try:
        return visibility.status_for(request.app.state.service, account, submission_id)
    except NotFound:
        return None


def _missing(request: Request, account, submission_id: int) -> Response:
    return error_page(request, 404, "Not found", f"There is no submission {submission_id} of yours.", account)


def _visible(request: Request, submission_id: int) -> tuple | Response:
    """``(account, status document)`` of a submission the caller may see; else the response: to the login
    page without a session, 404 for another user's or a missing one."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    state = _visible_state(request, account, submission_id)
    if state is None:
        return _missing(request, account, submission_id)
    return account, state


@router.get("/submissions/{submission_id}")
def submission_page(request: Request, submission_id: int = SubmissionId,
                    opened: str = Query("", alias="open")) -> Response:
    """Per-point table (live while grading), the cycles chart, the picker comparing it with another
    submission of its author's (``compare``), the timelines of the graded points, the highlighted source
    (the lines the messages name marked). ``?open=T-P`` renders point T.P's timeline open (the table's
    "picture" links carry it, so the linked section is open without JavaScript)."""
    found = _visible(request, submission_id)
    if isinstance(found, Response):
        return found
    account, state = found
    service = request.app.state.service
    _, source = visibility.source_for(service, account, submission_id)
    sub = views.submission_view(state, _frames(service, state))
    picker = picker_view(compare.others(service, account, submission_id), submission_id)
    return page(request, "submission.html", account=account, sub=sub, opened=opened, picker=picker,
                source_html=views.highlight(source, views.message_lines(state)),
                cycles_svg=plots.cycles_chart(progress.submission_cycles(state)))


@router.get("/submissions/{submission_id}/cycles.csv")
def cycles_csv(request: Request, submission_id: int = SubmissionId) -> Response:
    """Each test point's cycles, threshold and cycles for +10 (``progress.submission_cycles``) as CSV."""
    found = _visible(request, submission_id)
    if isinstance(found, Response):
        return found
    return csv_download(progress.submission_cycles_csv(found[1]), f"submission-{submission_id}-cycles")


@router.get("/submissions/{submission_id}/status.json")
def submission_live(request: Request, submission_id: int = SubmissionId) -> Response:
    """The small document the page polls while grading (304 with ``If-None-Match`` when unchanged)."""
    account = session.page_account(request)
    state = None if account is None else _visible_state(request, account, submission_id)
    if state is None:
        return JSONResponse({"error": "not_found", "message": f"no submission {submission_id} of yours"}, 404)
    return views.etag_json(request, views.live_document(state, _frames(request.app.state.service, state)))


def _frames(service, state: dict) -> dict:
    """(task, point) -> timeline height in pixels, for each stored trace of the submission (status
    document ``state``; the height depends on whether the point's threshold is marked)."""
    thresholds = {(p["task"], p["point"]): p["cycles_for_100"] for p in state["points"]}
    return {key: timeline_height(record, 0, thresholds.get(key))
            for key, record in queries.trace_records(service, state["id"]).items()}


def _point_record(request: Request, submission_id: int, task: int, point: int):
    """(record, the point's status entry) of a graded point the caller may see, or a 404/redirect response."""
    account = session.page_account(request)
    if account is None:
        return to_login(request)
    state = _visible_state(request, account, submission_id)
    entry = None if state is None else next((p for p in state["points"] if (p["task"], p["point"]) == (task, point)),
                                            None)
    record = None
    if entry is not None and entry["state"] == "done":
        record = queries.trace_record(request.app.state.service, submission_id, task, point)
    if record is None:
        return error_page(request, 404, "Not found", f"No timeline for task {task} point {point} of submission "
                          f"{submission_id} (not yours, not graded yet, or nothing was simulated).", account)
    return record, entry


@router.get("/submissions/{submission_id}/points/{task}/{point}/timeline.svg")
def timeline(request: Request, submission_id: int = SubmissionId, task: int = Path(ge=1, le=99),
             point: int = Path(ge=0, le=99), zoom: int = Query(1)) -> Response:
    """The timeline picture (SVG) of job 0 of a graded point, its threshold marked, its source lines
    linked to the submission page's listing; ``?zoom=N`` (``timeline.ZOOMS``) widens its cycle axes N
    times (another value: 404)."""
    if zoom not in ZOOMS:
        return error_page(request, 404, "Not found", f"There is no zoom {zoom}: one of "
                          f"{', '.join(map(str, ZOOMS))}.", session.page_account(request))
    found = _point_record(request, submission_id, task, point)
    if isinstance(found, Response):
        return found
    record, entry = found
    svg = timeline_svg(record, 0, svg_id=f"timeline-{task}-{point}", threshold=entry["cycles_for_100"],
                       source_url=f"/submissions/{submission_id}", zoom=zoom)
    return Response(svg, media_type="image/svg+xml", headers=SVG_HEADERS)


@router.get("/submissions/{submission_id}/points/{task}/{point}/perfetto.json")
def perfetto(request: Request, submission_id: int = SubmissionId, task: int = Path(ge=1, le=99),
             point: int = Path(ge=0, le=99)) -> Response:
    """The point's Perfetto / Chrome trace JSON (jobs 0-3 and the placement), as a download."""
    found = _point_record(request, submission_id, task, point)
    if isinstance(found, Response):
        return found
    record, _ = found
    name = f"submission-{submission_id}-task{task}-point{point}.perfetto.json"
    return Response(trace_record.perfetto_json(record), media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "private"})
