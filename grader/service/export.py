"""Rows as CSV: the one format of ``kdt-grade leaderboard --csv``, ``kdt-grade admin leaderboard --csv`` and
the admin page's export of the standings (``/admin/scoreboard.csv``).

``csv_text(rows, columns)`` writes the given columns of plain rows (None as an empty cell);
``LEADERBOARD_COLUMNS`` are the standings' columns; ``standings_csv(database)`` is the jury's standings
(every submission counts: no freeze) in them.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from . import queries
from .database import Database

LEADERBOARD_COLUMNS = ["rank", "user_name", "submission_id", "created", "task1", "task2", "task3", "task4",
                       "total"]


def csv_text(rows: Iterable[Mapping[str, Any]], columns: list[str]) -> str:
    """``rows`` as CSV with a header of ``columns`` (other keys left out, None as an empty cell)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return buffer.getvalue()


def standings_csv(database: Database) -> str:
    """The final standings as CSV: ``queries.leaderboard`` (the freeze ignored) in ``LEADERBOARD_COLUMNS``."""
    return csv_text(queries.leaderboard(database), LEADERBOARD_COLUMNS)
