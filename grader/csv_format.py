"""Rows as CSV, the one format of ``kdt-grade leaderboard --csv``, ``kdt-grade admin leaderboard --csv`` and
the admin page's standings export (``grader.service.export``). A foundation module (no imports of ours),
so the client commands can use it without loading the service.

``csv_text(rows, columns)`` writes the given columns of plain rows (None as an empty cell);
``LEADERBOARD_COLUMNS`` are the standings' columns; ``progress_csv`` the scoreboard's progress graph (the page's
``/scoreboard/progress.csv`` and ``kdt-grade leaderboard --progress --csv``).
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

LEADERBOARD_COLUMNS = ["rank", "user_name", "submission_id", "created", "task1", "task2", "task3", "task4",
                       "total"]


PROGRESS_COLUMNS = ["rank", "user_name", "at", "submission_id", "total"]


def progress_csv(progress: Mapping[str, Any]) -> str:
    """The scoreboard's progress document (``grader.service.progress.scoreboard_progress``, ``GET
    /api/v1/leaderboard/progress``) as CSV in ``PROGRESS_COLUMNS``: one line per step, users in rank order."""
    return csv_text(({"rank": u["rank"], "user_name": u["user_name"], **step}
                     for u in progress["users"] for step in u["steps"]), PROGRESS_COLUMNS)


def csv_text(rows: Iterable[Mapping[str, Any]], columns: list[str]) -> str:
    """``rows`` as CSV with a header of ``columns`` (other keys left out, None as an empty cell)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return buffer.getvalue()
