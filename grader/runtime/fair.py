"""Fair queueing across users: which test point a free worker judges next.

Points are not judged in the order their messages arrive (one FIFO, where one contestant's ten
time-outs held everyone's points for minutes). A free worker, a Celery pool process with a judge message
or a slot of the embedded server, asks ``fair_order`` and claims the first point it can (the claim stays
the compare-and-set of ``grader.service.steps._claim``; losing a race moves on to the next candidate). The order:

1. the user with the fewest points in flight (claimed, unfinished, worker alive) first;
2. then the user served least recently (the latest claim of any of their points: round robin);
3. then the oldest submission, task and point.

So a user whose points are slow holds at most the workers nobody else asks for: another user's first point
waits for at most one running point (one point's limit), not for all of the first user's points.
Candidates are the ready points (``db.queue.ready_points``: compiled, unclaimed; CE and SV points were
recorded at compile time and are never candidates) and the claims whose worker is a process of this host
that is gone (``worker_gone``: what an embedded server restarted after a crash finds). A claim whose
heartbeat merely stopped is left to the sweeper, which knows not to count heartbeats missed during a
database outage.

Compiles are queued fairly too: ``FairQueue`` is the embedded server's compile queue
(``grader.service.scheduling.Dispatcher``), in the same order per user (fewest compiles in flight, then least
recently served, then the oldest), so one user's many or slow compiles (each up to
``KDT_GRADE_COMPILE_WALL_SECONDS``) delay another user's by at most the compiles already running.
"""
from __future__ import annotations

import itertools
import threading
from collections import Counter, deque
from collections.abc import Callable, Hashable
from datetime import datetime, timezone

NEVER = datetime.min.replace(tzinfo=timezone.utc)


def fair_order(ready: list[dict], running: list[dict], served: dict, gone: Callable[[str | None], bool]
               ) -> list[tuple]:
    """``(submission_id, task, point)`` candidates, the fairest first (see the module docstring).

    ``ready``: ``db.queue.ready_points``; ``running``: ``db.queue.running_rows``; ``served``:
    ``db.queue.user_activity``; ``gone(worker)``: whether a running row's worker no longer exists."""
    abandoned = [r for r in running if gone(r["worker"])]
    in_flight = Counter(r["user_id"] for r in running if r not in abandoned)

    def key(c: dict) -> tuple:
        return (in_flight[c["user_id"]], served.get(c["user_id"]) or NEVER, c["submission_id"], c["task"], c["point"])

    return [(c["submission_id"], c["task"], c["point"]) for c in sorted(ready + abandoned, key=key)]


class FairQueue:
    """A blocking queue of work items (submission ids) per user, handed out fairly across users (see the
    module docstring): ``get`` returns an item of the user with the fewest items being worked on
    (``put``'s ``user``; taken and not yet ``done``), then of the user served least recently, then the
    item that waited longest. An item already waiting is not queued twice. Thread-safe; ``close`` makes
    every ``get`` return None."""

    def __init__(self):
        self._lock = threading.Condition()
        self._waiting: dict[Hashable, deque] = {}      # user -> items in arrival order
        self._arrival: dict = {}                        # item -> its arrival number
        self._in_flight: Counter = Counter()            # user -> items taken and not done
        self._served: dict[Hashable, int] = {}          # user -> when last served (a get's number)
        self._ticks = itertools.count(1)
        self._closed = False

    def put(self, item, user: Hashable) -> None:
        """Queue ``item`` for ``user`` (any hashable; None is a user of its own); ignored after ``close``."""
        with self._lock:
            if self._closed or item in self._arrival:
                return
            self._arrival[item] = next(self._ticks)
            self._waiting.setdefault(user, deque()).append(item)
            self._lock.notify()

    def get(self, timeout: float | None = None):
        """``(item, user)``, the fairest waiting item, blocking until there is one; None after ``close``
        or when ``timeout`` seconds passed. Call ``done(user)`` when the item's work ends."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._closed or self._waiting, timeout) or self._closed:
                return None
            user = min(self._waiting, key=lambda u: (self._in_flight[u], self._served.get(u, 0),
                                                      self._arrival[self._waiting[u][0]]))
            items = self._waiting[user]
            item = items.popleft()
            if not items:
                del self._waiting[user]
            del self._arrival[item]
            self._in_flight[user] += 1
            self._served[user] = next(self._ticks)
            return item, user

    def done(self, user: Hashable) -> None:
        """The work on an item ``get`` returned for ``user`` ended (finished or failed)."""
        with self._lock:
            self._in_flight[user] -= 1
            if self._in_flight[user] <= 0:
                del self._in_flight[user]

    def close(self) -> None:
        """Stop: every waiting and future ``get`` returns None; what was waiting is dropped."""
        with self._lock:
            self._closed = True
            self._waiting.clear()
            self._arrival.clear()
            self._lock.notify_all()
