"""Contest communication over the API: contestants ask and read (``/api/v1/clarifications``,
``/api/v1/announcements``, a token needed), organisers list, answer, ignore and announce
(``/api/v1/admin/clarifications``, ``/api/v1/admin/announcements``, an admin token). Thin over
``grader.service.messages``, which checks the texts, the task and the hourly question limit (400, 429)
and answers 404 for another user's private question exactly as for a missing one."""
from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request

from grader.service import messages
from grader.service.accounts import Account
from grader.web.http.auth import admin_account, current_account
from grader.web.http.error_responses import error_responses

from .schemas import Announcement, AnnounceRequest, AnswerRequest, AskRequest, OrganiserQuestion, Question

MAX_ID = 2**31 - 1
QuestionId = Path(ge=1, le=MAX_ID, description="a question's id")

router = APIRouter(prefix="/api/v1", tags=["contestant"], responses=error_responses(401, 403, 503))
admin_router = APIRouter(prefix="/api/v1/admin", tags=["admin"], dependencies=[Depends(admin_account)],
                         responses=error_responses(401, 403, 503))


@router.post("/clarifications", status_code=201, response_model=Question, responses=error_responses(400, 422, 429))
def ask(request: Request, body: AskRequest, account: Account = Depends(current_account)) -> dict:
    """Ask the organisers a question (about a task, or general). Allowed before, during and after the
    contest; 429 over the contest's hourly question limit (with Retry-After)."""
    return messages.ask(request.app.state.service, account, body.text, body.task)


@router.get("/clarifications", response_model=list[Question])
def clarifications(request: Request, account: Account = Depends(current_account)) -> list[dict]:
    """The caller's own questions (with their answers) and every published question, newest first."""
    return messages.clarifications_for(request.app.state.service, account)


@router.get("/clarifications/{clarification_id}", response_model=Question, responses=error_responses(404, 422))
def clarification(request: Request, clarification_id: int = QuestionId,
                  account: Account = Depends(current_account)) -> dict:
    """One question the caller may read: their own or a published one (404 otherwise)."""
    return messages.clarification_for(request.app.state.service, account, clarification_id)


@router.get("/announcements", response_model=list[Announcement])
def announcements(request: Request, _account: Account = Depends(current_account)) -> list[dict]:
    """The organisers' announcements, pinned first, then newest first (a frozen scoreboard hides none)."""
    return messages.announcements(request.app.state.service)


@admin_router.get("/clarifications", response_model=list[OrganiserQuestion])
def all_clarifications(request: Request, every: bool = Query(False, alias="all",
                                                            description="every question, newest first")) -> list[dict]:
    """The open questions, oldest first (the queue); with ``all=true`` every question, newest first."""
    service = request.app.state.service
    return messages.all_questions(service) if every else messages.open_questions(service)


@admin_router.post("/clarifications/{clarification_id}/answer", response_model=OrganiserQuestion,
                   responses=error_responses(400, 404, 422))
def answer(request: Request, body: AnswerRequest, clarification_id: int = QuestionId,
           account: Account = Depends(admin_account)) -> dict:
    """Answer a question, to its author or to everyone (``publish``, optionally reworded)."""
    return messages.answer(request.app.state.service, account, clarification_id, body.text, body.publish,
                           body.public_text)


@admin_router.post("/clarifications/{clarification_id}/ignore", response_model=OrganiserQuestion,
                   responses=error_responses(404, 422))
def ignore(request: Request, clarification_id: int = QuestionId, account: Account = Depends(admin_account)) -> dict:
    """Close a question without an answer (its author sees it as ignored)."""
    return messages.ignore(request.app.state.service, account, clarification_id)


@admin_router.post("/announcements", status_code=201, response_model=Announcement,
                   responses=error_responses(400, 422))
def announce(request: Request, body: AnnounceRequest, account: Account = Depends(admin_account)) -> dict:
    """Announce something to everyone (``pinned``: listed first)."""
    return messages.announce(request.app.state.service, account, body.text, body.pinned)
