"""How numbers and times are written for people, the same on the pages and in the ``kdt-grade`` tables:
cycles and other counts with thousands separators (``21,248``), times in UTC saying so
(``2026-12-05 14:03:12 UTC``). A foundation module (no imports of ours), so the client commands use it
without loading the service. Machine-readable output (JSON, CSV) keeps the raw values.
"""
from __future__ import annotations

from datetime import UTC, datetime


def count_text(value: int) -> str:
    """An integer with thousands separators: ``21,248``."""
    return f"{value:,}"


def parse_time(value: datetime | str | None) -> datetime | None:
    """An aware datetime, or an ISO 8601 string with its offset (as the JSON API sends it), as a datetime."""
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(value)


def utc_text(value: datetime | str) -> str:
    """``2026-12-05 14:03:12 UTC`` of an aware datetime or an ISO 8601 string with an offset."""
    return parse_time(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
