"""The process pool that judges test points (``grader.judging.pipeline.judge``), and how it meets Ctrl-C.

- ``grading_pool(settings, workers)``: a ``forkserver`` pool (clean processes, kdt and the judger
  preloaded) whose processes carry the grading memory limit (``limit_memory``) and run at a lower CPU
  priority (``settings.grade_nice``), so a server in the same machine keeps answering while they grade.
- Ctrl-C in a terminal sends SIGINT to the whole foreground process group. The fork server ignores
  SIGINT from its first instruction on (``_start_forkserver``), and every pool process inherits that: only the main process is interrupted, and it
  stops the pool itself (``stop_pool``: running points are not waited for, nothing prints a traceback).
- Pool processes are spawned inside ``pool.submit``; ``interrupts_deferred()`` holds a Ctrl-C back
  while a batch is submitted, so the main process never exits with a process half-started (whose
  queues would be gone before it reads them).
- ``start_forkserver(preload)``: the fork server both kinds of processes come from (the pool's, and the
  HTTP processes of ``kdt-grade serve``).
- ``open_pool(settings, workers)``: ``grading_pool`` as a context manager that stops the pool on any
  exception (Ctrl-C included) and shuts it down normally otherwise.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import multiprocessing
import os
import resource
import select
import signal
import sys
import threading
from collections.abc import Iterator
from multiprocessing import forkserver, resource_tracker

from grader.config import Settings

PRELOAD = ["kdt", "judger.grading", "grader.judging.pipeline"]
SIGINT_IGNORED = "grader.runtime.sigint_ignored"  # always the fork server's first import
_preload_chosen = False


def grading_pool(settings: Settings, workers: int | None = None) -> concurrent.futures.ProcessPoolExecutor:
    """A process pool of ``workers`` (default ``settings.workers``) processes for ``pipeline.judge``."""
    ctx = start_forkserver()
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=workers or settings.workers, mp_context=ctx, initializer=prepare_grading_process,
        initargs=(settings.grade_memory_mb, settings.grade_nice, os.getpid()))


def renewed(pool: concurrent.futures.ProcessPoolExecutor | None, settings: Settings
            ) -> concurrent.futures.ProcessPoolExecutor:
    """``pool`` if it can still take work, else a new ``grading_pool(settings)`` (the old one, broken by
    a process that died, is shut down without waiting)."""
    if pool is not None and not getattr(pool, "_broken", False):
        return pool
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    return grading_pool(settings)


@contextlib.contextmanager
def open_pool(settings: Settings, workers: int | None = None) -> Iterator[concurrent.futures.ProcessPoolExecutor]:
    """``grading_pool`` for a ``with`` block: shut down when the block ends, stopped at once (running
    points abandoned, see ``stop_pool``) when it raises (KeyboardInterrupt included)."""
    pool = grading_pool(settings, workers)
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown()


def stop_pool(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: queued points are cancelled, its processes terminated (SIGTERM) and reaped.
    Python 3.11's executor has no public way to end running work, hence its ``_processes`` map."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold back a Ctrl-C (SIGINT) until the block ends, then hand it to the SIGINT handler that was in
    place (Python's default raises ``KeyboardInterrupt``; after one that returns, ``KeyboardInterrupt``
    is raised all the same). Only the main thread receives SIGINT in Python; elsewhere (a server's
    grading threads) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:  # the handler the block replaced gets the Ctrl-C now (an ``InterruptLatch`` remembers it)
        if callable(previous):
            previous(signal.SIGINT, caught[0])
        raise KeyboardInterrupt


class InterruptLatch:
    """Ctrl-C for a long command (``kdt-grade submit`` grading here): SIGINT raises ``KeyboardInterrupt``
    as usual and is also remembered, because Python swallows an exception raised where it cannot
    propagate (a weakref callback or ``__del__`` run by the garbage collector: "Exception ignored in
    ..."), and the Ctrl-C would be lost. ``check()`` raises it again (call it between steps); leaving the
    block raises it too. Main thread only; elsewhere it does nothing."""

    def __init__(self):
        self.hit = False

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` if a Ctrl-C came (also one that was swallowed)."""
        if self.hit:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def armed(self) -> Iterator["InterruptLatch"]:
        if threading.current_thread() is not threading.main_thread():
            yield self
            return

        def on_sigint(signum, frame):
            self.hit = True
            raise KeyboardInterrupt

        def unraisable(info, default=sys.unraisablehook):  # the swallowed one: remembered, not printed
            if not (self.hit and isinstance(info.exc_value, KeyboardInterrupt)):
                default(info)

        previous, previous_hook = signal.signal(signal.SIGINT, on_sigint), sys.unraisablehook
        sys.unraisablehook = unraisable
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)
            sys.unraisablehook = previous_hook
        self.check()


def start_forkserver(preload: list[str] = PRELOAD) -> multiprocessing.context.ForkServerContext:
    """multiprocessing's fork server, started now if it is not running (once per process, SIGINT ignored:
    ``_start_forkserver``), with the modules ``preload`` imported in it first: every process forked from
    it starts with them imported. Returns the ``forkserver`` context. The first start decides what is
    preloaded (``kdt-grade serve`` adds its web app, for its HTTP processes); the start returns at once,
    the fork server imports in parallel with this process."""
    global _preload_chosen
    ctx = multiprocessing.get_context("forkserver")
    if not _preload_chosen:  # the first start decides (and a fork server started again keeps it)
        ctx.set_forkserver_preload([SIGINT_IGNORED, *preload])
        _preload_chosen = True
    _start_forkserver()
    return ctx


def _start_forkserver() -> None:
    """Start multiprocessing's fork server (once per process) so that it and every process forked from it
    ignore SIGINT (see the module docstring): it is spawned with SIGINT blocked in this thread (a signal
    mask is inherited across ``exec``) and its first preloaded module, ``grader.runtime.sigint_ignored``,
    ignores SIGINT and unblocks it. This process's own disposition is never changed: a Ctrl-C sent to the
    process group meanwhile goes to another thread of this process or stays pending, and reaches this
    process's handler either way (setting ``SIG_IGN`` here, as before, let the kernel hand it to an idle
    thread that discarded it: the Ctrl-C was lost)."""
    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()  # a server's grading thread: the main thread started it already
        return
    with interrupts_deferred():
        resource_tracker.ensure_running()  # first: starting it unblocks SIGINT at its end
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            forkserver.ensure_running()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def prepare_grading_process(megabytes: int, nice: int, owner: int | None = None) -> None:
    """The pool's initializer: the simulator and the judger imported (``PRELOAD``: already there when the
    fork server preloaded them; ``kdt-grade serve``'s does not, so that its HTTP processes start without
    waiting for torch), the memory cap (``limit_memory``), ``nice`` more CPU niceness, and an end with the
    process ``owner`` that made the pool (``exit_with``)."""
    if owner is not None:
        exit_with(owner)
    for name in PRELOAD:
        importlib.import_module(name)
    limit_memory(megabytes)
    if nice > 0:
        os.nice(nice)


def exit_with(pid: int) -> None:
    """End this process (exit status 1) as soon as process ``pid`` ends, from a daemon thread waiting on
    its pidfd. A pool process's parent is the fork server, so nothing else notices when the server or
    worker that owns the pool is killed (SIGKILL, the OOM killer): its processes would go on judging for
    nobody and then wait on their queue for ever, and the fork server with them. Raises nothing: if
    ``pid`` is already gone, this process ends at once."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        os._exit(1)

    def wait() -> None:
        select.select([fd], [], [])
        os._exit(1)

    threading.Thread(target=wait, name="kdt-grade-owner", daemon=True).start()


def limit_memory(megabytes: int) -> None:
    """Cap this process's address space at ``megabytes`` MiB, so running out is a ``MemoryError``
    (``MLE``), not the OOM killer taking the whole worker."""
    limit = megabytes * 2**20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
