"""The grading pool and Ctrl-C (grader/runtime/pool.py): the fork server and its pool processes ignore SIGINT, a
SIGINT that lands while the fork server starts is raised afterwards (never lost), and ``stop_pool`` ends
running work at once. Each case runs in a fresh interpreter: the fork server is one per process."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout.split()


def test_the_fork_server_and_every_pool_process_ignore_sigint():
    assert run("""
        import os
        from multiprocessing import forkserver
        from grader.config import load_settings
        from grader.runtime.pool import grading_pool
        def ignores(pid):
            mask = open(f"/proc/{pid}/status").read().split("SigIgn:")[1].split()[0]
            return bool(int(mask, 16) & 1 << 1)  # bit 1: SIGINT (2)
        pool = grading_pool(load_settings(workers=2))
        workers = {pool.submit(os.getpid).result() for _ in range(4)}
        print(ignores(forkserver._forkserver._forkserver_pid), all(map(ignores, workers)), ignores(os.getpid()))
        pool.shutdown()
    """) == ["True", "True", "False"]


@pytest.mark.parametrize("idle_thread", [False, True], ids=["main-thread-only", "with-an-idle-thread"])
def test_a_sigint_while_the_fork_server_starts_is_raised_afterwards(idle_thread):
    """With another thread in the process (an idle compile thread, a progress bar's), the kernel hands a
    process-directed SIGINT that the main thread blocks to that thread: had this process's disposition
    been ``SIG_IGN`` meanwhile (the fork server's start before the fix), the Ctrl-C was discarded."""
    assert run(f"""
        import os, signal, threading
        from multiprocessing import forkserver
        import grader.runtime.pool as pool
        if {idle_thread}:
            threading.Thread(target=threading.Event().wait, daemon=True).start()
        start = forkserver.ensure_running
        def start_and_ctrl_c():
            os.kill(os.getpid(), signal.SIGINT)  # what the terminal sends, in the worst moment
            start()
        forkserver.ensure_running = start_and_ctrl_c
        try:
            pool._start_forkserver()
            print("lost")
        except KeyboardInterrupt:
            print("raised")
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    """) == ["raised", "True"]


def test_stop_pool_ends_a_running_point_at_once():
    out = run("""
        import time
        from grader.config import load_settings
        from grader.runtime.pool import grading_pool, stop_pool
        pool = grading_pool(load_settings(workers=1))
        running = pool.submit(time.sleep, 60)
        time.sleep(1.0)
        stop_pool(pool)  # waited for the sleep, the future would hold its result (None), not an error
        print(type(running.exception(timeout=0)).__name__)
    """)
    assert out == ["BrokenProcessPool"]



def test_a_ctrl_c_swallowed_by_a_weakref_callback_is_not_lost():
    """CI: a Ctrl-C during `kdt-grade submit` once landed while the garbage collector ran a weakref
    callback (sqlalchemy's ``_collection_gced``); Python printed "Exception ignored" and the command graded
    on and exited 0. Plain Python loses it (the first line); ``InterruptLatch`` raises it at the next
    ``check()`` and at the end of its block, and keeps the swallowed one out of stderr."""
    assert run("""
        import gc, os, signal, sys, weakref
        from grader.runtime.pool import InterruptLatch

        class Thing:
            pass

        def ctrl_c_in_a_callback():
            def callback(_ref):
                os.kill(os.getpid(), signal.SIGINT)
                sum(range(1000))  # the handler runs here, inside the callback
            thing = Thing()
            ref = weakref.ref(thing, callback)
            del thing
            gc.collect()

        seen = []
        sys.unraisablehook, default = (lambda info: seen.append(info.exc_type.__name__)), sys.unraisablehook
        ctrl_c_in_a_callback()
        sys.unraisablehook = default
        print("plain:", *seen)
        latch = InterruptLatch()
        try:
            with latch.armed():
                ctrl_c_in_a_callback()
                try:
                    latch.check()
                except KeyboardInterrupt:
                    print("check: raised")
        except KeyboardInterrupt:
            print("end: raised")
        quiet = InterruptLatch()
        with quiet.armed():
            quiet.check()
        print("quiet:", quiet.hit)
    """) == ["plain:", "KeyboardInterrupt", "check:", "raised", "end:", "raised", "quiet:", "False"]
