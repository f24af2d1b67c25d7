"""An audit hook for the sandboxed compile child: a detector, never the only wall.

``install(allowed_roots)`` records every security-relevant event the submission triggers and refuses the
clearly hostile ones (network, processes, signals, native code, writes, reads outside the allowed
roots) by raising ``PermissionError``. Each refused event is reported to the parent as it happens, and
all it saw with the results; the parent turns any refused event into verdict ``SV``.

The hook is an object in the submission's own process. Code that got past the static audit to the
builtins or to ``gc`` can find it and switch it off (an exploit did that with ``gc.get_objects()``,
clearing ``events`` and widening ``allowed``). Nothing in this process can prevent that, so nothing may
depend on it. The wall is the operating system's: ``grader.judging.sandbox`` runs the child under its own user id,
in its own namespaces and within its limits, and that must hold with this hook off
(``tests/adversarial/test_corpus.py``: the audit bypassed, the hook's record cleared, the secrets stay
unread). A refusal here is a better message and an ``SV``; it keeps nothing safe.
"""
import os
import sys

# Events refused outright (prefix match on the event name).
BLOCKED_PREFIXES = (
    # network
    "socket.", "urllib.", "http.", "ftplib.", "smtplib.", "webbrowser.",
    # processes and signals
    "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
    "os.kill", "os.killpg", "pty.",
    # native code
    "ctypes.",
    # filesystem and environment changes
    "os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.chown",
    "os.truncate", "os.putenv", "os.unsetenv", "shutil.",
    # tampering with the sandbox itself
    "sys.addaudithook", "resource.setrlimit", "os.setuid",
)
#: ``object.__getattr__`` events refused: the frame of a generator, coroutine or async generator, the way
#: from any code to its builtins (an exploit read ``gi_frame`` through a class pattern). The judge's own code
#: never reads these; ``tb_frame`` and ``f_code``, which traceback formatting reads, stay allowed.
FRAME_ATTRIBUTES = frozenset({"gi_frame", "cr_frame", "ag_frame"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class Recorder:
    """Collects ``{"event", "detail", "blocked"}`` records (at most ``limit``); ``sink(record)``, when
    given, gets each one at once (the compile child writes it to the parent straight away, so a run that
    dies or is killed later still reports what was refused)."""

    def __init__(self, allowed_roots, limit: int = 100, sink=None):
        self.allowed = tuple(os.path.realpath(r) + os.sep for r in allowed_roots)
        self.events: list = []
        self.limit = limit
        self.sink = sink

    def note(self, event: str, detail: str, blocked: bool) -> None:
        if len(self.events) < self.limit:
            record = {"event": event, "detail": detail[:300], "blocked": blocked}
            self.events.append(record)
            if self.sink is not None:
                self.sink(record)

    def __call__(self, event: str, args) -> None:
        if event == "open":
            self.check_open(args)
        elif event == "object.__getattr__":
            self.check_getattr(args)
        elif event.startswith(BLOCKED_PREFIXES):
            self.note(event, _short(args), True)
            raise PermissionError(f"blocked by the judge's sandbox: {event}")

    def check_getattr(self, args) -> None:
        name = args[1] if len(args) > 1 else None
        if name in FRAME_ATTRIBUTES:
            self.note("object.__getattr__", f"{name} of a {type(args[0]).__name__}", True)
            raise PermissionError(f"blocked by the judge's sandbox: reading {name}")

    def check_open(self, args) -> None:
        path, mode, flags = (list(args) + [None, None, None])[:3]
        if isinstance(path, int) or path is None:
            return
        path = os.fsdecode(path) if isinstance(path, bytes) else str(path)
        real = os.path.realpath(path)
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITE_FLAGS)
        if writing or not (real + os.sep).startswith(self.allowed):
            self.note("open", f"{path} ({'write' if writing else 'read'})", True)
            raise PermissionError(f"blocked by the judge's sandbox: open {path!r}")


def install(allowed_roots, sink=None) -> Recorder:
    """Install the hook (permanently, as audit hooks are) and return its recorder (``sink``: see
    ``Recorder``)."""
    recorder = Recorder(allowed_roots, sink=sink)
    sys.addaudithook(recorder)
    return recorder


def _short(args) -> str:
    try:
        return repr(args)[:300]
    except Exception:  # a hostile object's __repr__ must not break the hook
        return "<unprintable>"
