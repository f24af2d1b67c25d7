"""The organisers' list of submissions (admin page, ``GET /api/v1/admin/submissions``): the filters checked,
one page of rows newest first, and the before/after of a rejudge of the filtered set.

``parse_query`` turns what a client sent (strings, or None / empty for "no condition") into a
``SubmissionQuery``, or raises ``BadRequest`` (400) saying what is wrong: a user is a valid login name, a
verdict one of ``judger.verdicts.VERDICTS``, a task one of the contest's, the times ISO 8601 with an offset
(``contest.parse_time``) and ``since`` before ``until``, ``page`` 1..``MAX_PAGE``, ``per_page``
1..``MAX_PER_PAGE``. Nothing else reaches the database (``db.search``).

What the filters mean is ``db.search``'s: the user's login name; a verdict of some current test point (of
``task``'s points, with a task); a task alone: a score above 0 on it; created in ``[since, until)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import db.rejudge_batches as batches_db
from db.search import SubmissionFilter, count_submissions, matching_ids, search_submissions
from grader.refusals import BadRequest, NotFound
from judger.tasks import TASKS
from judger.verdicts import VERDICTS

from .accounts import check_name
from .contest import parse_time
from .database import Database
from .rows import iso, plain, plain_rows

PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_PAGE = 1_000_000
MAX_ID = 2**62
FIELD_MAX_LENGTH = 100  # any filter value longer than this is refused before it is parsed


@dataclass(frozen=True)
class SubmissionQuery:
    """A checked filter and the page of its results to show (``page`` from 1)."""

    filter: SubmissionFilter = SubmissionFilter()
    page: int = 1
    per_page: int = PER_PAGE

    def params(self) -> dict[str, str]:
        """The filter as the query parameters (or form fields) that give it back through ``parse_query``:
        only the conditions set, times as ISO 8601 (``page``/``per_page`` left out)."""
        f = self.filter
        given = {"user": f.user_name, "verdict": f.verdict, "task": f.task, "since": iso(f.since),
                 "until": iso(f.until)}
        return {key: str(value) for key, value in given.items() if value is not None}

    def describe(self) -> str:
        """The filter in words (``every submission`` when nothing is set)."""
        f = self.filter
        words = []
        if f.user_name:
            words.append(f"of {f.user_name}")
        if f.verdict:
            words.append(f"with a point judged {f.verdict}" + (f" in task {f.task}" if f.task else ""))
        elif f.task:
            words.append(f"scoring on task {f.task}")
        if f.since:
            words.append(f"from {f.since.isoformat()}")
        if f.until:
            words.append(f"before {f.until.isoformat()}")
        if f.up_to_id:
            words.append(f"up to #{f.up_to_id}")
        return "submissions " + ", ".join(words) if words else "every submission"


def _given(value: str | None, name: str) -> str | None:
    """A parameter's text, stripped; None when missing or empty. Over ``FIELD_MAX_LENGTH``: BadRequest."""
    if value is None:
        return None
    if len(value) > FIELD_MAX_LENGTH:
        raise BadRequest(f"{name}: at most {FIELD_MAX_LENGTH} characters")
    return value.strip() or None


def _integer(value: str | None, name: str, low: int, high: int, default: int | None) -> int | None:
    text = _given(value, name)
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
        raise BadRequest(f"{name} must be a whole number from {low} to {high}, got {text!r}")
    return int(text)


def _time(value: str | None, name: str) -> datetime | None:
    text = _given(value, name)
    try:
        return parse_time(text)
    except BadRequest as exc:
        raise BadRequest(f"{name}: {exc.message}") from None


def parse_query(user: str | None = None, verdict: str | None = None, task: str | None = None,
                since: str | None = None, until: str | None = None, page: str | None = None,
                per_page: str | None = None, up_to: str | None = None) -> SubmissionQuery:
    """A checked ``SubmissionQuery`` of what a client sent (see the module docstring); ``up_to``: only
    ids up to this one. Raises ``BadRequest`` with the reason."""
    name = _given(user, "user")
    if name is not None:
        check_name(name)
    kind = _given(verdict, "verdict")
    if kind is not None and kind not in VERDICTS:
        raise BadRequest(f"verdict must be one of {', '.join(VERDICTS)}, got {kind!r}")
    task_id = _integer(task, "task", min(TASKS), max(TASKS), None)
    start, end = _time(since, "since"), _time(until, "until")
    if start is not None and end is not None and end <= start:
        raise BadRequest(f"until ({end.isoformat()}) must be after since ({start.isoformat()})")
    chosen = SubmissionFilter(user_name=name, verdict=kind, task=task_id, since=start, until=end,
                              up_to_id=_integer(up_to, "up_to", 1, MAX_ID, None))
    return SubmissionQuery(chosen, _integer(page, "page", 1, MAX_PAGE, 1),
                           _integer(per_page, "per_page", 1, MAX_PER_PAGE, PER_PAGE))


def search(database: Database, query: SubmissionQuery) -> dict[str, Any]:
    """One page of the submissions ``query`` keeps, newest first: ``{"rows": [...] (``db.search`` rows,
    times as ISO), "total": how many match, "page", "per_page", "pages" (at least 1), "newest_id"}``
    (``newest_id``: the highest matching id, None if none; what a rejudge of these confirms)."""
    with database.read_session() as session:
        total = count_submissions(session, query.filter)
        rows = search_submissions(session, query.filter, (query.page - 1) * query.per_page, query.per_page)
        newest = search_submissions(session, query.filter, 0, 1)
    return {"rows": plain_rows(rows), "total": total, "page": query.page, "per_page": query.per_page,
            "pages": max(1, math.ceil(total / query.per_page)),
            "newest_id": newest[0]["submission_id"] if newest else None}


def every_match(database: Database, query: SubmissionQuery) -> list[dict[str, Any]]:
    """Every submission ``query``'s filter keeps, oldest first (the API's list without ``page``)."""
    with database.read_session() as session:
        return plain_rows(search_submissions(session, query.filter, newest_first=False))


def confirmed_filter(query: SubmissionQuery, newest_id: int | None) -> SubmissionFilter:
    """The filter of a rejudge confirmed when ``newest_id`` was the newest match: later ones are not in it."""
    return replace(query.filter, up_to_id=newest_id if newest_id is not None else 0)


def ids_matching(database: Database, chosen: SubmissionFilter) -> list[int]:
    """The ids ``chosen`` keeps, oldest first."""
    with database.read_session() as session:
        return matching_ids(session, chosen)


def rejudge_comparison(database: Database, batch_id: int) -> dict[str, Any]:
    """A rejudge of a filtered set, before and after: ``{"id", "created", "requested_by_name",
    "description", "count", "regraded", "changed", "rows": [{"submission_id", "user_name", "display_name",
    "status", "total_before", "total_after" (None until regraded), "change" (None until then)}]}``.
    ``NotFound`` for an unknown batch."""
    with database.read_session() as session:
        batch = batches_db.get_batch(session, batch_id)
        if batch is None:
            raise NotFound(f"there is no rejudge {batch_id}")
        items = batches_db.batch_items(session, batch_id)
    rows = [_compared(item) for item in items]
    return {**plain(batch), "regraded": sum(r["total_after"] is not None for r in rows),
            "changed": sum(bool(r["change"]) for r in rows), "rows": rows}


def _compared(item: dict[str, Any]) -> dict[str, Any]:
    """One submission of a rejudge: its total after is its stored total once the new grading finished."""
    regraded = item["status"] in ("done", "failed")
    after = item["total"] if regraded else None
    before = item["total_before"]
    change = None if after is None else after - (before or 0.0)
    return {"submission_id": item["submission_id"], "user_name": item["user_name"],
            "display_name": item["display_name"], "status": item["status"], "total_before": before,
            "total_after": after, "change": change}
