"""The contest's rules and what they mean: the window, the per-user submission limits, the scoreboard freeze.

The rules live in the database (``db.contest``), so every server process and worker agrees; unset values
mean "no limit", which is the behaviour of a service without a contest. Set by ``kdt-grade admin contest
set`` or the admin API; read by the server for each submission:

- window: a submission before ``starts_at`` or at/after ``ends_at`` is refused (403 ``not_started`` /
  ``ended``);
- limits, per user: at most one submission every ``min_interval_seconds``, at most ``max_per_hour`` in any
  hour (a sliding window of 3600 s), at most ``max_pending`` not yet graded (queued or running). A
  refusal is 429 ``rate_limited`` / ``hourly_limit`` / ``too_many_pending`` with the seconds to wait;
- questions: at most ``max_questions_per_hour`` clarification requests per user in any hour (what it
  means is ``grader.service.messages``');
- freeze: from ``freeze_at`` on (the scheduled freeze, typically the last hour), the public leaderboard
  counts only submissions made before it, until an organiser unfreezes it (``unfrozen``). An organiser may
  also freeze it now (``freeze_now``): that freeze is stored apart (``frozen_since``), so the scheduled one
  stays; ``unfreeze`` lifts the freeze now in force, and the scheduled one too only once its time has come
  (unfreezing a manual freeze before ``freeze_at`` leaves the last hour's freeze to come). While both are
  in force the earlier counts. A contestant still sees their own results in full.

What the window and the limits refuse is ``grader.service.submission_limits``; what the freeze hides,
``grader.service.standings``.

Public API: ``Rules``, ``parse_time``, ``parse_setting``, ``setting_text``, ``get_rules``, ``set_rules``,
``set_rules_from_text``, ``freeze_now``, ``unfreeze``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import db.contest as contest_db
from db.base import utcnow
from grader.display import hidden_characters
from grader.refusals import BadRequest

from .database import Database
from .rows import plain


SETTABLE = tuple(field for field in contest_db.FIELDS if field != "frozen_since")  # set_rules' keys


@dataclass(frozen=True)
class Rules:
    """The contest rules (``db.contest`` fields). Times are aware UTC datetimes or None; limits None = none."""

    name: str | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    freeze_at: datetime | None = None
    unfrozen: bool = False
    frozen_since: datetime | None = None
    min_interval_seconds: float | None = None
    max_per_hour: int | None = None
    max_pending: int | None = None
    max_questions_per_hour: int | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Rules:
        return cls(**{field: row[field] for field in contest_db.FIELDS})

    def scheduled_freeze_in_force(self, now: datetime) -> bool:
        """True from ``freeze_at`` on, until an organiser lifted it (``unfrozen``)."""
        return self.freeze_at is not None and now >= self.freeze_at and not self.unfrozen

    def frozen(self, now: datetime) -> bool:
        """True while the public leaderboard is frozen: by the schedule, or by an organiser's freeze."""
        return self.leaderboard_cutoff(now) is not None

    def leaderboard_cutoff(self, now: datetime) -> datetime | None:
        """The time before which submissions count on the public leaderboard (None: all count): the
        earlier of the freezes in force (the scheduled one, the manual one)."""
        in_force = []
        if self.scheduled_freeze_in_force(now):
            in_force.append(self.freeze_at)
        if self.frozen_since is not None and now >= self.frozen_since:
            in_force.append(self.frozen_since)
        return min(in_force, default=None)

    def to_dict(self) -> dict[str, Any]:
        """Plain data, times as ISO 8601 strings."""
        return plain(asdict(self))


def parse_time(text: str | None) -> datetime | None:
    """An ISO 8601 time with an offset (``2026-12-06T09:00+08:00``, ``...Z``) as aware UTC; ``none`` or an
    empty string gives None (clear). Raises ``BadRequest`` for anything else, including a time without an
    offset (which would be ambiguous between the organisers' and the server's zone)."""
    if text is None or text.strip().lower() in ("", "none"):
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise BadRequest(f"not an ISO 8601 time: {text!r} (example: 2026-12-06T09:00+08:00)") from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise BadRequest(f"{text!r} has no UTC offset; write e.g. {text.strip()}+08:00 or {text.strip()}Z")
    if not _plausible(value):
        raise BadRequest(f"{text.strip()} is not a plausible contest time")
    return value.astimezone(UTC)


TIME_SETTINGS = ("starts_at", "ends_at", "freeze_at")
COUNT_SETTINGS = ("max_per_hour", "max_pending", "max_questions_per_hour")
TEXT_SETTINGS = ("name", *TIME_SETTINGS, "min_interval_seconds", *COUNT_SETTINGS)  # parse_setting's keys


def parse_setting(key: str, text: str) -> Any:
    """The value of setting ``key`` (one of ``TEXT_SETTINGS``) from its text, as a command's option or a
    form field gives it: empty or ``none`` clears it (None: no limit); times as ``parse_time``;
    ``min_interval_seconds`` a number of seconds, the ``*_per_hour`` and ``max_pending`` counts whole
    numbers; the name as given, stripped. Ranges are ``set_rules``' to check. Raises ``BadRequest`` for
    text that is not such a value, ``KeyError`` for another key."""
    if key not in TEXT_SETTINGS:
        raise KeyError(key)
    if key in TIME_SETTINGS:
        return parse_time(text)
    text = text.strip()
    if text.lower() in ("", "none"):
        return None
    if key == "name":
        return text
    kind = int if key in COUNT_SETTINGS else float
    try:
        return kind(text)
    except ValueError:
        whole = "a whole number" if kind is int else "a number"
        raise BadRequest(f"expected {whole} or `none`, got {text!r}") from None


def setting_text(value) -> str:
    """A stored setting as a form shows it, ``parse_setting``'s inverse (reading the text back gives the same
    value): a time in ISO 8601 (UTC, to the minute, second or microsecond it needs), a number without a
    needless ``.0``, '' for none."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        # as exact as stored: the text read back must be the same value, or saving the form would
        # change it (and a changed freeze time freezes the board again)
        spec = "microseconds" if value.microsecond else "seconds" if value.second else "minutes"
        return value.astimezone(UTC).isoformat(timespec=spec)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def set_rules_from_text(database: Database, texts: dict[str, str]) -> tuple[Rules, list[str]]:
    """Set the rules of a form that sends every setting (``{key: text}``, keys of ``TEXT_SETTINGS``): each
    text is read by ``parse_setting`` and only the settings whose value differs from the stored one are
    changed, so sending an unchanged freeze time again does not freeze again after an unfreeze. Returns
    the rules after and the keys changed (sorted; none: nothing was written). Raises ``BadRequest`` (as
    ``parse_setting``, its message then starting with the key, and ``set_rules``) and then stores nothing."""
    parsed = {}
    for key, text in texts.items():
        try:
            parsed[key] = parse_setting(key, text)
        except BadRequest as exc:
            raise BadRequest(f"{key}: {exc.message}") from None
    current = get_rules(database)
    changes = {key: value for key, value in parsed.items() if getattr(current, key) != value}
    if not changes:
        return current, []
    return set_rules(database, **changes), sorted(changes)


def get_rules(database: Database) -> Rules:
    """The current rules from the database."""
    with database.read_session() as session:
        return Rules.from_row(contest_db.get_contest(session))


MAX_INTERVAL_SECONDS = 7 * 24 * 3600  # a week: more is a typo (and infinity would break every Retry-After)
MAX_COUNT = 1_000_000                  # per hour / pending: far above any contest, far below a 64-bit column


def _plausible(moment: datetime) -> bool:
    """A contest time in the years 2000-2999 (UTC); anything else is a typo (or overflows)."""
    try:
        return 2000 <= moment.astimezone(UTC).year <= 2999
    except OverflowError:
        return False


def _validated(current: Rules, changes: dict[str, Any]) -> dict[str, Any]:
    merged = {**asdict(current), **changes}
    interval = merged["min_interval_seconds"]
    if interval is not None and not 0 <= interval <= MAX_INTERVAL_SECONDS:  # also refuses nan and inf
        raise BadRequest(f"--min-interval must be between 0 and {MAX_INTERVAL_SECONDS} seconds, got {interval}")
    for key, option in (("max_per_hour", "--max-per-hour"), ("max_pending", "--max-pending"),
                        ("max_questions_per_hour", "--max-questions-per-hour")):
        if merged[key] is not None and not 1 <= merged[key] <= MAX_COUNT:
            raise BadRequest(f"{option} must be between 1 and {MAX_COUNT} (unset it with `none` for no limit)")
    for key in ("starts_at", "ends_at", "freeze_at"):
        if merged[key] is not None and not _plausible(merged[key]):
            raise BadRequest(f"{key}: {merged[key].isoformat()} is not a plausible contest time")
    if merged["starts_at"] and merged["ends_at"] and merged["ends_at"] <= merged["starts_at"]:
        raise BadRequest(f"the end ({merged['ends_at'].isoformat()}) must be after the start "
                         f"({merged['starts_at'].isoformat()})")
    if merged["name"] is not None and len(merged["name"]) > contest_db.NAME_MAX_LENGTH:
        raise BadRequest(f"the contest name has at most {contest_db.NAME_MAX_LENGTH} characters")
    hidden = hidden_characters(merged["name"] or "")
    if hidden:
        raise BadRequest(f"the contest name may hold no control or invisible formatting characters (found "
                         f"{', '.join(hidden[:5])})")
    if "freeze_at" in changes:
        changes = {**changes, "unfrozen": False}  # a new freeze time freezes again
    return changes


def set_rules(database: Database, **changes: Any) -> Rules:
    """Change the given rules (keys of ``Rules`` but ``frozen_since``, which only ``freeze_now`` and
    ``unfreeze`` set; None clears one) and return the new rules. Setting ``freeze_at`` (the schedule) also
    clears ``unfrozen``. Raises ``BadRequest`` for a negative interval, a limit below 1, an end not after
    the start or an unknown field."""
    unknown = set(changes) - set(SETTABLE)
    if unknown:
        raise BadRequest(f"unknown contest settings {sorted(unknown)}")
    with database.session() as session:
        current = Rules.from_row(contest_db.get_contest(session))
        return Rules.from_row(contest_db.update_contest(session, **_validated(current, changes)))


def freeze_now(database: Database, now: datetime | None = None) -> Rules:
    """Freeze the public leaderboard from ``now`` on (the admin page's button, ``admin contest freeze``,
    ``POST /api/v1/admin/contest/freeze``), apart from the scheduled ``freeze_at``, which stays as it is.
    Already frozen: nothing changes (the earlier freeze time stands)."""
    now = now or utcnow()
    with database.session() as session:
        current = Rules.from_row(contest_db.get_contest(session))
        if current.frozen(now):
            return current
        return Rules.from_row(contest_db.update_contest(session, frozen_since=now))


def unfreeze(database: Database, now: datetime | None = None) -> Rules:
    """Lift the freeze in force: the public leaderboard counts every submission again. A manual freeze is
    cleared; the scheduled one is lifted (``unfrozen``) only once its time has come, so unfreezing before
    ``freeze_at`` keeps the last hour's freeze to come (a new ``freeze_at`` arms it again)."""
    now = now or utcnow()
    with database.session() as session:
        current = Rules.from_row(contest_db.get_contest(session))
        changes: dict[str, Any] = {"frozen_since": None}
        if current.freeze_at is not None and now >= current.freeze_at:
            changes["unfrozen"] = True
        return Rules.from_row(contest_db.update_contest(session, **changes))
