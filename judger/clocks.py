"""The clock a test point's time limit is measured on (judging.md, "One test point": 20 s per launch).

The contest's judger measures the limit in wall-clock seconds (``judger/judger.py`` keeps that). The grading
service measures it in CPU seconds of the process that simulates (``cpu_clock``), so a correct kernel never
gets ``TLE`` because the machine is busy; a generous wall-clock *backstop* still ends a launch that makes no
progress for the judge's own reasons (an overloaded or stopped machine) with ``WallClockBackstop``, which
is the judge's fault (``IE``, graded again), never the kernel's.
"""
from __future__ import annotations

import time
from collections.abc import Callable


class WallClockBackstop(Exception):
    """A launch passed the judge's wall-clock backstop before it used its CPU time: the machine, not the
    kernel, is too slow (``IE``; the service grades the point again)."""


def cpu_clock(backstop_seconds: float, limit_seconds: float) -> Callable[[], float]:
    """A clock for ``kdt.launch_kernel(clock=..., timeout=limit_seconds)``: this process's CPU time in
    seconds (``time.process_time``). Read more than ``backstop_seconds`` of wall-clock time after it was
    made (make one per launch) while the launch has used less than ``limit_seconds`` of CPU time, it raises
    ``WallClockBackstop``: the process did not get the CPU. A launch that used its CPU time is the kernel's
    doing however long it took: the clock reads on, and the limit ends it (``TLE``)."""
    give_up = time.monotonic() + backstop_seconds
    start = time.process_time()

    def clock() -> float:
        now = time.process_time()
        if time.monotonic() > give_up and now - start <= limit_seconds:
            raise WallClockBackstop(f"the launch took more than {backstop_seconds:g} s of wall-clock time "
                                    f"before it used its CPU time limit: the judge's machine is overloaded")
        return now
    return clock
