"""The organisers' users page ``/admin/users`` (an admin account's session): every account (login, display
name, admin, disabled, submissions), adding one, importing a list, disabling / enabling one and giving
one a new token. Thin over ``grader.service.accounts``, the functions ``kdt-grade admin users`` calls.

A new token is shown once, on the answer to the POST that made it (never in a link, never stored: the
database keeps only its hash; every page is ``Cache-Control: no-store``). Disable and reset-token are confirmed
first, as the admin page's buttons are (``admin.confirm_page``); enable is not (it takes nothing away).
An import is all or nothing (``accounts.import_user_csv``): pasted into the form or uploaded as a file in
the format of ``admin users import``; a bad line is named and nothing is stored.

After disable / enable the page says what was done through ``/admin/users?notice=CODE&id=USER_ID``: a
code of ``NOTICES`` and the account's id, whose name the page looks up (never text from the link).
"""
from __future__ import annotations

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from grader.csv_format import csv_text
from grader.refusals import BadRequest, Forbidden, TooLarge
from grader.service import accounts
from grader.service.accounts import Account
from grader.web.http.csrf import check_csrf
from grader.web.http.upload import read_upload_form

from .admin import CONFIRMED, checked, confirm_field, confirm_page, organiser_account
from .base import error_page, page

router = APIRouter(prefix="/admin/users", include_in_schema=False)

NOTICES = {
    "disabled": "{name} is disabled: its token answers 403 and its page sessions have ended.",
    "enabled": "{name} is enabled again: its token works as before.",
}
IMPORT_MAX_BYTES = 32 * 1024  # an uploaded list (about 1,000 lines); longer ones: `kdt-grade admin users import`


def user_field():
    """The ``user`` form field: an account name (a new FastAPI parameter each time)."""
    return Form("", max_length=100)


def users_page(request: Request, account, status: int = 200, *, error: str | None = None,
               notice: str | None = None, add_form: dict | None = None, import_text: str = "") -> Response:
    """The users page: the list, the add and import forms (as sent, after a refusal: ``error``)."""
    users = accounts.list_users(request.app.state.service)
    return page(request, "users.html", status, account=account, users=users, error=error, notice=notice,
                add_form=add_form or {"name": "", "display_name": "", "admin": False}, import_text=import_text,
                import_max_bytes=IMPORT_MAX_BYTES)


def notice_text(code: str | None, user_id: str | None, users: list[dict]) -> str | None:
    """The message of ``code`` (``NOTICES``) about the account with id ``user_id``; None when either is
    unknown."""
    template = NOTICES.get(code or "")
    named = [u["name"] for u in users if user_id and user_id.isdigit() and u["id"] == int(user_id)]
    return template.format(name=named[0]) if template and named else None


@router.get("")
def users_list(request: Request, notice: str | None = Query(None, max_length=32),
               id: str | None = Query(None, max_length=12)) -> Response:
    """Every account, and the forms to add, import, disable, enable and reset."""
    account = organiser_account(request)
    if isinstance(account, Response):
        return account
    users = accounts.list_users(request.app.state.service)
    return users_page(request, account, notice=notice_text(notice, id, users))


def tokens_page(request: Request, heading: str, lines: list[str], created: list[tuple[str, str]]) -> Response:
    """The page that shows new tokens, once: a table and the same as ``name,token`` CSV to copy."""
    return page(request, "tokens.html", heading=heading, lines=lines, created=created,
                csv=csv_text([{"name": n, "token": t} for n, t in created], ["name", "token"]))


@router.post("/add")
def add(request: Request, name: str = Form("", max_length=200), display_name: str = Form("", max_length=400),
        admin: str = Form("", max_length=8), csrf: str = Form("", max_length=128)) -> Response:
    """Create an account (``accounts.add_user``) and show its token once; a refusal (a bad or taken name,
    a bad display name) shows the form again with the reason (400), nothing stored."""
    account = checked(request, csrf)
    if isinstance(account, Response):
        return account
    is_admin, name = bool(admin), name.strip()
    try:
        _row, token = accounts.add_user(request.app.state.service, name, display_name, is_admin)
    except BadRequest as exc:
        return users_page(request, account, 400, error=f"Nobody was added: {exc.message}.",
                          add_form={"name": name, "display_name": display_name, "admin": is_admin})
    role = "an organiser (admin pages and API, no window or limits)" if is_admin else "a contestant"
    return tokens_page(request, f"User {name} added", [f"{name} is {role}."], [(name, token)])


@router.post("/import")
async def import_users(request: Request) -> Response:
    """Create the accounts of a list (``name[,display_name]`` lines, as ``admin users import`` reads), from
    the uploaded file ``file`` or else the pasted ``text``, all or nothing, and show their tokens once. A
    refusal shows the form again with the reason, the bad line named (400; 413 for a file over
    ``IMPORT_MAX_BYTES``), nothing stored."""
    account = await run_in_threadpool(organiser_account, request)  # before the body is read
    if isinstance(account, Response):
        return account
    try:
        _name, data, fields = await read_upload_form(request, IMPORT_MAX_BYTES, require_file=False)
        check_csrf(request, fields.get("csrf", "")[:128])
    except Forbidden as exc:
        return await run_in_threadpool(error_page, request, 403, "Refused", exc.message, account)
    except TooLarge:
        return await run_in_threadpool(users_page, request, account, 413, error=(
            f"Nothing was imported: the file is larger than {IMPORT_MAX_BYTES // 1024} KiB; import it in parts "
            "or with `kdt-grade admin users import FILE` on the server."))
    except BadRequest as exc:
        return await run_in_threadpool(users_page, request, account, 400,
                                       error=f"Nothing was imported: {exc.message}.")
    pasted = fields.get("text", "")
    try:
        text = data.decode("utf-8-sig") if data else pasted
        created = await run_in_threadpool(_import, request, text)
    except UnicodeDecodeError:
        created = BadRequest("the file is not UTF-8 text")
    if isinstance(created, BadRequest):
        return await run_in_threadpool(users_page, request, account, 400, import_text=pasted,
                                       error=f"Nothing was imported: {created.message}.")
    return await run_in_threadpool(tokens_page, request, f"{len(created)} user(s) imported",
                                   [f"The accounts of {'the file' if data else 'the list'}, in its order."], created)


def _import(request: Request, text: str) -> list[tuple[str, str]] | BadRequest:
    """``accounts.import_user_csv`` of ``text``, or the refusal (a list of no user is one)."""
    try:
        created = accounts.import_user_csv(request.app.state.service, text)
    except BadRequest as exc:
        return exc
    return created or BadRequest("the list names no user (lines `name[,display_name]`)")


def _target(request: Request, account, name: str) -> dict | Response:
    """The listed account called ``name``, or the error page (404) when there is none."""
    found = [u for u in accounts.list_users(request.app.state.service) if u["name"] == name]
    if not found:
        return error_page(request, 404, "No such user", f"There is no user {name!r}; nothing was changed.", account)
    return found[0]


def _acting_on(request: Request, csrf: str, user: str) -> tuple[Account, dict] | Response:
    """``(the organiser acting, the listed account called user)`` of a users form, or the page that
    refuses it: not an organiser or a bad CSRF token (``checked``), no such user (404)."""
    account = checked(request, csrf)
    if isinstance(account, Response):
        return account
    target = _target(request, account, user)
    return target if isinstance(target, Response) else (account, target)


def _back(code: str, user_id: int) -> RedirectResponse:
    assert code in NOTICES
    return RedirectResponse(f"/admin/users?notice={code}&id={user_id}", status_code=303)


@router.post("/disable")
def disable(request: Request, user: str = user_field(), csrf: str = Form("", max_length=128),
            confirm: str = confirm_field()) -> Response:
    """Disable an account, once confirmed (``accounts.set_disabled``): its token answers 403 and its page
    sessions end. An organiser's own account is refused (400): nobody could enable it from its session."""
    acting = _acting_on(request, csrf, user)
    if isinstance(acting, Response):
        return acting
    account, target = acting
    if target["id"] == account.id:
        return error_page(request, 400, "Not disabled", "You cannot disable your own account: you would be "
                          "locked out at once. Another organiser can.", account)
    if confirm != CONFIRMED:
        return confirm_page(request, account, heading=f"Disable {user}", action="/admin/users/disable",
                            lines=[f"{user}'s token stops working at once (403) and every page session of the "
                                   "account ends: no more submissions, questions or pages.",
                                   f"Its {target['submissions']} submission(s) stay, and so does its place on "
                                   "the scoreboard.", "Enable it again here whenever you like."],
                            button=f"Disable {user}", fields=(("user", user),), cancel="/admin/users")
    accounts.set_disabled(request.app.state.service, user, True)
    return _back("disabled", target["id"])


@router.post("/enable")
def enable(request: Request, user: str = user_field(), csrf: str = Form("", max_length=128)) -> Response:
    """Enable a disabled account again (its token works as before; nothing to confirm)."""
    acting = _acting_on(request, csrf, user)
    if isinstance(acting, Response):
        return acting
    account, target = acting
    accounts.set_disabled(request.app.state.service, user, False)
    return _back("enabled", target["id"])


@router.post("/reset-token")
def reset_token(request: Request, user: str = user_field(), csrf: str = Form("", max_length=128),
                confirm: str = confirm_field()) -> Response:
    """Give an account a new token, once confirmed (``accounts.reset_token``: the old one stops working and
    the account's page sessions end), and show it once."""
    acting = _acting_on(request, csrf, user)
    if isinstance(acting, Response):
        return acting
    account, target = acting
    own = target["id"] == account.id
    if confirm != CONFIRMED:
        lines = [f"{user}'s current token stops working at once (401), and every page session logged in "
                 "with it ends.", "The new token is shown once, on the next page: hand it over."]
        if own:
            lines.append("This is your own account: this session ends too; log in again with the new token.")
        return confirm_page(request, account, heading=f"Give {user} a new token", action="/admin/users/reset-token",
                            lines=lines, button=f"Reset {user}'s token", fields=(("user", user),),
                            cancel="/admin/users")
    token = accounts.reset_token(request.app.state.service, user)
    lines = [f"{user}'s old token no longer works."]
    if own:
        lines.append("Your page session has ended: log in again with this token.")
    return tokens_page(request, f"New token of {user}", lines, [(user, token)])
