"""A launch's time limit (spec kdt-semantics.md §1: ``TimeoutError`` after 20 s per launch).

The handout measures the limit in wall-clock seconds, and so does ``TimeLimit`` by default. A judge that
must not depend on the machine's load measures it on another clock instead, typically the CPU time of the
process doing the work (``time.process_time``): then a correct kernel does not time out because other
processes share the cores.

The simulator compares ``time.monotonic()`` with ``TimeLimit.deadline`` in its loops (tens of nanoseconds)
and calls ``expired()`` only once that wall-clock moment has passed. With another clock, ``expired()``
reads it and, while budget is left, moves ``deadline`` to the earliest wall-clock moment the budget could
be spent: a single-threaded process uses at most one second of CPU time per second of wall-clock time,
so the slower clock is read a handful of times per launch, however loaded the machine is.
"""
from __future__ import annotations

import time
from collections.abc import Callable


class TimeLimit:
    """``seconds`` of ``clock`` from now (default: wall-clock time, ``time.monotonic``).

    ``deadline``: the ``time.monotonic()`` value after which ``expired()`` must be asked. ``clock``: a
    function returning seconds on the limit's clock (e.g. ``time.process_time``); it may raise to stop the
    launch (a judge's wall-clock backstop), and the exception propagates out of ``launch_kernel``.
    ``name``: the limit in the ``TimeoutError``'s message ("wall-clock limit", or "time limit" on another clock).
    """

    __slots__ = ("seconds", "clock", "start", "deadline", "name")

    def __init__(self, seconds: float, clock: Callable[[], float] | None = None):
        self.seconds = seconds
        self.clock = clock
        self.start = clock() if clock is not None else None
        self.deadline = time.monotonic() + seconds
        self.name = "wall-clock limit" if clock is None else "time limit"

    def expired(self) -> bool:
        """Whether the limit has passed (call it once ``time.monotonic() > deadline``). On another clock
        than the wall clock, with budget left, moves ``deadline`` on by that budget and returns False."""
        if self.clock is None:
            return True
        used = self.clock() - self.start
        if used > self.seconds:
            return True
        self.deadline = time.monotonic() + (self.seconds - used)
        return False

    def passed(self) -> bool:
        """``time.monotonic() > deadline and expired()``: the check the simulator's loops make."""
        return time.monotonic() > self.deadline and self.expired()

