"""Taking in an upload for an account, shared by the API (``grader.web.api.contestant``) and the page form
(``grader.web.pages.contestant``).

- ``check``: the contest's rules in a read-only snapshot (``grader.service.submission_limits.check``), before any work;
  organisers are not held to the window and limits;
- ``admit_token``: the API's check before it reads an upload: the token's account and the contest's rules
  in one read-only snapshot (an unknown token, a disabled account or a limit is refused before any of
  the body is read);
- ``accept``: ``Service.accept`` with the rules checked again inside its transaction (``submission_limits.admit``),
  then the id handed to the server's scheduler. Refusals (``pipeline.Rejected``, ``refusals.Refusal``)
  propagate and nothing is stored;
- ``in_thread``: runs one of these in a worker thread, at most ``INTAKE_THREADS`` at once per process;
- ``Uploads``: one upload at a time per account and HTTP process, from before its body is read until it
  is stored or refused (429 ``upload_in_progress`` for a second one meanwhile): a contestant sending many
  uploads at once (refused ones store nothing, so they count against no limit) holds one body in memory
  and one intake thread, not all of them, and the others' uploads go on.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import anyio
import anyio.to_thread

from grader.refusals import TooMany
from grader.service import Service, accounts, submission_limits
from grader.service.accounts import Account

# Intakes running at once in one HTTP process. Their work is CPU (the syntax check, SQL) under one
# interpreter lock, so more threads only take turns on it, each switch costing, and a burst all finishes
# together at the end. Two: one can check while the other waits for the database's writer lock, and the
# first uploads are answered first (benchmarks/server_intake.py measures it).
INTAKE_THREADS = 2


def limiter() -> anyio.CapacityLimiter:
    """A new limiter of ``INTAKE_THREADS`` (one per app, made in its event loop: ``app.state``)."""
    return anyio.CapacityLimiter(INTAKE_THREADS)


async def in_thread(request, function, *args):
    """``function(*args)`` in a worker thread under the app's intake limiter (``app.state.intake_limiter``);
    returns what it returns, raises what it raises."""
    return await anyio.to_thread.run_sync(function, *args, limiter=request.app.state.intake_limiter)


def check(service: Service, account: Account) -> None:
    """Raise the ``Refusal`` the contest's rules give ``account`` now (none for an organiser)."""
    if not account.is_admin:
        submission_limits.check(service, account.id)


def accept(service: Service, account: Account, file_name: str, data: bytes) -> int:
    """Store the upload as ``account``'s submission and start its grading (``Service.enqueue``: the
    server's scheduler); return its id. Raises ``pipeline.Rejected`` (400), ``refusals.Refusal`` (403/429) or
    ``ServiceUnavailable`` (503), with nothing stored."""
    admit = None if account.is_admin else submission_limits.admit
    submission_id = service.accept(data, file_name, account.name, admit, user_id=account.id)
    service.enqueue(submission_id)
    return submission_id


def admit_token(service: Service, token: str) -> Account:
    """The account of a ``well_formed`` bearer token (``accounts.account_for``), with the contest's rules
    checked for it (``submission_limits.check_in``) in the same snapshot. Raises ``NotAuthenticated`` (401),
    ``Forbidden`` (403: disabled, outside the window), ``TooMany`` (429) or ``ServiceUnavailable`` (503)."""
    with service.read_session() as session:
        account = accounts.account_for(session, token)
        if not account.is_admin:
            submission_limits.check_in(session, account.id)  # a refusal stores nothing at all
    return account


class Uploads:
    """The accounts with an upload under way in this process (module docstring); thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._accounts: set[int] = set()

    @contextlib.contextmanager
    def one_of(self, account: Account) -> Iterator[None]:
        """Hold ``account``'s place for the block; ``TooMany`` (429 ``upload_in_progress``, retry after
        1 s) if another upload of the account holds it."""
        with self._lock:
            if account.id in self._accounts:
                raise TooMany("another upload of yours is still being taken in; wait for its answer, then "
                              "submit again", code="upload_in_progress", retry_after=1)
            self._accounts.add(account.id)
        try:
            yield
        finally:
            with self._lock:
                self._accounts.discard(account.id)
