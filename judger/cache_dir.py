"""Where the judge keeps what it computes once per machine: the test point data (``judger.testdata``) and
``kdt-grade local``'s result store (``grader.service.reuse``). Imports neither torch nor numpy, so a
command can find the directory without loading them."""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DIR_ENV = "KDT_GRADE_CACHE_DIR"


def cache_dir() -> Path | None:
    """The disk cache's directory (``KDT_GRADE_CACHE_DIR``, default the user cache directory's
    ``testpoints``), or None when it is ``off`` (or empty, ``none``, ``0``)."""
    raw = os.environ.get(DIR_ENV)
    if raw is None:
        return Path(platformdirs.user_cache_dir("kdt-grade")) / "testpoints"
    if raw.strip().lower() in ("", "off", "none", "0"):
        return None
    return Path(raw)
