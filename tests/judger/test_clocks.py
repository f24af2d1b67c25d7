"""Time limits on another clock than the wall clock (``kdt.simulator.clock``, ``judger.clocks``, issue 33):
waiting costs no CPU time, working does, and the wall-clock backstop is the judge's fault."""
import time

import pytest

from judger.clocks import WallClockBackstop, cpu_clock
from kdt.simulator.clock import TimeLimit


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_wall_clock_limit_passes_while_the_process_waits():
    limit = TimeLimit(0.05)
    assert not limit.passed() and limit.name == "wall-clock limit"
    time.sleep(0.1)
    assert limit.passed()


def test_a_cpu_time_limit_ignores_waiting_and_counts_work():
    limit = TimeLimit(0.2, time.process_time)
    assert limit.name == "time limit"
    time.sleep(0.3)  # past the wall-clock deadline, but no CPU time used: the deadline moves on
    before = limit.deadline
    assert not limit.passed() and limit.deadline > before
    _spin(0.25)
    assert limit.passed()


def test_the_backstop_is_read_only_once_the_budget_has_passed_on_the_wall_clock():
    reads = []

    def clock():
        reads.append(1)
        return time.process_time()

    limit = TimeLimit(0.2, clock)
    for _ in range(10000):
        assert not limit.passed()
    assert len(reads) == 1  # only when made: the loops compare the wall clock


def test_the_wall_clock_backstop_raises_the_judges_fault():
    limit = TimeLimit(0.05, cpu_clock(0.05, 0.05))
    time.sleep(0.1)
    with pytest.raises(WallClockBackstop, match="more than 0.05 s of wall-clock time"):
        limit.passed()
    assert not isinstance(WallClockBackstop("x"), TimeoutError)  # never TLE


def test_a_launch_that_used_its_cpu_time_is_tle_however_long_it_took():
    limit = TimeLimit(0.1, cpu_clock(0.05, 0.1))  # one long stretch of work read after the backstop
    _spin(0.15)
    assert limit.passed()  # the kernel's doing: the limit, not the backstop
