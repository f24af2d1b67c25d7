"""Timing helper shared by the benchmarks (scripts in this folder import it as ``timing``)."""
import time


def best_time(fn, repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``fn()``, in seconds (the least disturbed by a noisy machine)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)
