"""The contestant's API (``/api/v1``, a token needed): submit, list one's own submissions, status, source,
one's scores over time; two submissions compared.

Thin: authenticate (``grader.web.http.auth``), read the upload (``grader.web.http.upload``), call
``Service.accept`` with the contest's rules and start the grading (``grader.web.http.admission``);
reading goes through ``grader.service.visibility`` (another user's id answers 404, exactly as a missing one).
"""
from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import PlainTextResponse
from fastapi.security import HTTPAuthorizationCredentials
from starlette.concurrency import run_in_threadpool

from grader.service import accounts, compare, progress, visibility
from grader.service.accounts import Account
from grader.web.http import admission
from grader.web.http.auth import bearer, current_account, token_of
from grader.web.http.error_responses import error_responses
from grader.web.http.upload import FIELD, read_upload

from .schemas import Accepted, Comparison, OwnProgress, Status, SubmissionRow

router = APIRouter(prefix="/api/v1", tags=["contestant"])

MAX_ID = 2**31 - 1  # the id columns are 32-bit integers
SubmissionId = Path(ge=1, le=MAX_ID, description="a submission id")
_UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": [FIELD],
    "properties": {FIELD: {"type": "string", "format": "binary",
                           "description": "the Python file defining get_kernel(task_id)"}}}}}}}


@router.post("/submissions", status_code=202, response_model=Accepted, openapi_extra=_UPLOAD_BODY,
             responses=error_responses(400, 401, 403, 413, 429, 503))
async def submit(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Accepted:
    """Upload a submission (multipart field `file`); 202 once it is stored and queued, before grading.

    Refusals store nothing: 400 (empty, not UTF-8, not Python), 401 (no or unknown token), 403 (disabled
    account; outside the contest window), 413 (too large), 429 (a limit, with Retry-After)."""
    token = accounts.well_formed(token_of(credentials))  # no token: refused without the database
    service = request.app.state.service
    # Before any of the body is read: the account and the rules (an unknown token, a disabled account,
    # a limit cost nothing more), then one upload at a time per account (``admission.Uploads``).
    account = await run_in_threadpool(admission.admit_token, service, token)
    with request.app.state.uploads.one_of(account):
        name, data = await read_upload(request, service.settings.submission_max_bytes)
        submission_id = await admission.in_thread(request, admission.accept, service, account, name, data)
    # The status URL is this request's URL plus the id (``url_for`` would search every route).
    url = f"{request.url.replace(query='', fragment='')}/{submission_id}"
    return Accepted(id=submission_id, status="queued", url=url)


@router.get("/submissions", response_model=list[SubmissionRow], responses=error_responses(401, 403, 503))
def my_submissions(request: Request, account: Account = Depends(current_account)) -> list[dict]:
    """The caller's own submissions, oldest first, with their status and scores."""
    return visibility.submissions_for(request.app.state.service, account)


@router.get("/progress", response_model=OwnProgress, responses=error_responses(401, 403, 503))
def my_progress(request: Request, account: Account = Depends(current_account)) -> dict:
    """The caller's scored submissions over time, per task and in total, with the best total so far (the
    graph of "My submissions"; CSV: ``/submissions/progress.csv``)."""
    return progress.own_progress(request.app.state.service, account)


@router.get("/submissions/{submission_id}", name="submission_status", response_model=Status,
            responses=error_responses(401, 403, 404, 422, 503))
def submission_status(request: Request, submission_id: int = SubmissionId,
                      account: Account = Depends(current_account)) -> dict:
    """The status document of one of the caller's submissions (what `kdt-grade status --json` prints)."""
    return visibility.status_for(request.app.state.service, account, submission_id)


@router.get("/submissions/{a}/compare/{b}", response_model=Comparison,
            responses=error_responses(401, 403, 404, 422, 503))
def submissions_compared(request: Request, a: int = Path(ge=1, le=MAX_ID, description="submission A's id"),
                         b: int = Path(ge=1, le=MAX_ID, description="submission B's id (the changes are B - A)"),
                         account: Account = Depends(current_account)) -> dict:
    """Two of the caller's submissions side by side, per test point (verdicts, cycles, scores, whether
    each result was reused), per task and in total, each change from A to B (what `kdt-grade diff A B
    --json` prints). An organiser may compare anyone's."""
    return compare.comparison_for(request.app.state.service, account, a, b)


SOURCE_RESPONSES = {200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "The file"}}


@router.get("/submissions/{submission_id}/source", response_model=None,
            responses={**SOURCE_RESPONSES, **error_responses(401, 403, 404, 422, 503)})
def submission_source(request: Request, submission_id: int = SubmissionId,
                      account: Account = Depends(current_account)) -> PlainTextResponse:
    """The submitted file of one of the caller's submissions, as text."""
    file_name, source = visibility.source_for(request.app.state.service, account, submission_id)
    return PlainTextResponse(source, headers={"Content-Disposition": f'inline; filename="{_safe(file_name)}"'})


def _safe(file_name: str) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in file_name)[:255]
