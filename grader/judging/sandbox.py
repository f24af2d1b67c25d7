"""Run untrusted Python in a contained child process.

**Contained runs** (as root where the kernel offers namespaces and cgroups: the production case). The OS is
the wall, not this module's loops:

- a control group per run (``grader.judging.cgroups``: v1 or v2, detected), made before the fork; the child's
  preexec function enters it before it execs, so every descendant is in it. It limits the *whole run*:
  memory (no swap; an OOM kill anywhere ends the run as ``memory_limit``), processes and threads
  (``pids.max``), CPU bandwidth (``cpus``) and total CPU seconds (polled: ``cpu_limit``);
- new network, mount, IPC, UTS and PID namespaces. ``unshare(CLONE_NEWPID)`` in the preexec applies to
  the children of the exec'd program (``grader/judging/sandbox_init.py``), so it forks a small init (PID 1, root)
  that sets up the mounts, forks the workload (PID 2, the run's own uid, ``no_new_privs``, not dumpable)
  and reaps orphans. When the workload ends, init reports its wait status on a control pipe and exits,
  and the kernel kills everything else in the namespace before init's exit completes: no fork chain can
  outlive its run. A judge that dies takes its runs with it (parent-death signals down the chain); at the
  end the judge also kills the cgroup (frozen, then SIGKILL) and waits until it is empty before removing
  it and handing the uid on;
- every host mount is read-only in the child's mount namespace; a fresh ``/proc`` shows only the run's
  processes; ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm``, ``/dev/mqueue`` and ``/sys`` are an
  empty read-only tmpfs
  (parts of the judge's own install below them are bound back, read-only); the work root is a tmpfs of
  ``disk_bytes`` (no exec) holding the run's files (root-owned, read-only: the working directory) and
  ``out`` (``HOME`` and ``TMPDIR``), the only place the child can write. Nothing the child writes reaches
  a host disk, and another run's directory does not exist in its view;
- a user id per concurrent run (a slot of ``UID_SLOTS``), handed out only when no process runs with it
  and no file of it is left in the shared directories.

The child's configuration (files, user, limits) reaches init on a memfd; results come back on a dedicated
pipe (fd passed as ``--result-fd``), separate from stdout/stderr, so nothing the submission prints can be
mistaken for a result. A run whose containment cannot be set up is ``unavailable`` (the judge's fault).

**Uncontained runs** (not root, e.g. a developer's machine; or root without namespaces/cgroups only when an
organiser sets ``KDT_GRADE_ALLOW_UNCONTAINED=1``): per-process rlimits, a network and mount namespace
where allowed, a per-run uid as root, and a kill loop over the process group and escapees carrying the
run's marker. ``containment()`` says which mode this host gets and why.
"""
import ctypes
import ctypes.util
import fcntl
import logging
import marshal
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

from grader.config import SandboxLimits  # noqa: F401 (the limits are configuration: KDT_GRADE_COMPILE_*)

from . import cgroups
from . import warm as warm_starts

log = logging.getLogger(__name__)

CLONE_NEWNET = 0x40000000
CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWUTS = 0x20000000, 0x08000000, 0x04000000
PR_SET_PDEATHSIG = 1
INIT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox_init.py")
# Top-level entries owned by a slot's uid here mean a run of it left something: the slot is not handed out.
SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")
UID_BASE, UID_SLOTS = 61000, 1000  # uids of sandboxed children (no passwd entries needed)
UID_LOCK_DIR = "/tmp/kdt-sandbox-uids"
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
# Hidden from the child by an empty tmpfs (mount namespace): Unix sockets of local services such as
# PostgreSQL live here, and a network namespace does not cover filesystem sockets.
HIDDEN_DIRS = ("/run", "/dev/shm")
# A contained run also hides the host's POSIX message queues (a mount of the host's IPC namespace), /sys
# (the host's devices, block and network configuration, and the cgroup file systems: other runs' usage;
# importing and running numpy and torch reads nothing there) and, inside it, /sys/fs/cgroup (present, empty).
CONTAINED_HIDDEN = ("/tmp", "/var/tmp", "/run", "/dev/shm", "/dev/mqueue", "/sys", "/sys/fs/cgroup")
# The only top-level host directories a contained child sees (read-only): the system's programs, libraries
# and configuration. Every other one (homes, /work, /opt, /srv, /var, /mnt...) is an empty tmpfs but for
# the judge's own install, its interpreter and the work root (``keep_paths``): a file an organiser left
# world-readable there (a tokens file, another checkout) is out of reach.
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "proc", "dev")


def contained_hidden() -> tuple:
    """``CONTAINED_HIDDEN`` and every top-level directory of the host outside ``SYSTEM_DIRS`` (symbolic
    links are left: what they point to is hidden or a system directory)."""
    tops = [os.path.join("/", d) for d in sorted(os.listdir("/"))
            if d not in SYSTEM_DIRS and not os.path.islink(os.path.join("/", d)) and os.path.isdir(os.path.join("/", d))]
    return tuple(dict.fromkeys([*CONTAINED_HIDDEN, *tops]))
# Hidden too unless the judge's own install lies below them: the world-writable directories, where a child
# could read what others left or leave files for a later run of the same user id.
PRIVATE_TMP = ("/tmp", "/var/tmp")
# As root, the children's work directories live here (outside the hidden /tmp); traversable, not listable.
WORK_ROOT = "/var/lib/kdt-grade-sandbox"
JUDGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # where grader/ and kdt/ are
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


@dataclass
class SandboxRun:
    """What a sandboxed child did. ``status`` is ``exited`` (see ``returncode``), ``signalled`` (see
    ``signal_name``: ``SIGXCPU`` means the CPU limit, ``SIGKILL`` often the memory limit),
    ``timeout`` (wall clock), ``output_limit`` (stdout/stderr flood), ``result_limit``,
    ``memory_limit`` (the run's cgroup hit its memory limit: an OOM kill, then the whole run was
    killed), ``cpu_limit`` (its processes together used more CPU time than allowed), or
    ``unavailable``: nothing ran, the sandbox cannot work here (``stderr`` says why; the judge's fault).
    ``contained``: the run had its own PID namespace and cgroup; then ``memory_peak_bytes`` (the run's
    highest memory use), ``cpu_seconds`` (all its processes) and ``pids_refused`` (forks refused by the
    process limit) are measured. ``killed_escapees``: processes still alive when the main one ended."""

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
    contained: bool = False
    memory_peak_bytes: int = 0
    cpu_seconds: float | None = None
    pids_refused: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "exited" and self.returncode == 0


@dataclass(frozen=True)
class Containment:
    """What this host gives a sandboxed run (``containment()``): ``root``; ``namespaces`` (new PID,
    mount, network and IPC namespaces can be made); ``cgroup``: the ``grader.judging.cgroups.Layout``;
    ``complete``: both, so runs are contained; ``problems``: what is missing, in words."""

    root: bool
    namespaces: bool
    cgroup: cgroups.Layout
    problems: tuple

    @property
    def complete(self) -> bool:
        return self.root and self.namespaces and self.cgroup.usable

    def describe(self) -> str:
        """One line: the mode and what it rests on, or what is missing."""
        if self.complete:
            return (f"contained: PID/mount/network/IPC namespaces, cgroup {self.cgroup.version} "
                    f"({', '.join(self.cgroup.controllers)})")
        return "NOT CONTAINED: " + "; ".join(self.problems)


_CONTAINMENT: dict = {}


def containment(refresh: bool = False) -> Containment:
    """Probe (once per process, or again with ``refresh``) whether runs can be contained here."""
    if refresh or "c" not in _CONTAINMENT:
        root = os.geteuid() == 0
        problems = []
        if not root:
            problems.append("the judge does not run as root (a development machine: no per-run user id, "
                            "PID namespace or cgroup; a contest judge runs as root)")
        namespaces = root and _namespaces_available()
        if root and not namespaces:
            problems.append("new PID/mount/network/IPC namespaces are not permitted here (a container needs "
                            "CAP_SYS_ADMIN, e.g. docker run --privileged)")
        layout = cgroups.layout() if root else cgroups.Layout(None, problem="not root")
        if root and not layout.usable:
            problems.append(layout.problem)
        _CONTAINMENT["c"] = Containment(root, namespaces, layout, tuple(problems))
    return _CONTAINMENT["c"]


def _namespaces_available() -> bool:
    try:
        return subprocess.run(["unshare", "--net", "--mount", "--ipc", "--uts", "--pid", "--fork", "true"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run_sandboxed(entry: tuple, args: list, files: dict, limits: SandboxLimits, warm: tuple = ()) -> SandboxRun:
    """Run ``entry`` — ``("module", "pkg.mod")`` (like ``python -m``) or ``("script", "file.py")`` (one of
    ``files``) — with ``args + ["--result-fd", N]`` in a sandbox whose working directory holds ``files``
    (name -> bytes). Contained where ``containment()`` is complete (see the module docstring). Returns a
    ``SandboxRun``; never raises because of what the child does (a fault of the host is ``unavailable``).

    ``warm``: modules (trusted: the judge's own and its libraries) that a contained run finds imported:
    it is forked from this process's warm template of them (``grader.judging.warm``) instead of starting
    a fresh interpreter; the sandbox it enters is the same. Uncontained runs always start cold."""
    state = containment()
    if state.complete:
        return _run_contained(entry, args, files, limits, state, warm)
    if state.root and not limits.allow_uncontained:
        return _unavailable("runs cannot be contained here (" + "; ".join(state.problems) + "); an organiser "
                            "can grade without containment with KDT_GRADE_ALLOW_UNCONTAINED=1 (unsafe)")
    _warn_uncontained(state)
    workdir = tempfile.mkdtemp(prefix="kdt-sandbox-", dir=_work_root())
    run_id = uuid.uuid4().hex
    try:
        with _sandbox_uid() as user:
            return _prepare_and_run(entry, args, files, limits, workdir, run_id, user)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _unavailable(message: str) -> SandboxRun:
    return SandboxRun("unavailable", None, None, 0.0, b"", message.encode(), b"", False, False)


_WARNED: set = set()


def _warn_uncontained(state: Containment) -> None:
    if "w" not in _WARNED:
        _WARNED.add("w")
        log.warning("SANDBOXED RUNS ARE NOT CONTAINED: %s%s", "; ".join(state.problems),
                    " (allowed by KDT_GRADE_ALLOW_UNCONTAINED)" if state.root else "")


def _run_contained(entry, args, files, limits, state: Containment, warm: tuple = ()) -> SandboxRun:
    """A run in its own cgroup and namespaces (see the module docstring)."""
    work_root = _work_root()
    with _sandbox_uid() as user:
        python, site_dir = _interpreter(user)
        if python is None:  # never run the submission with our own (root) rights instead
            return _unavailable(NO_INTERPRETER)
        try:
            cgroups.sweep_stale(state.cgroup)
            group = cgroups.RunGroup.create(state.cgroup, limits.memory_bytes, limits.processes, limits.cpus)
        except (cgroups.CgroupError, OSError) as exc:
            return _unavailable(f"cannot create the run's cgroup: {exc}")
        try:
            config = _init_config(entry, args, files, limits, user, site_dir, work_root, python)
            return _start_contained(python, config, group, limits, warm, site_dir)
        finally:
            try:
                group.remove()
            except cgroups.CgroupError as exc:  # the uid's slot check will not hand it out while it runs
                log.error("a sandbox run's cgroup could not be emptied and removed: %s", exc)


def _init_config(entry, args, files, limits, user, site_dir, work_root, python) -> dict:
    """What ``sandbox_init`` needs (sent on a memfd, so no file of the run touches a host disk)."""
    cwd = os.path.join(work_root, f"kdt-sandbox-{uuid.uuid4().hex[:16]}")
    hidden = contained_hidden()
    rlimits = [(resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1),
               (resource.RLIMIT_AS, limits.memory_bytes, limits.memory_bytes),
               (resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes),
               (resource.RLIMIT_NOFILE, limits.open_files, limits.open_files),
               (resource.RLIMIT_NPROC, limits.processes, limits.processes),
               (resource.RLIMIT_CORE, 0, 0)]
    return {"uid": user[0], "gid": user[1], "cwd": cwd, "out": os.path.join(work_root, "out"),
            "work_root": work_root, "disk_bytes": limits.disk_bytes, "inodes": limits.inodes,
            "files": {os.path.basename(n): bytes(c) for n, c in files.items()},
            "hidden": list(hidden), "keep": keep_paths(python, site_dir, work_root, hidden), "rlimits": rlimits,
            "entry": (entry[0], entry[1], site_dir, list(args))}


def keep_paths(python: str, site_dir: str, work_root: str | None = None, hidden: tuple | None = None) -> list:
    """What a contained child must still reach below the hidden directories (``contained_hidden``): the
    interpreter's prefixes, the site directory, the judge's packages and the work root (a tmpfs is mounted
    there), outermost only; bound back read-only."""
    wanted = {os.path.realpath(p) for p in (os.path.dirname(os.path.dirname(python)), sys.prefix,
                                             sys.base_prefix, site_dir, work_root)
              if p} | {os.path.realpath(os.path.join(JUDGE_ROOT, pkg)) for pkg in ("grader", "judger", "kdt", "db")}
    hidden = contained_hidden() if hidden is None else hidden
    below = sorted(p for p in wanted if any(p.startswith(d + os.sep) for d in hidden))
    return [p for p in below if not any(p != q and p.startswith(q + os.sep) for q in below)]


def _start_contained(python, config, group, limits, warm=(), site_dir="") -> SandboxRun:
    result_r, result_w = os.pipe()
    control_r, control_w = os.pipe()
    config_fd = os.memfd_create("kdt-sandbox-config", os.MFD_CLOEXEC)
    config["entry"][3].extend(["--result-fd", str(result_w)])
    os.write(config_fd, marshal.dumps(config))
    os.lseek(config_fd, 0, os.SEEK_SET)
    env = _contained_env(config["out"])
    start = time.monotonic()
    try:
        if warm:
            proc = _fork_warm(python, site_dir, env, warm, group, limits, (result_w, control_w, config_fd))
        else:
            proc = subprocess.Popen(
                [python, "-I", INIT_PATH, str(control_w), str(config_fd)], cwd="/", env=env,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=(result_w, control_w, config_fd), preexec_fn=_contained_setup(group, limits),
                close_fds=True)
    except (OSError, subprocess.SubprocessError, warm_starts.TemplateBroken) as exc:
        for fd in (result_r, control_r):
            os.close(fd)
        return _unavailable(f"the contained child could not start: {exc}")
    finally:
        for fd in (result_w, control_w, config_fd):
            os.close(fd)
    try:
        status, out, err, result, control = _collect(proc, result_r, limits, start, control_r,
                                                     _watch(group, limits))
    finally:
        os.close(result_r)
        os.close(control_r)
        try:
            group.kill()
        except cgroups.CgroupError as exc:  # the host's fault; the uid's slot stays out of use meanwhile
            log.error("a sandbox run survives SIGKILL: %s", exc)
        finally:
            _reap(proc)
            if warm:
                proc.close()
    if warm and not control.startswith(b"exit ") and proc.template_died():
        # the run died with its template (a judge fault: IE), not of anything the submission did
        return _unavailable("the warm template died during the run; it is started again for the next one")
    return _contained_outcome(status, out, err, result, control, group, start)


def _contained_env(out: str) -> dict:
    """The environment of a contained run (the same for every run: its ``out`` directory is one path)."""
    return {"PATH": "/usr/bin:/bin", "HOME": out, "LANG": "C.UTF-8", "TMPDIR": out,
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1"}


def _template_key(python, site_dir, env, modules) -> "warm_starts.TemplateKey":
    return warm_starts.TemplateKey(python, site_dir, tuple(sorted(env.items())), tuple(modules))


def prestart_warm(warm: tuple, wait: bool = False) -> bool:
    """Start this process's warm template of ``warm`` now (``grader.judging.warm.prestart``: in a thread;
    with ``wait`` until it is ready), exactly the one a contained run of ``warm`` would start on first
    use. Returns whether one is being started: not where runs are not contained (they start cold)."""
    state = containment()
    if not warm or not state.complete:
        return False
    python, site_dir = _interpreter((UID_BASE, UID_BASE))  # a run's user: any slot's (only "not None" counts)
    if python is None:
        return False  # every run is unavailable here, and says why
    work_root = _work_root()
    warm_starts.prestart(_template_key(python, site_dir, _contained_env(os.path.join(work_root, "out")), warm),
                         wait=wait)
    return True


def _fork_warm(python, site_dir, env, modules, group, limits, fds) -> "warm_starts.WarmRun":
    """A contained run forked from the warm template of ``modules`` (``grader.judging.warm``): the child
    gets /dev/null, the two output pipes and ``fds`` (result, control, config) at the numbers a cold
    start gives them, and takes the cold start's preexec steps itself (``sandbox_template``)."""
    result_w, control_w, config_fd = fds
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    key = _template_key(python, site_dir, env, modules)
    stdout, stderr = os.fdopen(out_r, "rb", buffering=0), os.fdopen(err_r, "rb", buffering=0)
    try:
        return warm_starts.spawn(key, [null, out_w, err_w, result_w, control_w, config_fd],
                                 [0, 1, 2, result_w, control_w, config_fd], 4, 5, group.join_files,
                                 limits.nice, limits.memory_bytes, stdout, stderr)
    except BaseException:
        stdout.close()
        stderr.close()
        raise
    finally:
        for fd in (out_w, err_w, null):
            os.close(fd)


def _watch(group, limits):
    """Checked while the run goes on: an OOM kill or the whole run's CPU time end it."""
    def check():
        if group.oom_kills():
            return "memory_limit"
        used = group.cpu_seconds()
        if used is not None and used > limits.cpu_seconds + 1:
            return "cpu_limit"
        return None
    return check


def _contained_outcome(status, out, err, result, control, group, start) -> SandboxRun:
    """The run's facts from what was collected and the control pipe's ``exit STATUS LEFT`` / ``error M``."""
    words = control.decode("utf-8", "replace").split(maxsplit=1)
    if words and words[0] == "error":
        return _unavailable("the sandbox's containment could not be set up: " + words[1].strip())
    returncode = signal_name = None
    left = 0
    if words and words[0] == "exit":
        wait_status, left = (int(x) for x in words[1].split()[:2])
        code = os.waitstatus_to_exitcode(wait_status)
        returncode, signal_name = (code, None) if code >= 0 else (None, _signal_name(-code))
    if status == "finished":
        if group.oom_kills():
            status = "memory_limit"
        elif returncode is None and signal_name is None:
            status, signal_name = "signalled", "SIGKILL"  # init itself was killed
        else:
            status = "signalled" if signal_name else "exited"
    run = SandboxRun(status, returncode, signal_name, time.monotonic() - start, out, err, result, True, True,
                     left, contained=True, memory_peak_bytes=group.memory_peak(), cpu_seconds=group.cpu_seconds(),
                     pids_refused=group.pids_refused())
    if run.pids_refused:
        run.notes.append(f"the process limit refused {run.pids_refused} fork(s)")
    return run


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}"


def _contained_setup(group, limits: SandboxLimits):
    """The preexec function of a contained run (between fork and exec, as root): own session, the run's
    cgroup, death with the judge, new namespaces (PID: for the exec'd program's children)."""
    libc = _libc()
    judge = os.getpid()

    def setup():
        os.setsid()
        group.join_self()
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != judge:  # the judge died before the line above
            os._exit(1)
        if libc.unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "unshare of the sandbox's namespaces failed")
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if limits.nice > 0:
            os.nice(limits.nice)
    return setup


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


def _collect(proc, result_fd, limits, start, control_fd=None, watch=None):
    """Read stdout, stderr, the result pipe (and the control pipe) until all close, a limit is hit
    (``watch()``, called every 0.1 s, names one) or time runs out."""
    sel = selectors.DefaultSelector()
    bufs = {"out": bytearray(), "err": bytearray(), "result": bytearray(), "control": bytearray()}
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    sel.register(result_fd, selectors.EVENT_READ, "result")
    if control_fd is not None:
        sel.register(control_fd, selectors.EVENT_READ, "control")
    status = "finished"
    open_streams = 4 if control_fd is not None else 3
    tick = 0.1 if watch is not None else 0.5
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
        for key, _ in sel.select(timeout=min(remaining, tick)):
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
        hit = watch() if watch is not None else None
        if hit:
            status = hit
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
    if control_fd is not None:
        return (status, bytes(bufs["out"][:cap]), bytes(bufs["err"][:cap]), bytes(bufs["result"]),
                bytes(bufs["control"]))
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
    if isinstance(proc, warm_starts.WarmRun):  # no zombie holds its pid: kill through its pidfd
        proc.kill()
        return
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
    signal each other or share RLIMIT_NPROC. A slot is handed out only when ``uid_is_clean``: no process
    runs with its uid and no file of it is left in ``SHARED_DIRS``. Raises ``RuntimeError`` when no slot is."""
    if os.geteuid() != 0:
        yield None
        return
    os.makedirs(UID_LOCK_DIR, mode=0o700, exist_ok=True)
    running = None  # every process's uids, read once (only when a slot is free)
    for uid in range(UID_BASE, UID_BASE + UID_SLOTS):
        fd = os.open(os.path.join(UID_LOCK_DIR, str(uid)), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            _remove_stale_workdirs(uid)
            running = _process_uids() if running is None else running
            problem = _uid_problem(uid, running)
            if problem:
                log.error("sandbox user id %d is not handed out: %s", uid, problem)
                continue
            yield uid, uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise RuntimeError(f"all {UID_SLOTS} sandbox user ids are in use or not clean")


def uid_is_clean(uid: int) -> bool:
    """Whether no process runs with ``uid`` (real, effective, saved or filesystem) and no top-level entry
    of ``SHARED_DIRS`` belongs to it."""
    return not _uid_problem(uid, _process_uids())


def _uid_problem(uid: int, running: dict) -> str:
    pids = [pid for pid, uids in running.items() if uid in uids]
    if pids:
        return f"process(es) {pids[:10]} still run with it"
    for d in SHARED_DIRS:
        try:
            owned = [e.path for e in os.scandir(d) if e.stat(follow_symlinks=False).st_uid == uid]
        except OSError:
            continue
        if owned:
            return f"it owns {owned[:5]}"
    return ""


def _process_uids() -> dict:
    """pid -> the set of its real, effective, saved and filesystem uids (every process on the host)."""
    out = {}
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        out[pid] = {int(x) for x in line.split()[1:5]}
                        break
        except (OSError, ValueError):
            continue
    return out


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
