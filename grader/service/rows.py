"""Database rows as JSON-able data: the one place times become text.

The ``db`` functions return plain dicts whose times are aware UTC ``datetime`` objects; everything the
service layer hands to its entry points (the JSON API, the pages, the CLI's ``--json``) has them as ISO
8601 strings instead, made here.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any


def iso(value: Any) -> Any:
    """``value.isoformat()`` for a ``datetime``; anything else unchanged (None stays None)."""
    return value.isoformat() if isinstance(value, datetime) else value


def plain(row: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``row`` with every ``datetime`` value as its ISO 8601 string."""
    return {key: iso(value) for key, value in row.items()}


def plain_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``plain`` of each row."""
    return [plain(row) for row in rows]
