"""Contest communication: contestants' clarification requests, organisers' answers and
announcements, and what each user has not read yet. Over ``db.messages``; used by the JSON API, the pages
and the CLI alike.

Rules, checked here (on the server) for every entry point:

- **Text limits**: a question has at most ``QUESTION_MAX_CHARS`` characters on ``QUESTION_MAX_LINES``
  lines, an answer, a public rewording or an announcement at most ``ANSWER_MAX_CHARS`` on
  ``ANSWER_MAX_LINES``. Line ends become ``\\n``, the text is stripped; an empty text, or one with a
  control character other than newline and tab or a lone surrogate, is refused (``BadRequest``, 400
  ``bad_text``; PostgreSQL could not even store a NUL). Nothing here is HTML: every entry point escapes
  what it shows.
- **Subject**: a task of ``judger.tasks.TASKS`` or None ("general"); another number is 400 ``bad_task``.
- **Rate limit**: at most ``max_questions_per_hour`` questions per user in any hour (a sliding window of
  3600 s), a contest rule stored with the others (``db.contest``, column of migration 0008; ``kdt-grade
  admin contest set --max-questions-per-hour``, ``PATCH /api/v1/admin/contest``); unset means no limit, as
  for the submission limits. Over it: ``TooMany`` (429 ``question_limit``, with the seconds to wait). A
  new column rather than the submission limits: asking and submitting are different budgets (a contestant
  at their submission limit must still be able to ask why). Organisers are not held to it.
- **Window**: asking is allowed before, during and after the contest window; a frozen scoreboard hides
  nothing here (announcements and answers are shown as soon as they are made).
- **Visibility**: a contestant sees their own questions (any state) and every published one (with the
  organiser's rewording when there is one, and without its author); another user's private question
  answers ``NotFound`` (404), exactly as a missing one. Organisers see everything, with author names.

Organisers answer privately (``publish=False``) or to everyone (``publish=True``, optionally with a
``public_text`` in place of the author's words), ignore, or announce (optionally pinned). The newest answer
to a question counts. Read marks: ``mark_read`` (the Messages page calls it when shown) makes every
answer and announcement made until then read; ``unread`` counts the rest.

Public API: ``QUESTION_MAX_CHARS``, ``QUESTION_MAX_LINES``, ``ANSWER_MAX_CHARS``, ``ANSWER_MAX_LINES``,
``checked_text``, ``ask``, ``clarifications_for``, ``clarification_for``, ``open_questions``,
``all_questions``, ``answer``, ``ignore``, ``announce``, ``announcements``, ``mark_read``, ``unread``,
``read_mark``, ``stamp``.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import db.contest as contest_db
import db.messages as messages_db
from db.base import utcnow
from db.users import get_user
from grader.refusals import BadRequest, NotFound, TooMany
from judger.tasks import TASKS

from .database import Database
from .rows import iso, plain

if TYPE_CHECKING:
    from .accounts import Account

QUESTION_MAX_CHARS, QUESTION_MAX_LINES = 2000, 30
ANSWER_MAX_CHARS, ANSWER_MAX_LINES = 4000, 60
HOUR = timedelta(hours=1)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def checked_text(text: str | None, what: str, max_chars: int, max_lines: int) -> str:
    """``text`` with ``\\r\\n`` and ``\\r`` as ``\\n`` and stripped, if it is within the limits; else
    ``BadRequest`` (400 ``bad_text``) naming ``what`` and the limit."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        raise BadRequest(f"the {what} is empty", code="bad_text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate ("\ud800" in JSON): no database can store it
        raise BadRequest(f"the {what} is not valid Unicode text", code="bad_text") from None
    if _CONTROL.search(text):
        raise BadRequest(f"the {what} contains a control character (only newlines and tabs are allowed)",
                         code="bad_text")
    if len(text) > max_chars:
        raise BadRequest(f"the {what} has {len(text)} characters; at most {max_chars} are allowed", code="bad_text")
    lines = text.count("\n") + 1
    if lines > max_lines:
        raise BadRequest(f"the {what} has {lines} lines; at most {max_lines} are allowed", code="bad_text")
    return text


def _question(text: str) -> str:
    return checked_text(text, "question", QUESTION_MAX_CHARS, QUESTION_MAX_LINES)


def _answer_text(text: str, what: str = "answer") -> str:
    return checked_text(text, what, ANSWER_MAX_CHARS, ANSWER_MAX_LINES)


def _task(task: int | None) -> int | None:
    if task is not None and task not in TASKS:
        raise BadRequest(f"there is no task {task}; the tasks are {', '.join(map(str, sorted(TASKS)))} "
                         "(leave the task out for a general question)", code="bad_task")
    return task


def _contestant_view(row: dict[str, Any]) -> dict[str, Any]:
    """A question as a contestant sees it (no user ids, no organiser)."""
    return {"id": row["id"], "task": row["task"], "text": row["text"], "created": iso(row["created"]),
            "state": row["state"], "answer": row["answer"], "published": row["published"],
            "answered_at": iso(row["handled_at"]) if row["state"] == "answered" else None,
            "mine": row.get("mine", True)}


def _organiser_views(session, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Questions as organisers see them: every field, times as ISO strings, and the author's and the
    handler's names."""
    names: dict[int, str | None] = {}
    for user_id in {r["author_id"] for r in rows} | {r["handled_by"] for r in rows if r["handled_by"]}:
        user = get_user(session, user_id)
        names[user_id] = user["name"] if user else None
    return [plain(r) | {"author": names.get(r["author_id"]), "handled_by_name": names.get(r["handled_by"])}
            for r in rows]


def ask(database: Database, account: Account, text: str, task: int | None = None,
        now: datetime | None = None) -> dict[str, Any]:
    """Store ``account``'s question (``task``: a task id, or None for a general question) and return it
    as the contestant sees it. Refusals (nothing stored): ``BadRequest`` (text or task), ``TooMany`` (the
    hourly question limit, with ``retry_after``). Checked under the user's row lock, so two concurrent
    questions cannot both pass the limit."""
    text, task, now = _question(text), _task(task), now or utcnow()
    with database.session() as session:
        contest_db.lock_user(session, account.id)
        if not account.is_admin:
            limit = contest_db.get_contest(session)["max_questions_per_hour"]
            if limit is not None:
                times = messages_db.questions_since(session, account.id, now - HOUR)
                if len(times) >= limit:
                    wait = (times[len(times) - limit] + HOUR - now).total_seconds()
                    raise TooMany(f"at most {limit} questions per hour: try again in {wait:.0f} s",
                                  code="question_limit", retry_after=wait)
        row = messages_db.ask(session, account.id, task, text, now)
    return _contestant_view(row)


def clarifications_for(database: Database, account: Account) -> list[dict[str, Any]]:
    """What ``account`` may read, newest first: their own questions (any state) and every published one
    (``mine`` false: reworded when an organiser did, no author)."""
    with database.read_session() as session:
        rows = messages_db.clarifications_for(session, account.id)
    return [_contestant_view(r) for r in rows]


def clarification_for(database: Database, account: Account, clarification_id: int) -> dict[str, Any]:
    """One question ``account`` may read (``NotFound`` for a missing one and another user's private one
    alike); organisers get the organisers' view of any question."""
    with database.read_session() as session:
        row = messages_db.clarification(session, clarification_id)
        if row is not None and account.is_admin:
            return _organiser_views(session, [row])[0]
    if row is None or not (row["author_id"] == account.id or row["published"]):
        raise NotFound(f"no question {clarification_id} you can read")
    if row["author_id"] != account.id:
        row = row | {"text": row["public_text"] or row["text"], "mine": False}
    return _contestant_view(row)


def open_questions(database: Database) -> list[dict[str, Any]]:
    """The questions nobody has handled yet, oldest first, with their authors' names (organisers)."""
    with database.read_session() as session:
        return _organiser_views(session, messages_db.open_clarifications(session))


def all_questions(database: Database, limit: int = 200) -> list[dict[str, Any]]:
    """Every question, newest first (at most ``limit``), with authors' names (organisers)."""
    with database.read_session() as session:
        return _organiser_views(session, messages_db.all_clarifications(session, limit))


def answer(database: Database, organiser: Account, clarification_id: int, text: str, publish: bool = False,
           public_text: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """Answer question ``clarification_id``: privately to its author, or to everyone (``publish``), then
    shown with ``public_text`` in place of the author's words when given (ignored unless ``publish``).
    Returns the organisers' view; ``NotFound`` for no such question, ``BadRequest`` for a bad text."""
    text = _answer_text(text)
    public = _answer_text(public_text, "public wording of the question") if publish and public_text else None
    with database.session() as session:
        row = messages_db.answer(session, clarification_id, organiser.id, text, publish, now or utcnow(),
                                 public_text=public)
        if row is None:
            raise NotFound(f"no question {clarification_id}")
        return _organiser_views(session, [row])[0]


def ignore(database: Database, organiser: Account, clarification_id: int,
           now: datetime | None = None) -> dict[str, Any]:
    """Close question ``clarification_id`` without an answer (its author sees it as ignored); returns
    the organisers' view, ``NotFound`` for no such question."""
    with database.session() as session:
        row = messages_db.ignore(session, clarification_id, organiser.id, now or utcnow())
        if row is None:
            raise NotFound(f"no question {clarification_id}")
        return _organiser_views(session, [row])[0]


def _announcement_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "text": row["text"], "created": iso(row["created"]), "pinned": row["pinned"]}


def announce(database: Database, organiser: Account, text: str, pinned: bool = False,
             now: datetime | None = None) -> dict[str, Any]:
    """Announce ``text`` to everyone (``pinned``: listed first); returns it. ``BadRequest`` for a bad text."""
    text = checked_text(text, "announcement", ANSWER_MAX_CHARS, ANSWER_MAX_LINES)
    with database.session() as session:
        return _announcement_view(messages_db.announce(session, organiser.id, text, now or utcnow(), pinned))


def announcements(database: Database) -> list[dict[str, Any]]:
    """Every announcement, pinned first, then newest first (the freeze hides none)."""
    with database.read_session() as session:
        return [_announcement_view(r) for r in messages_db.announcements(session)]


def mark_read(database: Database, account: Account, now: datetime | None = None) -> None:
    """Everything made until ``now`` counts as read by ``account``."""
    with database.session() as session:
        messages_db.mark_read(session, account.id, now or utcnow())


def unread(database: Database, account: Account) -> dict[str, int]:
    """``{"answers", "announcements", "total"}``: what ``account`` has not read (``db.messages.unread``)."""
    with database.read_session() as session:
        counts = messages_db.unread(session, account.id)
    return counts | {"total": counts["answers"] + counts["announcements"]}


def read_mark(database: Database, account: Account) -> str | None:
    """When ``account`` last marked their messages read (ISO), or None (for the pages' change tags)."""
    with database.read_session() as session:
        return iso(messages_db.read_at(session, account.id))


def stamp(database: Database) -> str:
    """A text that changes whenever a question is asked or handled or an announcement made."""
    with database.read_session() as session:
        return messages_db.messages_stamp(session)
