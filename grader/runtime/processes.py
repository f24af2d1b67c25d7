"""Who grades: the name a process stores with each point it claims, and whether a named process is gone.

A claim stores ``host:pid`` (Celery workers: ``name@host:pid``), so ``admin show`` tells who grades and the
sweeper can tell a claim whose process died on this host from one that is merely slow.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path


def worker_name() -> str:
    """``host:pid`` of this process, stored with each claimed point."""
    return f"{socket.gethostname()}:{os.getpid()}"


def worker_gone(worker: str | None) -> bool:
    """Whether ``worker`` (``host:pid`` or Celery's ``name@host:pid``) names a process of this host that
    no longer exists (a killed pool process, an interrupted embedded ``submit``). A zombie counts as
    gone: it has exited and only waits for its parent (or init) to reap it. The pool processes of a
    worker killed as a whole are reparented to init, and until init reaps them (or for ever, in a
    container without one) signal 0 still reaches them."""
    host, _, pid = (worker or "").rpartition(":")
    if host.rpartition("@")[2] != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists (another user's process)
        pass
    return _exited(int(pid))


def _exited(pid: int) -> bool:
    """Whether process ``pid`` is a zombie (Linux ``/proc``; False where that cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no /proc (not Linux), or it went away meanwhile (then the next look sees it gone)
        return False
    return stat.rpartition(")")[2].split()[:1] in (["Z"], ["X"])  # the state follows the "(name)"
