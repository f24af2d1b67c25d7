"""The organisers' contest rules page ``/admin/contest`` (an admin account's session): the settings that
``kdt-grade admin contest set`` changes (name, start, end, scheduled freeze, submission and question
limits) in one form, read and checked by the same service functions (``contest.set_rules_from_text``:
``parse_setting`` for the text, ``set_rules`` for the ranges). A refusal shows the form again as sent,
with the reason beside the setting at fault, and stores nothing (400). Only the settings that differ
from the stored ones are changed, so saving the form unchanged never arms a lifted freeze again.

The freeze by hand and the unfreeze stay the admin page's confirmed buttons; this page says which freeze
is in force.
"""
from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response

from grader.refusals import BadRequest
from grader.service import contest

from . import render as views
from .admin import checked, organiser_account
from .base import page

router = APIRouter(prefix="/admin/contest", include_in_schema=False)

# (setting, label, the option of `admin contest set`, hint): the form's fields, in order
FIELDS = (
    ("name", "Contest name", "--name", "in every page's header; empty: none"),
    ("starts_at", "Start", "--start", "ISO 8601 with a UTC offset, e.g. 2026-12-06T09:00+08:00; empty: open now"),
    ("ends_at", "End", "--end", "ISO 8601 with a UTC offset; empty: no end"),
    ("freeze_at", "Scheduled freeze", "--freeze", "from this time the public scoreboard counts only earlier "
     "submissions; empty: never. A new time freezes again after an unfreeze"),
    ("min_interval_seconds", "Seconds between two submissions of a user", "--min-interval", "empty: no limit"),
    ("max_per_hour", "Submissions per user in any hour", "--max-per-hour", "empty: no limit"),
    ("max_pending", "Submissions per user not graded yet", "--max-pending", "empty: no limit"),
    ("max_questions_per_hour", "Questions per user in any hour", "--max-questions-per-hour", "empty: no limit"),
)
NOTICES = {"saved": "The contest rules are saved: every server and worker applies them from now on.",
           "unchanged": "Nothing was changed: the form had the rules as stored."}


def field_at_fault(message: str) -> str | None:
    """The setting a refusal's message names (by its key or its option), or None."""
    for key, _label, option, _hint in FIELDS:
        if message.startswith(f"{key}:") or option in message.split() or f"{key} " in message:
            return key
    return None


def freeze_state(rules, now: datetime) -> str:
    """Which freeze is in force now, in words."""
    cutoff = rules.leaderboard_cutoff(now)
    if cutoff is None:
        lifted = " (the scheduled one was lifted by an unfreeze)" if rules.unfrozen else ""
        return f"The public scoreboard is not frozen{lifted}."
    how = "by hand" if cutoff == rules.frozen_since else "as scheduled"
    return f"The public scoreboard is frozen {how} since {views.time_text(cutoff)}."


def rules_page(request: Request, account, status: int = 200, *, values: dict[str, str] | None = None,
               error: str | None = None, notice: str | None = None) -> Response:
    """The form with ``values`` (default: the stored rules); ``error``: the refusal, beside its setting."""
    rules = contest.get_rules(request.app.state.service)
    values = values or {key: contest.setting_text(getattr(rules, key)) for key, *_ in FIELDS}
    fault = field_at_fault(error) if error else None
    if fault and error.startswith(f"{fault}: "):  # the setting's label instead of its key
        error = error[len(fault) + 2:]
    fields = [{"key": key, "label": label, "option": option, "hint": hint, "value": values[key],
               "error": error if key == fault else None} for key, label, option, hint in FIELDS]
    labels = {key: label for key, label, _option, _hint in FIELDS}
    summary = f"{labels[fault]}: see below" if fault else error
    return page(request, "contest_rules.html", status, account=account, rules=rules, fields=fields,
                error=None if error is None else f"Nothing was saved ({summary}).", notice=notice,
                freeze_state=freeze_state(rules, datetime.now(UTC)))


@router.get("")
def rules_form(request: Request, notice: str | None = Query(None, max_length=32)) -> Response:
    """The contest rules as stored, in the form."""
    account = organiser_account(request)
    if isinstance(account, Response):
        return account
    return rules_page(request, account, notice=NOTICES.get(notice or ""))


def setting_field():
    """A setting's form field (a new FastAPI parameter each time)."""
    return Form("", max_length=400)


@router.post("")
def save_rules(request: Request, csrf: str = Form("", max_length=128), name: str = setting_field(),
               starts_at: str = setting_field(), ends_at: str = setting_field(), freeze_at: str = setting_field(),
               min_interval_seconds: str = setting_field(), max_per_hour: str = setting_field(),
               max_pending: str = setting_field(), max_questions_per_hour: str = setting_field()) -> Response:
    """Store what the form changed (``contest.set_rules_from_text``) and come back with a notice; a
    refusal: the form again as sent with the reason (400), nothing stored."""
    account = checked(request, csrf)
    if isinstance(account, Response):
        return account
    values = {"name": name, "starts_at": starts_at, "ends_at": ends_at, "freeze_at": freeze_at,
              "min_interval_seconds": min_interval_seconds, "max_per_hour": max_per_hour,
              "max_pending": max_pending, "max_questions_per_hour": max_questions_per_hour}
    try:
        _rules, changed = contest.set_rules_from_text(request.app.state.service, values)
    except BadRequest as exc:
        return rules_page(request, account, 400, values=values, error=exc.message)
    return RedirectResponse(f"/admin/contest?notice={'saved' if changed else 'unchanged'}", status_code=303)
