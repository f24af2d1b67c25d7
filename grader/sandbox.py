"""Run untrusted Python in a limited child process (issue 5, "the child").

The child gets: a fresh empty working directory holding only the files it is given; an environment with
none of our settings or credentials; resource limits (CPU seconds, address space, file size, open files,
processes, no core dumps); a new network namespace where the OS allows it (``unshare(CLONE_NEWNET)``,
logged once and skipped where not permitted); an unprivileged user when we run as root (``nobody``); a
wall-clock limit enforced here; and capped output. Results come back on a dedicated pipe (fd passed as
``--result-fd``), separate from the child's stdout/stderr, so nothing the submission prints can be
mistaken for a result. Whatever happens, the child's whole process group and any process that escaped
it carrying this run's marker are killed before ``run_sandboxed`` returns.
"""
import ctypes
import ctypes.util
import fcntl
import logging
import os
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

CLONE_NEWNET = 0x40000000
UID_BASE, UID_SLOTS = 61000, 1000  # uids of sandboxed children (no passwd entries needed)
UID_LOCK_DIR = "/tmp/kdt-sandbox-uids"
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
# Hidden from the child by an empty tmpfs (mount namespace): Unix sockets of local services such as
# PostgreSQL live here, and a network namespace does not cover filesystem sockets.
HIDDEN_DIRS = ("/run", "/dev/shm")
# Hidden too unless the judge's own install lies below them: the world-writable directories, where a child
# could read what others left or leave files for a later run of the same user id.
PRIVATE_TMP = ("/tmp", "/var/tmp")
# As root, the children's work directories live here (outside the hidden /tmp); traversable, not listable.
WORK_ROOT = "/var/lib/kdt-grade-sandbox"
JUDGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # where grader/ and kdt/ are
_MARKER = "KDT_SANDBOX_RUN"
NO_INTERPRETER = (f"no python{sys.version_info.major}.{sys.version_info.minor} that the sandbox's unprivileged "
                  "user can run: the judge's interpreter is under a directory other users cannot enter (e.g. a "
                  "0700 home) and there is no /usr/bin or /usr/local/bin python of that version; install one, "
                  "or the judge under a readable path")
# The child's entry: a constant (no caller data is formatted into code); what to run comes on argv.
_BOOTSTRAP = (
    "import runpy, site, sys\n"
    "kind, target, sp = sys.argv[1:4]\n"
    "if sp: site.addsitedir(sp)\n"
    "sys.argv = [target] + sys.argv[4:]\n"
    "if kind == 'module': runpy.run_module(target, run_name='__main__', alter_sys=True)\n"
    "else: runpy.run_path(target, run_name='__main__')\n"
)


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed child: ``cpu_seconds`` (RLIMIT_CPU), ``wall_seconds`` (enforced by the
    parent), ``memory_bytes`` (RLIMIT_AS), ``file_bytes`` (RLIMIT_FSIZE), ``open_files``, ``processes``
    (RLIMIT_NPROC, counted per user; effective once the child runs unprivileged), ``output_bytes``
    (stdout + stderr kept; more kills the child), ``result_bytes`` (the result pipe) and ``nice`` (CPU
    niceness added: a compile must not slow a server on the same machine)."""

    cpu_seconds: int = 10
    wall_seconds: float = 30.0
    memory_bytes: int = 2 * 1024 ** 3
    file_bytes: int = 16 * 1024 ** 2
    open_files: int = 256
    processes: int = 512
    output_bytes: int = 1024 ** 2
    result_bytes: int = 64 * 1024 ** 2
    nice: int = 0


@dataclass
class SandboxRun:
    """What a sandboxed child did. ``status`` is ``exited`` (see ``returncode``), ``signalled`` (see
    ``signal_name``: ``SIGXCPU`` means the CPU limit, ``SIGKILL`` often the memory limit),
    ``timeout`` (wall clock), ``output_limit`` (stdout/stderr flood), ``result_limit``, or
    ``unavailable``: nothing ran, the sandbox cannot work here (``stderr`` says why; the judge's fault)."""

    status: str
    returncode: int | None
    signal_name: str | None
    wall_seconds: float
    stdout: bytes
    stderr: bytes
    result: bytes
    network_isolated: bool
    unprivileged: bool
    killed_escapees: int = 0
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "exited" and self.returncode == 0


def run_sandboxed(entry: tuple, args: list, files: dict, limits: SandboxLimits) -> SandboxRun:
    """Run ``entry`` — ``("module", "pkg.mod")`` (like ``python -m``) or ``("script", "file.py")`` (one of
    ``files``) — with ``args + ["--result-fd", N]`` in a sandbox whose working directory holds ``files``
    (name -> bytes). Returns a ``SandboxRun``; never raises because of what the child does."""
    workdir = tempfile.mkdtemp(prefix="kdt-sandbox-", dir=_work_root())
    run_id = uuid.uuid4().hex
    try:
        with _sandbox_uid() as user:
            return _prepare_and_run(entry, args, files, limits, workdir, run_id, user)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _prepare_and_run(entry, args, files, limits, workdir, run_id, user) -> SandboxRun:
    """Fill the work directory (readable by the child's uid only) and run the child."""
    for name, content in files.items():
        path = os.path.join(workdir, os.path.basename(name))
        with open(path, "wb") as f:
            f.write(content)
        os.chmod(path, 0o444)
    if user:
        os.chown(workdir, *user)
    os.chmod(workdir, 0o700)
    python, site_dir = _interpreter(user)
    if user is not None and python is None:  # never run the submission with our own (root) rights instead
        return SandboxRun("unavailable", None, None, 0.0, b"", NO_INTERPRETER.encode(), b"", False, False)
    argv = [python, "-I", "-c", _BOOTSTRAP, entry[0], entry[1], site_dir, *args]
    return _run(argv, workdir, run_id, user, limits, hidden_dirs(python, site_dir))


def _work_root() -> str | None:
    """``WORK_ROOT`` (created, mode 0711) when we are root, else None (the system's temporary directory)."""
    if os.geteuid() != 0:
        return None
    os.makedirs(WORK_ROOT, mode=0o711, exist_ok=True)
    os.chmod(WORK_ROOT, 0o711)
    return WORK_ROOT


def hidden_dirs(python: str, site_dir: str) -> tuple[str, ...]:
    """The directories the child sees as an empty, read-only tmpfs: ``HIDDEN_DIRS`` and those of
    ``PRIVATE_TMP`` that hold none of what the child must load (interpreter, packages, the judge)."""
    needed = [os.path.realpath(p) for p in (python, sys.prefix, site_dir or sys.prefix, JUDGE_ROOT)]
    return HIDDEN_DIRS + tuple(d for d in PRIVATE_TMP
                               if not any(n == d or n.startswith(d + os.sep) for n in needed))


def _run(argv, workdir, run_id, user, limits, hidden=HIDDEN_DIRS) -> SandboxRun:
    read_fd, write_fd = os.pipe()
    env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8", "TMPDIR": workdir,
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONDONTWRITEBYTECODE": "1", _MARKER: run_id}
    netns = network_isolation_available()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            [*argv, "--result-fd", str(write_fd)], cwd=workdir, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_fd,),
            preexec_fn=_child_setup(limits, user, netns, hidden), close_fds=True)
    finally:
        os.close(write_fd)
    try:
        status, out, err, result = _collect(proc, read_fd, limits, start)
    finally:
        os.close(read_fd)
        _kill_group(proc)
        _reap(proc)  # interrupted (Ctrl-C) before _collect waited: a zombie would keep the uid "alive"
        escaped = _kill_escapees(run_id, uid=user[0] if user is not None else None)
        if user is not None:
            _await_reaped(user[0])
    returncode = proc.returncode
    signal_name = signal.Signals(-returncode).name if returncode is not None and returncode < 0 else None
    if status == "finished":
        status = "signalled" if signal_name else "exited"
    return SandboxRun(status, returncode if returncode is None or returncode >= 0 else None, signal_name,
                      time.monotonic() - start, out, err, result, netns, user is not None, escaped)


def _collect(proc, result_fd, limits, start):
    """Read stdout, stderr and the result pipe until all close, a limit is hit or time runs out."""
    sel = selectors.DefaultSelector()
    bufs = {"out": bytearray(), "err": bytearray(), "result": bytearray()}
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    sel.register(result_fd, selectors.EVENT_READ, "result")
    status = "finished"
    open_streams = 3
    grace_end = None  # once the child exits, a process it left behind must not hold the pipes open
    while open_streams:
        now = time.monotonic()
        remaining = limits.wall_seconds - (now - start)
        if remaining <= 0:
            status = "timeout"
            break
        if grace_end is None and proc.poll() is not None:
            grace_end = now + 0.5
        if grace_end is not None and now > grace_end:
            break
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            fd = key.fileobj if isinstance(key.fileobj, int) else key.fileobj.fileno()
            chunk = os.read(fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            bufs[key.data] += chunk
        if len(bufs["out"]) + len(bufs["err"]) > limits.output_bytes:
            status = "output_limit"
            break
        if len(bufs["result"]) > limits.result_bytes:
            status = "result_limit"
            break
    sel.close()
    if status != "finished":
        _kill_group(proc)
    try:
        proc.wait(timeout=max(0.1, limits.wall_seconds - (time.monotonic() - start)) if status == "finished" else 5)
    except subprocess.TimeoutExpired:
        status = "timeout"
        _kill_group(proc)
        proc.wait()
    cap = limits.output_bytes
    return status, bytes(bufs["out"][:cap]), bytes(bufs["err"][:cap]), bytes(bufs["result"])


def _child_setup(limits: SandboxLimits, user, netns: bool, hidden=HIDDEN_DIRS):
    """The function run in the child between fork and exec (order matters: namespaces need root)."""
    libc = _libc() if netns else None

    def setup():
        os.setsid()
        if libc is not None:
            libc.unshare(CLONE_NEWNET | CLONE_NEWNS)
            if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0:
                for d in hidden:
                    libc.mount(b"tmpfs", d.encode(), b"tmpfs", 0, b"size=64k,mode=755")
        for res, value in ((resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)),
                           (resource.RLIMIT_AS, (limits.memory_bytes,) * 2),
                           (resource.RLIMIT_FSIZE, (limits.file_bytes,) * 2),
                           (resource.RLIMIT_NOFILE, (limits.open_files,) * 2),
                           (resource.RLIMIT_NPROC, (limits.processes,) * 2),
                           (resource.RLIMIT_CORE, (0, 0))):
            resource.setrlimit(res, value)
        if limits.nice > 0:
            os.nice(limits.nice)
        if user is not None:
            os.setgroups([])
            os.setgid(user[1])
            os.setuid(user[0])
    return setup


def _reap(proc) -> None:
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_escapees(run_id: str, uid: int | None = None, patience: float = 5.0) -> int:
    """Kill every process still carrying this run's marker (it may have left the process group) or, with
    ``uid``, running as this run's own user id (a process can scrub its environment, not its uid), and
    wait until they are gone. Returns how many processes had to be killed here."""
    marker = f"{_MARKER}={run_id}".encode()
    killed, seen = 0, set()
    deadline = time.monotonic() + patience
    while True:
        alive = [pid for pid in _pids() if (uid is not None and _uid_of(pid) == uid) or _has_marker(pid, marker)]
        if not alive or time.monotonic() > deadline:
            return killed
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            if pid not in seen:
                seen.add(pid)
                killed += 1
        time.sleep(0.02)


def _await_reaped(uid: int, patience: float = 3.0) -> None:
    """Wait until the sandbox user's killed processes are reaped: zombies still count against
    RLIMIT_NPROC, and the next child (whose torch import starts threads) must not start short."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline and any(_is_zombie_of(pid, uid) for pid in _pids()):
        time.sleep(0.05)


def _is_zombie_of(pid: int, uid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            status = f.read()
    except OSError:
        return False
    return b"State:\tZ" in status and f"Uid:\t{uid}\t".encode() in status


def _pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _uid_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker in f.read().split(b"\0")
    except OSError:
        return False


@contextmanager
def _sandbox_uid():
    """A user id of this run's own, when we are root: ``(uid, gid)``, else None. Each concurrent run gets
    a different one (an flock-ed slot in ``UID_LOCK_DIR``), so children cannot read each other's files,
    signal each other or share RLIMIT_NPROC, and every process left with that uid can be killed at the end."""
    if os.geteuid() != 0:
        yield None
        return
    os.makedirs(UID_LOCK_DIR, mode=0o700, exist_ok=True)
    for uid in range(UID_BASE, UID_BASE + UID_SLOTS):
        fd = os.open(os.path.join(UID_LOCK_DIR, str(uid)), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            _remove_stale_workdirs(uid)
            yield uid, uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise RuntimeError(f"all {UID_SLOTS} sandbox user ids are in use")


def _remove_stale_workdirs(uid: int) -> None:
    """Delete work directories still owned by ``uid`` (we hold its lock, so no run uses them): a judge
    killed mid-run (SIGKILL, a lost machine) leaves its child's directory, with a submission's source in
    it, which the next child running as ``uid`` could otherwise read."""
    tmp = _work_root() or tempfile.gettempdir()
    for name in os.listdir(tmp):
        path = os.path.join(tmp, name)
        if not name.startswith("kdt-sandbox-") or path == UID_LOCK_DIR:
            continue
        try:
            if os.lstat(path).st_uid == uid:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


def _interpreter(user):
    """``(python, site_dir)`` for the child: our own interpreter when the sandbox user can run it, else
    the system's python of the same version with our site-packages added (a venv whose base interpreter
    lives under an unreadable home, e.g. pyenv in /root); ``(None, "")`` when there is neither."""
    if user is None or _world_executable(sys.executable):
        return sys.executable, ""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        if os.path.exists(candidate) and _world_executable(candidate):
            return candidate, sysconfig.get_paths()["purelib"]
    log.error("%s", NO_INTERPRETER)
    return None, ""


def _world_executable(path: str) -> bool:
    """Whether an unprivileged user can reach and execute ``path`` (every directory on the way +x)."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    for i in range(2, len(parts)):
        if not os.stat(os.sep.join(parts[:i]) or os.sep).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(real).st_mode & stat.S_IXOTH)


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


_NETNS: dict = {}


def network_isolation_available() -> bool:
    """Whether a child can get its own (empty) network namespace here; probed once and logged."""
    if "ok" not in _NETNS:
        try:
            ok = subprocess.run(["unshare", "--net", "--mount", "true"], capture_output=True,
                                timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if not ok:
            log.warning("network namespaces are not permitted here: sandboxed children keep the host network "
                        "(the static audit and the audit hook still stop socket use)")
        _NETNS["ok"] = ok
    return _NETNS["ok"]
