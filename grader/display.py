"""How numbers and times are written for people, the same on the pages and in the ``kdt-grade`` tables:
cycles and other counts with thousands separators (``21,248``), times in UTC saying so
(``2026-12-05 14:03:12 UTC``); and which characters a name people set may not hold
(``hidden_characters``). A foundation module (no imports of ours), so the client commands use it
without loading the service. Machine-readable output (JSON, CSV) keeps the raw values.
"""
from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

# Characters that change how text around them reads without showing themselves: controls (C0, DEL, C1:
# terminal escapes), format characters (bidi overrides, zero-width), line and paragraph separators,
# surrogates, private-use and unassigned code points.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def hidden_characters(text: str) -> list[str]:
    """The characters of ``text`` that a person cannot see but that change how it is shown (a terminal
    escape, a right-to-left override, a zero-width space), each once, as ``U+XXXX``; empty when none."""
    found = dict.fromkeys(f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in _HIDDEN_CATEGORIES)
    return list(found)


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
