"""The public scoreboard as the pages show it, versioned so live updates send only what changed.

``Scoreboards(service)`` computes the board from ``grader.service.standings.public_leaderboard`` (the freeze
applies), at most once per ``TTL`` seconds per server process however many browsers poll, renders its
table body once, and keeps the last ``KEEP`` versions. ``update(since)`` answers a browser that has version ``since``:

- None when nothing changed (the route answers 304, no body);
- ``{"version", "frozen", "full": false, "changed": [rows], "removed": [users]}`` with only the rows that
  differ from that version (a new score moves the ranks of the rows it passes: those rows change too);
- ``{"version", "frozen", "full": true, "changed": [every row], "removed": []}`` when the version is unknown
  (too old, or another server process made it).

While the board is frozen, a logged-in contestant's own row carries a mark of the submissions the freeze
hides (``pending_mark``, ``Board.rows_html_for``): the page is rendered per viewer from the shared row
HTML, never the shared board itself, so nobody else sees it.

A row is display data: ``{"user", "name", "rank", "tasks": [4 scores], "bands": [4 colour classes:
``render.score_band``], "total", "created", "created_text"}``.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from markupsafe import Markup

from grader.service import standings
from judger.tasks import TASKS

from .render import environment, score_text, task_bands, time_text

TTL = 1.0   # seconds a computed board is reused
KEEP = 64   # versions remembered for diffs


@dataclass(frozen=True)
class Board:
    """One version of the scoreboard: rows in rank order, keyed by user name in ``by_user``."""

    version: str
    frozen: bool
    rows: tuple
    rows_html: Markup  # the table body, rendered once per version (autoescaped)
    row_html: tuple = ()  # each row's <tr> of it, in order

    @property
    def by_user(self) -> dict:
        return {row["user"]: row for row in self.rows}

    def rows_html_for(self, user: str, pending: dict) -> Markup:
        """The table body with ``user``'s row marked ``pending`` (``pending_mark``: for that user's own
        eyes); ``rows_html`` when the user has no row."""
        index = next((i for i, row in enumerate(self.rows) if row["user"] == user), None)
        if index is None:
            return self.rows_html
        parts = list(self.row_html)
        parts[index] = _macros().row(self.rows[index], pending)
        return Markup("").join(parts)


def _macros():
    """The row macros of ``scoreboard_rows.html`` (``row``, ``empty``)."""
    return environment.get_template("scoreboard_rows.html").module


def board_rows(leaderboard: dict) -> tuple:
    """Display rows of ``standings.public_leaderboard`` output."""
    return tuple({"user": r["user_name"], "name": r.get("display_name") or r["user_name"], "rank": r["rank"],
                  "tasks": [score_text(r[f"task{t}"]) for t in TASKS], "bands": task_bands(r),
                  "total": score_text(r["total"]),
                  "created": r["created"], "created_text": time_text(r["created"])}
                 for r in leaderboard["rows"])


def make_board(leaderboard: dict) -> Board:
    rows = board_rows(leaderboard)
    digest = hashlib.sha256(json.dumps([leaderboard["frozen"], rows], sort_keys=True).encode()).hexdigest()
    macros = _macros()
    row_html = tuple(Markup(macros.row(row)) for row in rows)
    html = Markup("").join(row_html) if rows else Markup(macros.empty(4 + len(TASKS)))
    return Board(digest[:16], bool(leaderboard["frozen"]), rows, html, row_html)


def pending_mark(hidden: dict | None) -> dict | None:
    """What the viewer's own row says while the board is frozen (``standings.hidden_submissions``): ``{"count",
    "since" (ISO), "since_text", "label", "title"}``; None when nothing of theirs is hidden."""
    if not hidden or not hidden["count"]:
        return None
    count, since_text = hidden["count"], time_text(hidden["since"])
    return {**hidden, "since_text": since_text, "label": f"+{count} pending",
            "title": f"{count} submission(s) of yours since the freeze at {since_text}: their results are "
                     "hidden here until the scoreboard is unfrozen (only you see this)"}


def diff(old: Board | None, new: Board) -> dict:
    """The update document from ``old`` (None: unknown) to ``new`` (module docstring)."""
    if old is None:
        return {"version": new.version, "frozen": new.frozen, "full": True, "changed": list(new.rows), "removed": []}
    before = old.by_user
    changed = [row for row in new.rows if before.get(row["user"]) != row]
    removed = sorted(set(before) - set(new.by_user))
    return {"version": new.version, "frozen": new.frozen, "full": False, "changed": changed, "removed": removed}


class Scoreboards:
    """The current board of one server process, and its recent versions (thread-safe)."""

    def __init__(self, service, ttl: float = TTL, keep: int = KEEP, clock=time.monotonic):
        self.service = service
        self.ttl, self.keep, self.clock = ttl, keep, clock
        self._lock = threading.Lock()
        self._current: Board | None = None
        self._at = 0.0
        self._versions: OrderedDict[str, Board] = OrderedDict()

    def current(self) -> Board:
        """The board, recomputed when older than ``ttl`` seconds."""
        with self._lock:
            if self._current is not None and self.clock() - self._at < self.ttl:
                return self._current
        board = make_board(standings.public_leaderboard(self.service))
        with self._lock:
            self._current, self._at = board, self.clock()
            self._versions[board.version] = board
            self._versions.move_to_end(board.version)
            while len(self._versions) > self.keep:
                self._versions.popitem(last=False)
        return board

    def update(self, since: str | None) -> dict | None:
        """None if ``since`` is the current version, else the update document (module docstring)."""
        board = self.current()
        if since == board.version:
            return None
        with self._lock:
            old = self._versions.get(since) if since else None
        return diff(old, board)
