"""Warm starts of contained sandbox runs: a template process per judge process that has
imported the compile child's modules once, and forks each run from there instead of starting a fresh
interpreter that imports numpy and torch again (seconds of CPU per submission that grade nothing).

- ``spawn(key, fds, targets, join, nice)`` starts one run through the template of ``key`` (``TemplateKey``:
  interpreter, site directory, environment, modules), starting the template first when there is none in
  this process or the last one died. Returns a ``WarmRun`` (the handle ``grader.judging.sandbox`` watches
  like a ``Popen``). Raises ``TemplateBroken`` when no working template can be had (the judge's fault: the
  sandbox reports the run ``unavailable``, the compile is ``IE`` and retried, never ``CE``).
- ``prestart(key, wait)`` starts the template of ``key`` now, in a thread of its own, so that the first
  run of a fresh judge process (a worker's first submission, after any restart) forks from a template
  instead of waiting for the imports; a ``spawn`` meanwhile waits for it (the lock), never starts a second.
- ``status()`` describes the templates of this process, for ``kdt-grade admin doctor``.

The template (``grader/judging/sandbox_template.py``) is started with ``python -I``, the runs' constant
environment and ``close_fds``: nothing of the judge (database URL, tokens, memory) is in it. Each child
it forks enters exactly the sandbox of a cold start (see that module) before it reads the submission, so
every containment property holds unchanged; what the child is spared is only the interpreter start and
the imports, done once by trusted code before any submission existed.

A judge process that forks (Celery's prefork pool, the multiprocessing fork server) gets its own
template: a template belongs to the process that started it (a forked child forgets its parent's,
``_forget_after_fork``). A template ends when its judge process's socket closes; a run whose template
died under it is the judge's fault (``WarmRun.template_died``, ``IE``), never the contestant's.
"""
from __future__ import annotations

import logging
import marshal
import os
import select
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

TEMPLATE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox_template.py")
START_SECONDS = 120.0  # importing torch on a loaded machine; past this the template is broken
ANSWER_SECONDS = 30.0  # a fork and a pidfd; past this the template is broken
COMPILE_ROOM = 256 * 2**20  # address space a compile needs beyond the template's own (bytes)


class TemplateBroken(Exception):
    """No working warm template (it would not start, died, or did not answer): the judge's fault."""


@dataclass(frozen=True)
class TemplateKey:
    """What a template is made for: ``python`` and ``site_dir`` (``grader.judging.sandbox._interpreter``),
    ``env`` (the runs' environment, name -> value) as sorted pairs, and the ``modules`` it imports."""

    python: str
    site_dir: str
    env: tuple
    modules: tuple


class WarmRun:
    """One run forked by a template, watched like a ``subprocess.Popen``: ``pid`` (the run's outer
    process, leader of its own process group), ``stdout``/``stderr`` (the read ends of its pipes),
    ``poll()`` (None while it runs, else 0: the run's real status comes from its control pipe) and
    ``wait(timeout)`` (raises ``subprocess.TimeoutExpired``). Seen through a pidfd, so a reused pid can
    never be mistaken for the run."""

    def __init__(self, pid: int, pidfd: int, stdout, stderr, template: "_Template"):
        self.pid, self._pidfd, self.stdout, self.stderr = pid, pidfd, stdout, stderr
        self.returncode: int | None = None
        self._template = template

    def template_died(self) -> bool:
        """The template that forked this run has exited (then so did the run: its parent-death signal)."""
        return not self._template.alive()

    def kill(self) -> None:
        """SIGKILL the run's outer process through its pidfd (never a pid that may have been reused); its
        init and everything in its namespace follow (parent-death signal, then the namespace's end)."""
        try:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = 0
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"sandbox run {self.pid}", timeout)
            self.returncode = 0
        return self.returncode

    def close(self) -> None:
        """Release the pidfd and the pipes (after the run has been collected)."""
        for f in (self.stdout, self.stderr):
            f.close()
        os.close(self._pidfd)


class _Template:
    """One running template process and the socket to it."""

    def __init__(self, key: TemplateKey):
        self.key, self.runs, self.started = key, 0, time.monotonic()
        judge_end, template_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = judge_end
        _STARTING.add(judge_end)  # a process forked meanwhile (another thread) must not keep it open
        judge = os.getpid()  # the template dies with it (its own parent-death signal: sandbox_template.main)
        try:
            self.proc = subprocess.Popen(
                [key.python, "-I", TEMPLATE_PATH, str(template_end.fileno()), str(judge), key.site_dir,
                 ",".join(key.modules)], cwd="/", env=dict(key.env), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(template_end.fileno(),),
                start_new_session=True, close_fds=True)
        except (OSError, subprocess.SubprocessError) as exc:
            judge_end.close()
            raise TemplateBroken(f"the warm template could not start: {exc}") from None
        finally:
            template_end.close()
        try:
            answer = self._answer(START_SECONDS, "start")
        finally:
            _STARTING.discard(judge_end)
        if answer[0] != "ready":
            self.stop()
            raise TemplateBroken(f"the warm template could not import the judge's modules: {answer[1]}")
        self.pid, self.address_space = answer[1]

    def _answer(self, seconds: float, doing: str) -> tuple:
        """The template's next message as ``(marshal value, fds)``... flattened: ``(*value, fds)``."""
        if not select.select([self.sock], [], [], seconds)[0]:
            self.stop()
            raise TemplateBroken(f"the warm template did not answer within {seconds:g} s ({doing})")
        try:
            message, fds, _, _ = socket.recv_fds(self.sock, 4096, 1)
            value = marshal.loads(message) if message else ("gone", "it exited")
        except (OSError, EOFError, ValueError) as exc:
            self.stop()
            raise TemplateBroken(f"the warm template's answer could not be read ({doing}): {exc}") from None
        if not isinstance(value, tuple) or len(value) != 2:
            self.stop()
            raise TemplateBroken(f"the warm template gave a malformed answer ({doing})")
        return (*value, fds)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def check_room(self, memory_bytes: int) -> None:
        """Raise ``TemplateBroken`` when a child could not work within ``memory_bytes`` of address space
        (``RLIMIT_AS``): it starts with the template's own (numpy, torch, ... mapped), and a compile needs
        ``COMPILE_ROOM`` more. A cold child failed the same way importing torch: the judge's fault."""
        if memory_bytes < self.address_space + COMPILE_ROOM:
            raise TemplateBroken(
                f"the compile memory limit of {memory_bytes // 2**20} MiB is too low: the judge's own modules "
                f"take {self.address_space // 2**20} MiB of address space before a submission is read "
                f"(KDT_GRADE_COMPILE_MEMORY_MB must leave at least {COMPILE_ROOM // 2**20} MiB more)")

    def spawn(self, fds: list, request: dict) -> tuple[int, int]:
        """Send one run's request; returns ``(pid, pidfd)`` of the forked child."""
        try:
            socket.send_fds(self.sock, [marshal.dumps(request)], fds)
        except OSError as exc:
            self.stop()
            raise TemplateBroken(f"the warm template is gone: {exc}") from None
        kind, value, got = self._answer(ANSWER_SECONDS, "fork")
        if kind != "started" or len(got) != 1:
            for fd in got:
                os.close(fd)
            self.stop()
            raise TemplateBroken(f"the warm template could not fork a run: {value}")
        self.runs += 1
        return value, got[0]

    def stop(self) -> None:
        """Close the socket (the template then exits) and make sure it is gone."""
        self.sock.close()
        if getattr(self, "proc", None) is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_LOCK = threading.Lock()
_TEMPLATES: dict = {}  # TemplateKey -> _Template, of this process (a forked child: _forget_after_fork)
_STARTING: set = set()  # the judge ends of templates being started (not yet in _TEMPLATES)


def _template(key: TemplateKey) -> "_Template":
    """The live template of ``key``, started now when there is none (or it died). Call with ``_LOCK`` held."""
    template = _TEMPLATES.get(key)
    if template is None or not template.alive():
        _TEMPLATES.pop(key, None)
        template = _TEMPLATES[key] = _Template(key)
    return template


def prestart(key: TemplateKey, wait: bool = False) -> threading.Thread:
    """Start the template of ``key`` now, in a thread of its own (returned; joined first with ``wait``),
    unless this process has a live one. A judge process calls this when it starts (a worker's pool
    process, ``kdt-grade local``), so that its first run forks from a template, as every later one does,
    instead of paying the imports of a cold start. A ``spawn`` made meanwhile waits for this start (the
    lock) rather than starting another. A template that cannot start is only logged here: the next
    ``spawn`` tries again and reports it (``TemplateBroken``: ``IE``, retried)."""
    def start():
        try:
            with _LOCK:
                _template(key)
        except TemplateBroken as exc:
            log.warning("the warm compile template could not be started in advance: %s", exc)

    thread = threading.Thread(target=start, name="kdt-warm-template", daemon=True)
    thread.start()
    if wait:
        thread.join()
    return thread


def spawn(key: TemplateKey, fds: list, targets: list, control: int, config: int, join: list,
          nice: int, memory_bytes: int, stdout, stderr) -> WarmRun:
    """Fork one run from the template of ``key``: the child gets ``fds[i]`` as descriptor ``targets[i]``
    (``control`` and ``config`` are indexes into them: the control pipe and the config memfd), joins the
    cgroup through the ``join`` files and lowers its priority by ``nice``; ``memory_bytes`` is its address
    space limit (``_Template.check_room``). ``stdout``/``stderr`` are the
    judge's read ends of the run's pipes (kept in the returned ``WarmRun``). A template that died is
    replaced once; raises ``TemplateBroken`` when that one fails too."""
    request = {"targets": list(targets), "control": control, "config": config, "join": list(join),
               "nice": int(nice)}
    with _LOCK:
        for attempt in (1, 2):
            template = _template(key)
            template.check_room(memory_bytes)  # raised as it is: a new template would not fit either
            try:
                pid, pidfd = template.spawn(fds, request)
                return WarmRun(pid, pidfd, stdout, stderr, template)
            except TemplateBroken:
                _TEMPLATES.pop(key, None)
                if attempt == 2:
                    raise
    raise AssertionError("unreachable")


def _forget_after_fork() -> None:
    """In a forked child of a judge process: a new lock (the parent's may have been held by another of
    its threads), and none of the parent's templates; their sockets are closed here, so that a template
    still sees its end when its own judge closes it."""
    global _LOCK
    _LOCK = threading.Lock()
    for template in _TEMPLATES.values():
        template.sock.close()
    _TEMPLATES.clear()
    for sock in _STARTING:
        sock.close()
    _STARTING.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def status() -> list[str]:
    """One line per template of this process: pid, modules, runs forked, age."""
    with _LOCK:
        return [f"warm template {t.pid}: {t.runs} run(s) in {time.monotonic() - t.started:.0f} s, "
                f"{'alive' if t.alive() else 'dead'}, preloaded {', '.join(t.key.modules)}"
                for t in _TEMPLATES.values()]


def stop_all() -> None:
    """Stop this process's templates (tests; a judge process that ends takes them along anyway)."""
    with _LOCK:
        for template in _TEMPLATES.values():
            template.stop()
        _TEMPLATES.clear()
