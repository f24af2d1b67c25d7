"""What every page has: the security headers, the caller's account and the contest rules in the context
(``page``), the error page, the redirect to the login page, a CSV download (``csv_download``)."""
from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

from fastapi import Path, Request
from fastapi.responses import RedirectResponse, Response

from grader.service import contest, messages
from grader.web.http import cookie_session as session

from . import render as views

MAX_ID = 2**31 - 1
SubmissionId = Path(ge=1, le=MAX_ID)
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data:; frame-ancestors 'self'; form-action 'self'; base-uri 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"}
SVG_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'self'",
               "X-Content-Type-Options": "nosniff", "Cache-Control": "private, max-age=3600"}


def page(request: Request, template: str, status: int = 200, **context) -> Response:
    """Render with the page headers, the caller's account, the contest rules and the messages badge."""
    if "account" not in context:
        context["account"] = session.page_account(request)
    if "rules" not in context:
        context["rules"] = contest.get_rules(request.app.state.service)
    if "badge" not in context:  # the unread answers and announcements beside "Messages" (pages.messages)
        account = context["account"]
        context["badge"] = None if account is None else messages.unread(request.app.state.service, account)
    return views.render(request, template, status, headers=PAGE_HEADERS, **context)


def error_page(request: Request, status: int, heading: str, message: str, account=None) -> Response:
    """The error page (``error.html``) with ``status``, a heading and a message; its header is the
    caller's (``account``, else the session's: a logged-in user's 404 keeps their name and links)."""
    known = {} if account is None else {"account": account}
    return page(request, "error.html", status, code=status, heading=heading, message=message, **known)


def to_login(request: Request) -> RedirectResponse:
    """A redirect (303) to the login page, which comes back here after logging in."""
    return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)


def csv_download(text: str, name: str) -> Response:
    """``text`` (CSV) as a download named ``NAME-<UTC time>.csv``, with the page headers, never cached."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={**PAGE_HEADERS, "Cache-Control": "no-store",
                             "Content-Disposition": f'attachment; filename="{name}-{stamp}.csv"'})
