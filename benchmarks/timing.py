"""Timing helper shared by the benchmarks (scripts in this folder import it as ``timing``)."""
import sys
import time


def best_time(fn, repeat: int, clock=time.perf_counter) -> float:
    """The fastest of ``repeat`` runs of ``fn()``, in seconds of ``clock`` (default the wall clock;
    ``time.process_time``, this process's CPU seconds, is far less disturbed by other jobs on the machine)."""
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def bytecodes(fn) -> int:
    """How many Python bytecodes one run of ``fn()`` executes (``sys.settrace`` opcode events; work done in
    C, numpy's included, counts nothing): the interpreter's work, the same on a busy machine as on an idle
    one, for before/after comparisons that the clocks' noise would hide."""
    count = [0]

    def tracer(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            count[0] += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count[0]
