"""The contest's window and per-user submission limits (``grader.service.contest``'s rules), applied.

- window: a submission before ``starts_at`` or at/after ``ends_at`` is refused (403 ``not_started`` /
  ``ended``);
- limits, per user: at most one submission every ``min_interval_seconds``, at most ``max_per_hour`` in any
  hour (a sliding window of 3600 s), at most ``max_pending`` not yet graded (queued or running). A
  refusal is 429 ``rate_limited`` / ``hourly_limit`` / ``too_many_pending`` with the seconds to wait.

``admit`` is the check ``Service.accept`` runs inside the intake's transaction, after locking the user's
row, so two concurrent submissions of one user cannot both pass a limit; ``check`` and ``check_in`` are
the server's early read-only check, ``allowance`` what a page shows. Organisers (admin accounts) are not
held to the window or the limits (their callers do not call these).

Public API: ``admit``, ``check``, ``check_in``, ``allowance``, ``PENDING_RETRY_SECONDS``.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import db.contest as contest_db
from db.base import utcnow
from grader.refusals import Forbidden, Refusal, TooMany

from .contest import Rules
from .database import Database

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

HOUR = timedelta(hours=1)
PENDING_RETRY_SECONDS = 15  # a submission is graded in about this time; then a pending slot may be free


def _window_refusal(rules: Rules, now: datetime) -> Refusal | None:
    if rules.starts_at is not None and now < rules.starts_at:
        return Forbidden(f"the contest has not started: it opens at {rules.starts_at.isoformat()} "
                         f"(server time now {now.isoformat(timespec='seconds')})", code="not_started")
    if rules.ends_at is not None and now >= rules.ends_at:
        return Forbidden(f"the contest ended at {rules.ends_at.isoformat()}; no more submissions are accepted",
                         code="ended")
    return None


def _limit_refusals(session: Session, rules: Rules, user_id: int, now: datetime) -> list[TooMany]:
    """Every limit the user is at right now, each with its wait (empty: a submission may go in)."""
    refusals = []
    if rules.min_interval_seconds:
        last = contest_db.last_submission(session, user_id)
        wait = rules.min_interval_seconds - (now - last).total_seconds() if last else 0
        if wait > 0:
            refusals.append(TooMany(f"one submission every {rules.min_interval_seconds:g} s: try again in "
                                    f"{wait:.0f} s", retry_after=wait))
    if rules.max_per_hour is not None:
        times = contest_db.recent_submissions(session, user_id, now - HOUR)
        if len(times) >= rules.max_per_hour:
            wait = (times[len(times) - rules.max_per_hour] + HOUR - now).total_seconds()
            refusals.append(TooMany(f"at most {rules.max_per_hour} submissions per hour: try again in "
                                    f"{wait:.0f} s", code="hourly_limit", retry_after=wait))
    if rules.max_pending is not None:
        pending = contest_db.pending_count(session, user_id)
        if pending >= rules.max_pending:
            refusals.append(TooMany(f"you have {pending} submission(s) not graded yet (at most "
                                    f"{rules.max_pending}): wait for a result", code="too_many_pending",
                                    retry_after=PENDING_RETRY_SECONDS))
    return refusals


def admit(session: Session, user_id: int, now: datetime | None = None) -> None:
    """The intake's rule check (``Service.accept(..., admit=admit)``), inside its transaction: lock the
    user's row, read the rules, and raise the first ``Refusal`` that applies (403 window, 429 limit)."""
    contest_db.lock_user(session, user_id)
    _refuse(session, user_id, now or utcnow())


def _refuse(session: Session, user_id: int, now: datetime) -> None:
    """Raise the ``Refusal`` the rules give user ``user_id`` at ``now``, if any (``_refusal``)."""
    refusal = _refusal(session, Rules.from_row(contest_db.get_contest(session)), user_id, now)
    if refusal is not None:
        raise refusal


def _refusal(session: Session, rules: Rules, user_id: int, now: datetime) -> Refusal | None:
    """The window's refusal, else the limit that lasts longest, else None."""
    window = _window_refusal(rules, now)
    if window is not None:
        return window
    limits = _limit_refusals(session, rules, user_id, now)
    return max(limits, key=lambda r: r.retry_after) if limits else None


def check(database: Database, user_id: int) -> None:
    """The rules of ``admit`` in a read-only snapshot: the server's early check, so that a refused upload
    stores nothing at all (``Service.accept`` checks again, authoritatively, under the user's lock)."""
    with database.read_session() as session:
        check_in(session, user_id)


def check_in(session: Session, user_id: int) -> None:
    """``check`` in a snapshot the caller holds (the API's intake reads the token's account in the same
    one). Raises the ``Refusal`` that applies now, if any."""
    _refuse(session, user_id, utcnow())


def allowance(database: Database, user_id: int, now: datetime | None = None) -> dict[str, Any]:
    """What user ``user_id`` may do now: ``{"can_submit", "reason", "rule" (the reason without its wait),
    "retry_after" (seconds or None),
    "pending", "submitted_last_hour", "remaining_this_hour" (None: no hourly limit)}``."""
    now = now or utcnow()
    with database.read_session() as session:
        rules = Rules.from_row(contest_db.get_contest(session))
        worst = _refusal(session, rules, user_id, now)
        hour = len(contest_db.recent_submissions(session, user_id, now - HOUR))
        pending = contest_db.pending_count(session, user_id)
    return {"can_submit": worst is None, "reason": worst.message if worst else None,
            # the rule alone, without the wait that _limit_refusals appends (pages say the wait their way)
            "rule": worst.message.split(": try again in ")[0] if worst else None,
            "retry_after": worst.retry_after if worst else None, "pending": pending,
            "submitted_last_hour": hour,
            "remaining_this_hour": None if rules.max_per_hour is None else max(0, rules.max_per_hour - hour)}
