"""Rows as CSV, the one format of ``kdt-grade leaderboard --csv``, ``kdt-grade admin leaderboard --csv`` and
the admin page's standings export (``grader.service.export``). A foundation module (no imports of ours),
so the client commands can use it without loading the service.

``csv_text(rows, columns)`` writes the given columns of plain rows (None as an empty cell);
``LEADERBOARD_COLUMNS`` are the standings' columns.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

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
