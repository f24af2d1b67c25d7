"""Taking in a submission: the intake checks, the archive copy, the row, and starting its grading.

``accept`` checks the file (``grader.judging.pipeline.check_source``: size, UTF-8, parses) and the names,
writes the archive copy (``grader.runtime.storage``) and the submission row, and in the same transaction
what its grading needs (``Service.scheduler.reserve``: the outbox row ``compile N`` in broker mode).
``enqueue`` starts the grading of a committed submission (``Service.scheduler.dispatch``).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import db
from grader.judging import pipeline
from grader.judging.pipeline import Rejected
from grader.runtime import storage
from grader.runtime.retries import is_transient, unavailable
from judger.verdicts import PointResult

if TYPE_CHECKING:
    from .facade import Service

log = logging.getLogger(__name__)


def accept(service: Service, data: bytes, file_name: str, user: str,
           admit: Callable[[object, int], None] | None = None, user_id: int | None = None) -> int:
    """Check, store and record a submission; return its id. In broker mode the outbox row "compile N" is
    written in the same transaction; ``enqueue`` (or the background loop) sends it.

    ``user_id``: the id of the existing account ``user`` (the server's authenticated caller), which
    spares the transaction the lookup that creates user ``user`` if missing (the CLI's case).

    ``admit(session, user_id)``, if given, runs in the intake's transaction before the row is created
    (the contest server passes ``grader.service.submission_limits.admit``: window and limits); what it raises
    propagates and nothing is stored.

    Raises ``pipeline.Rejected`` (nothing stored: no file, no row) for a file that fails the intake
    checks, a bad file name or a bad user name; ``ServiceUnavailable`` (nothing stored either) when
    the database cannot be reached."""
    text = pipeline.check_source(data, service.settings.submission_max_bytes)
    name = _checked_names(file_name, user)
    # The archive copy (grading reads the text in the row) is written and fsynced before the
    # transaction and placed after its commit: the writers' queue is held for the rows alone, and a
    # refusal leaves no file.
    staged = storage.stage(service.settings.data_dir, data)
    try:
        with service.session() as session:
            if user_id is None:
                user_id = db.get_or_create_user(session, user)["id"]
            if admit is not None:
                admit(session, user_id)
            row = db.create_submission(session, user_id, name, staged.sha256, text)
            service.scheduler.reserve(session, row["id"])
            session.flush()
    except Exception as exc:
        staged.discard()
        if is_transient(exc):
            raise unavailable(exc, "the database is unreachable") from exc
        raise
    _place(staged, row["id"])
    return int(row["id"])


def _checked_names(file_name: str, user: str) -> str:
    """The stored file name (its last path component); ``Rejected`` for a bad file or user name."""
    name = Path(file_name).name
    if not name or len(name) > 255:
        raise Rejected(f"the file name must have 1..255 characters, got {name!r}")
    if not name.isprintable():
        raise Rejected(f"the file name must not contain control characters, got {name!r}; rename the file")
    if not user or len(user) > 100:
        raise Rejected(f"the user name must have 1..100 characters, got {user!r}")
    return name


def _place(staged: storage.Staged, submission_id: int) -> None:
    """Put the archive copy in place after the commit; a failure is logged (the row holds the text)."""
    try:
        staged.place()
    except OSError as exc:  # accepted all the same: the row holds the text, the file can be written again
        log.error("submission %s is stored, but its archive file %s could not be written: %s",
                  submission_id, staged.path, exc)
    finally:
        staged.discard()


def enqueue(service: Service, submission_id: int, on_result: Callable[[PointResult], None] | None = None) -> bool:
    """Start grading a committed submission (``Service.scheduler``): in this process (embedded; returns
    True once graded) or by sending its outbox row (written now if missing). Returns False when the
    broker is down: the row stays and the background loop of any worker or server sends it once the
    broker is back."""
    return service.scheduler.dispatch(submission_id, on_result=on_result)


def submit(service: Service, data: bytes, file_name: str, user: str, on_result=None) -> int:
    """``accept`` then ``enqueue`` (in embedded mode this grades before returning)."""
    submission_id = service.accept(data, file_name, user)
    service.enqueue(submission_id, on_result=on_result)
    return submission_id
