"""The first program of a contained sandbox run: ``python -I sandbox_init.py CONTROL_FD CONFIG_FD``.

Standard library only; it runs as root, started by ``grader.judging.sandbox`` with a preexec function that has
already put the process in the run's control group and in new network, mount, IPC and PID namespaces
(``unshare(CLONE_NEWPID)`` applies to the caller's *children*). Three processes follow:

1. **outer** (this process, outside the new PID namespace): reads the run's configuration (a marshal
   dict on the memfd ``CONFIG_FD``, written by the judge), forks ``init`` and waits for it;
2. **init** (PID 1 of the namespace, root, dies with ``outer``: parent-death signal): makes every host
   mount read-only in this mount namespace, mounts a fresh ``/proc``, an empty read-only tmpfs over the
   hidden directories (``/tmp``, ``/var/tmp``, ``/run``, ...; the judge's own install is bound back
   read-only when it lies below one of them), and a size-capped tmpfs over the work root holding the
   run's files (root-owned, read-only) and an output directory (the only place the child can write);
   then forks ``workload``, reaps every orphan, and when ``workload`` ends writes ``exit STATUS LEFT`` on
   the control pipe and exits, at which point the kernel kills whatever is left in the namespace;
3. **workload** (PID 2): drops the control pipe, sets the per-process rlimits, ``no_new_privs``, drops to
   the run's user id, installs a small seccomp filter (x86_64: ``seccomp_program``) and runs the entry
   (``runpy``) in this same interpreter (no second exec).

A setup failure is written as ``error MESSAGE`` on the control pipe (a fault of the judge's host).
"""
import ctypes
import errno
import marshal
import os
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 0x4000, 0x40000, 1 << 21, 1 << 24
_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
          "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 1, 4, 22, 38
SIGKILL = 9
SIGSTOP = 19
_libc = ctypes.CDLL(None, use_errno=True)

# seccomp (x86_64): system calls a compile never needs that open kernel attack surface or reach other
# processes: namespaces (user namespaces above all), mounts, ptrace and cross-process memory, BPF,
# perf, userfaultfd, io_uring, keyrings, modules, kexec, file handles. They fail with EPERM; clone3
# fails with ENOSYS (glibc then uses clone, whose flags a filter can read: CLONE_NEW* is refused).
AUDIT_ARCH_X86_64, X32_SYSCALL_BIT = 0xC000003E, 0x40000000
DENIED_X86_64 = (101, 155, 161, 165, 166, 246, 248, 249, 250, 272, 298, 303, 304, 308, 310, 311, 313, 175,
                 176, 320, 321, 323, 425, 426, 427, 428, 429, 430, 431, 432, 433, 442)
SYS_CLONE, SYS_CLONE3 = 56, 435
SYS_SOCKET = 41
# Socket families a run may open: local, IP (only the run's own loopback exists) and netlink (scoped to
# the run's network namespace); any other (vsock, which no network namespace covers, packet, ...) is EPERM.
SOCKET_FAMILIES = (1, 2, 10, 16)  # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
CLONE_NEW_ANY = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
EPERM, ENOSYS = 1, 38
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program():
    """The filter as ``(code, jt, jf, k)`` classic-BPF instructions over ``struct seccomp_data``: the
    ``DENIED_X86_64`` system calls, sockets outside ``SOCKET_FAMILIES`` and namespace-making clones are EPERM."""
    ld_w, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog = [(ld_w, 0, 0, 4), (jeq, 1, 0, AUDIT_ARCH_X86_64), (ret, 0, 0, RET_KILL_PROCESS),
            (ld_w, 0, 0, 0), (jge, 0, 1, X32_SYSCALL_BIT), (ret, 0, 0, RET_ERRNO | EPERM)]
    for nr in DENIED_X86_64:
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, RET_ERRNO | EPERM)]
    families = len(SOCKET_FAMILIES)
    prog += [(jeq, 0, families + 3, SYS_SOCKET), (ld_w, 0, 0, 16)]  # socket(domain, ...): args[0]
    prog += [(jeq, families - i, 0, family) for i, family in enumerate(SOCKET_FAMILIES)]
    prog += [(ret, 0, 0, RET_ERRNO | EPERM), (ret, 0, 0, RET_ALLOW)]
    prog += [(jeq, 0, 1, SYS_CLONE3), (ret, 0, 0, RET_ERRNO | ENOSYS),
             (jeq, 0, 3, SYS_CLONE), (ld_w, 0, 0, 16), (jset, 0, 1, CLONE_NEW_ANY), (ret, 0, 0, RET_ERRNO | EPERM),
             (ret, 0, 0, RET_ALLOW)]
    return prog


def _install_seccomp():
    """Install ``seccomp_program()`` (needs ``no_new_privs``); skipped on other architectures."""
    if os.uname().machine != "x86_64":
        return False
    prog = seccomp_program()
    array = (_SockFilter * len(prog))(*[_SockFilter(*insn) for insn in prog])
    fprog = _SockFprog(len(prog), array)
    if _libc.prctl(PR_SET_SECCOMP, 2, ctypes.byref(fprog), 0, 0) != 0:
        raise SetupError(f"seccomp: {os.strerror(ctypes.get_errno())}")
    return True


class SetupError(Exception):
    """The run's containment could not be set up (its message goes to the judge); ``errno`` when a call failed."""

    def __init__(self, message, errno=0):
        super().__init__(message)
        self.errno = errno


def _mount(source, target, fstype, flags, data=None):
    if _libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), flags,
                   data and data.encode()) != 0:
        err = ctypes.get_errno()
        raise SetupError(f"mount {fstype or source or ''} on {target} (flags {flags:#x}): {os.strerror(err)}", err)


def _prctl(option, value):
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        raise SetupError(f"prctl({option}): {os.strerror(ctypes.get_errno())}")


def _unescape(path):
    return path.encode().decode("unicode_escape") if "\\" in path else path


def _host_mounts():
    """``(mount point, per-mount flags)`` of every mount this namespace copied from the host."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            flags = 0
            for option in fields[5].split(","):
                flags |= _FLAGS.get(option, 0)
            yield _unescape(fields[4]), flags


def _read_only(path, flags=0):
    """Make one mount read-only in this namespace only (``MS_BIND``: the per-mount flag, never the
    file system's own, which the host keeps writable)."""
    _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | flags)


def _setup_mounts(cfg):
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY)) for p in cfg["keep"]]  # before they are covered
    for mountpoint, flags in list(_host_mounts()):
        try:
            _read_only(mountpoint, flags)
        except SetupError as exc:  # a mount covered by a later one at a parent path: invisible anyway
            if exc.errno not in (errno.ENOENT, errno.EINVAL) or os.path.ismount(mountpoint):
                raise
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # this PID namespace's processes only
    empty = MS_NOSUID | MS_NODEV | MS_NOEXEC
    hidden = sorted(cfg["hidden"], key=lambda p: p.count("/"))  # parents first
    for d in hidden:
        if not os.path.isdir(d):
            continue
        _mount("tmpfs", d, "tmpfs", empty, "size=64k,nr_inodes=64,mode=755")
        for inner in hidden:  # a hidden directory below this one is there again, empty (/var/tmp in /var)
            if inner.startswith(d.rstrip("/") + "/"):
                os.makedirs(inner, mode=0o755, exist_ok=True)
        for path, fd in keep:
            if path.startswith(d.rstrip("/") + "/"):
                os.makedirs(path, mode=0o755, exist_ok=True)
                _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
                _read_only(path, MS_NOSUID | MS_NODEV)
        _read_only(d, empty)
    for _, fd in keep:
        os.close(fd)
    _mount("tmpfs", cfg["work_root"], "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
           f"size={cfg['disk_bytes']},nr_inodes={cfg['inodes']},mode=755")
    os.mkdir(cfg["cwd"], 0o755)
    for name, content in cfg["files"].items():
        path = os.path.join(cfg["cwd"], name)
        with open(path, "wb") as f:
            f.write(content)
        os.chmod(path, 0o444)
    os.chmod(cfg["cwd"], 0o755)
    os.mkdir(cfg["out"], 0o700)
    os.chown(cfg["out"], cfg["uid"], cfg["gid"])


def _become_workload(cfg, control_fd):
    """In the forked workload: limits, no privileges, the run's user; returns what to run."""
    import resource

    os.close(control_fd)
    os.chdir(cfg["cwd"])
    for res, soft, hard in cfg["rlimits"]:
        resource.setrlimit(res, (soft, hard))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    os.setgroups([])
    os.setgid(cfg["gid"])
    os.setuid(cfg["uid"])
    _prctl(PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/PID/mem even by another process of this uid
    _install_seccomp()
    return cfg["entry"]


def _init(cfg, control_fd):
    """PID 1: set up, start the workload, reap until it ends; returns only in the workload."""
    try:
        _prctl(PR_SET_PDEATHSIG, SIGKILL)
        _setup_mounts(cfg)
    except (SetupError, OSError) as exc:
        os.write(control_fd, f"error {exc}\n".encode())
        os._exit(1)
    workload = os.fork()
    if workload == 0:
        return _become_workload(cfg, control_fd)
    while True:
        pid, status = os.wait()
        if pid == workload:
            break
    left = _left_behind()
    os.write(control_fd, f"exit {status} {left}\n".encode())
    os._exit(0)  # the kernel now kills every process left in this PID namespace


def _left_behind():
    """How many processes of this PID namespace besides init are alive. Every one is stopped first
    (``kill(-1)`` from init reaches all of them, and a fork under way is restarted by the kernel): a
    fork chain would otherwise fork and exit between the listing and its own zombie check, and be
    counted as nothing left."""
    try:
        os.kill(-1, SIGSTOP)
    except ProcessLookupError:  # nothing but init is left
        return 0
    return sum(1 for p in os.listdir("/proc") if p.isdigit() and p != "1" and not _zombie(p))


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return True


def main(control_fd, config_fd):
    """Returns ``(kind, target, site_dir, argv)`` in the workload only; outer and init end here. Called
    with the fds of the command line, or by a child of the warm template (``sandbox_template``)."""
    with os.fdopen(config_fd, "rb") as f:
        cfg = marshal.loads(f.read())
    init = os.fork()
    if init:
        os.close(control_fd)
        os.waitpid(init, 0)
        os._exit(0)
    return _init(cfg, control_fd)


def _run(kind, target, site_dir, argv):
    import runpy
    import site

    if site_dir:
        site.addsitedir(site_dir)
    sys.argv = [target] + argv
    if kind == "module":
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(target, run_name="__main__")


if __name__ == "__main__":
    _run(*main(int(sys.argv[1]), int(sys.argv[2])))
