"""The final standings as CSV (the admin page's ``/admin/scoreboard.csv``): the jury's leaderboard (every
submission counts: no freeze) in the format of ``kdt-grade leaderboard --csv`` (``grader.csv_format``, one
source for both)."""
from __future__ import annotations

from grader.csv_format import LEADERBOARD_COLUMNS, csv_text

from . import queries
from .database import Database


def standings_csv(database: Database) -> str:
    """``queries.leaderboard`` (the freeze ignored) as CSV in ``LEADERBOARD_COLUMNS``."""
    return csv_text(queries.leaderboard(database), LEADERBOARD_COLUMNS)
