"""Waiting for a submission's grading to end by polling its status document (``Service.wait`` in the
database, ``grader.client.http.Client.wait`` over HTTP). Imports nothing heavy: the HTTP client uses it."""
from __future__ import annotations

import time
from collections.abc import Callable

FINAL = ("done", "failed")


def poll_until_final(fetch: Callable[[], dict], submission_id: int,
                     on_progress: Callable[[dict], None] | None = None, timeout: float | None = None,
                     poll: float = 0.5, max_poll: float | None = None) -> dict:
    """Call ``fetch()`` (the status document) until its ``status`` is ``done`` or ``failed`` and return it;
    ``on_progress(status)`` after each call. The interval starts at ``poll`` seconds and grows by 1.3x up
    to ``max_poll`` (default: stays at ``poll``). Raises ``TimeoutError`` after ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    max_poll = poll if max_poll is None else max_poll
    while True:
        state = fetch()
        if on_progress:
            on_progress(state)
        if state["status"] in FINAL:
            return state
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"submission {submission_id} is still {state['status']} after {timeout:g} s")
        time.sleep(poll)
        poll = min(max_poll, poll * 1.3)
