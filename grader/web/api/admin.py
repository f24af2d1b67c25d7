"""The organisers' API (``/api/v1/admin``, an admin token needed): every submission, rejudge, users,
the grading queue, its last hour and the workers seen, the contest rules, freeze and unfreeze. Thin over ``Service``,
``grader.service.queries``, ``grader.service.contest`` and ``grader.service.accounts``."""
from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from grader.refusals import NotFound
from grader.service import accounts, contest, progress, queries, search, visibility
from grader.service.accounts import Account
from grader.service.rows import plain_rows
from grader.web.http.auth import admin_account
from grader.web.http.error_responses import error_responses

from .contestant import SOURCE_RESPONSES, SubmissionId
from .schemas import GradingActivity, GradingQueue, Rejudged, RejudgeRequest, Rules, RulesChange, Status, SubmissionRow, WorkerSeen

router = APIRouter(prefix="/api/v1/admin", tags=["admin"], dependencies=[Depends(admin_account)],
                   responses=error_responses(401, 403, 503))


@router.get("/submissions", response_model=list[SubmissionRow], responses=error_responses(400))
def all_submissions(request: Request, response: Response, user: str | None = None, verdict: str | None = None,
                    task: str | None = None, since: str | None = None, until: str | None = None,
                    page: str | None = None, per_page: str | None = None) -> list[dict]:
    """Every submission of every user, oldest first; or those the filters keep: ``user`` (login name),
    ``verdict`` (some current test point has it; with ``task``, a point of that task), ``task`` alone (a
    score above 0 on it), ``since`` / ``until`` (ISO 8601 with an offset; created in [since, until)).
    With ``page`` (from 1; ``per_page``, default 50, at most 500): that page, newest first, and the number
    of matches in ``X-Total-Count``. A bad value: 400 with the reason."""
    given = {"user": user, "verdict": verdict, "task": task, "since": since, "until": until}
    service = request.app.state.service
    if page is None and per_page is None and all(value is None for value in given.values()):
        return service.all_submissions()
    query = search.parse_query(**given, page=page, per_page=per_page)
    if page is None and per_page is None:
        return search.every_match(service, query)
    found = search.search(service, query)
    response.headers["X-Total-Count"] = str(found["total"])
    return found["rows"]


@router.get("/submissions/{submission_id}", response_model=Status, responses=error_responses(404, 422))
def submission(request: Request, submission_id: int = SubmissionId,
               account: Account = Depends(admin_account)) -> dict:
    """Any submission's status document, with the worker of each test point."""
    return visibility.status_for(request.app.state.service, account, submission_id)


@router.get("/submissions/{submission_id}/source", response_model=None,
            responses={**SOURCE_RESPONSES, **error_responses(404, 422)})
def submission_source(request: Request, submission_id: int = SubmissionId,
                      account: Account = Depends(admin_account)) -> PlainTextResponse:
    """Any submission's file."""
    return PlainTextResponse(visibility.source_for(request.app.state.service, account, submission_id)[1])


@router.post("/rejudge", status_code=202, response_model=Rejudged, responses=error_responses(400, 404, 422))
async def rejudge(request: Request, body: RejudgeRequest) -> dict:
    """Grade submissions again from scratch (ids, a user's, or all); answers once they are queued."""
    service = request.app.state.service
    try:
        ids = await run_in_threadpool(service.rejudge, body.ids, body.user, body.all)
    except LookupError as exc:
        raise NotFound(f"{exc}; nothing was rejudged") from None
    return {"ids": ids}


@router.get("/queue", response_model=GradingQueue)
def grading_queue(request: Request) -> dict:
    """The grading queue, as the admin page shows it: how many test points wait for a worker, and every
    running one with its worker, age and whether it is stuck."""
    return queries.grading_queue(request.app.state.service)


@router.get("/activity", response_model=GradingActivity)
def activity(request: Request) -> dict:
    """The last hour, minute by minute: test points queued or running at each minute's end, points graded
    in it and their verdicts (the admin page's graphs; CSV: ``/admin/activity.csv``)."""
    return progress.grading_activity(request.app.state.service)


@router.get("/workers", response_model=list[WorkerSeen])
def workers(request: Request) -> list[dict]:
    """The workers seen in the last minutes (claimed or finished a test point), most recently seen first."""
    return queries.recent_workers(request.app.state.service)


@router.get("/users")
def users(request: Request) -> list[dict]:
    """Every account (name, display name, flags, whether it has a token, its number of submissions)."""
    return plain_rows(accounts.list_users(request.app.state.service))


@router.get("/contest", response_model=Rules)
def rules(request: Request) -> dict:
    """The contest rules as stored."""
    return contest.get_rules(request.app.state.service).to_dict()


@router.patch("/contest", response_model=Rules, responses=error_responses(400, 422))
def change_rules(request: Request, body: RulesChange) -> dict:
    """Change some rules (fields left out stay; null clears). A new freeze time freezes again."""
    changes = {field: getattr(body, field) for field in body.model_fields_set}
    return contest.set_rules(request.app.state.service, **changes).to_dict()


@router.post("/contest/freeze", response_model=Rules)
def freeze(request: Request) -> dict:
    """Freeze the scoreboard now; the scheduled freeze (``freeze_at``) stays as it is."""
    return contest.freeze_now(request.app.state.service).to_dict()


@router.post("/contest/unfreeze", response_model=Rules)
def unfreeze(request: Request) -> dict:
    """Lift the scoreboard freeze in force: the public leaderboard counts every submission again. Before
    the scheduled freeze's time, that freeze stays to come."""
    return contest.unfreeze(request.app.state.service).to_dict()
