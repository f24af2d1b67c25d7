"""The warm template of contained sandbox runs: ``python -I sandbox_template.py SOCK_FD JUDGE_PID
SITE_DIR MODULES``.

Started by ``grader.judging.warm`` from a fresh interpreter with the runs' own constant environment (no
database URL, no token, nothing of the judge's memory), as root, in its own session. It ends when the
judge's end of the socket closes (the judge exited, was killed, or stopped it), which takes the runs in
flight with it (their parent-death signal); no parent-death signal of its own, because that one follows
the judge *thread* that started it, and a thread that ends would kill the template and its runs. It
imports ``MODULES`` (comma-separated: numpy, torch, kdt, the judger's modules) once, says ``ready`` on
the socket, and then serves requests: each is one message with the run's file descriptors attached
(``SCM_RIGHTS``) and a marshal dict ``{"targets": [fd numbers the child must see them at], "control",
"config": indexes into them, "join": [cgroup.procs files], "nice": n}``. For each it forks a child and
answers ``("started", pid)`` with a pidfd of the child attached (the judge watches the run with it, as it watched
the ``Popen`` of a cold start). The template itself never reads a submission and never runs a line of
one: it only forks.

The child does exactly what a cold start does between fork and exec (``grader.judging.sandbox``'s
preexec: own session, the run's cgroup, death with its parent, new network, mount, IPC, UTS and PID
namespaces, no core files, its niceness), puts the run's descriptors at their numbers, and continues as
``sandbox_init``'s outer process (``sandbox_init.main``): init, the mounts, the workload with its user id,
rlimits, ``no_new_privs`` and seccomp filter, and then the entry, which finds its imports already done.
A setup failure is written as ``error MESSAGE`` on the run's control pipe, as ``sandbox_init`` does.
The workload ends the way an interpreter would (non-daemon threads joined, ``atexit`` functions run,
output flushed, ``SystemExit``'s code as the exit status) and then ``os._exit``: nothing of the
template's own teardown runs in a sandboxed process.
"""
import ctypes
import fcntl
import importlib
import marshal
import os
import signal
import socket
import sys

PR_SET_PDEATHSIG = 1
CLONE_NEWNET, CLONE_NEWNS = 0x40000000, 0x00020000
CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWUTS = 0x20000000, 0x08000000, 0x04000000
MAX_FDS = 16
NOBODY = 65534  # an unprivileged user id: the readability probe of the imported modules runs as it
_libc = ctypes.CDLL(None, use_errno=True)


def _reap():
    """Collect every child that has ended (the judge follows them with pidfds, not by waiting). Called
    between requests only, never from a SIGCHLD handler: a run stays a zombie, holding its pid, until the
    next request, so ``pidfd_open`` never meets a pid already reaped (or reused)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _place(fds, targets):
    """Put descriptor ``fds[i]`` at number ``targets[i]`` and close every other one."""
    floor = max(targets) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, floor) for fd in fds]  # above every target: no dup2 below hits one
    for fd in fds:
        os.close(fd)
    for fd, target in zip(high, targets):
        os.dup2(fd, target, inheritable=True)
    start = 0
    for fd in sorted(set(targets)):
        if start < fd:  # os.closerange(0, 0) closes everything: close_range(0, -1 as unsigned)
            os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, 65536)


def _exit_code(exc):
    """The exit status an interpreter gives ``SystemExit(exc.code)``."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        print(exc.code, file=sys.stderr)
    except Exception:  # noqa: BLE001 (a broken stderr: the status still says "failed")
        pass
    return 1


def _finish(code):
    """End a sandboxed process as an interpreter would, then leave without the template's teardown."""
    try:
        import threading
        threading._shutdown()  # wait for non-daemon threads, as Py_FinalizeEx does
    except BaseException:  # noqa: BLE001
        pass
    try:
        import atexit
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(code)


def _child(template, request, fds):
    """A forked child: the cold start's preexec steps, then ``sandbox_init``'s outer process."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a freshly started interpreter
    targets = request["targets"]
    control = targets[request["control"]]
    try:
        _place(fds, targets)
        os.setsid()
        for path in request["join"]:
            with open(path, "w") as f:
                f.write("0")
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != template:  # the template died before the line above
            os._exit(1)
        if _libc.unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "unshare of the sandbox's namespaces failed")
        import resource
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if request["nice"] > 0:
            os.nice(request["nice"])
        os.chdir("/")
    except OSError as exc:
        try:
            os.write(control, f"error the warm template's child could not enter the sandbox: {exc}\n".encode())
        finally:
            os._exit(1)
    from grader.judging import sandbox_init

    code = 0
    try:
        sandbox_init._run(*sandbox_init.main(control, targets[request["config"]]))
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 (an uncaught exception: the traceback and status 1, as python does)
        import traceback
        traceback.print_exc()
        code = 1
    _finish(code)


def _unreadable():
    """The files of the imported modules that an unprivileged user cannot read (at most 5), found by a
    forked probe running as ``NOBODY``: a warm child must not be the first to find a judge's install it
    cannot read (a cold child found that importing, before its ``ready`` line: the judge's fault)."""
    files = sorted({f for m in list(sys.modules.values())
                    if isinstance(f := getattr(m, "__file__", None), str) and os.path.isabs(f)})
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            bad = []
            for path in files:
                try:
                    open(path, "rb").close()
                except OSError as exc:
                    bad.append(f"{path} ({exc.strerror})")
            os.write(w, marshal.dumps(bad[:5]))
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # not expected: nothing else reaps
        pass
    return marshal.loads(data) if data else ["the readability probe died"]


def _address_space():
    """This process's address space in bytes (``VmSize``): where every warm child starts."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))


def serve(sock, template):
    """Answer requests until the judge closes its end of the socket."""
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 65536, MAX_FDS)
        except InterruptedError:
            continue
        if not message:
            return
        try:
            request = marshal.loads(message)
        except (EOFError, ValueError, TypeError):
            for fd in fds:
                os.close(fd)
            sock.send(marshal.dumps(("error", "a malformed request")))
            continue
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                _child(template, request, fds)
            finally:
                os._exit(1)  # never back into this loop: a child is not a template
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)
        try:
            socket.send_fds(sock, [marshal.dumps(("started", pid))], [pidfd])
        finally:
            os.close(pidfd)
        _reap()


def main(argv):
    sock_fd, judge, site_dir, modules = int(argv[1]), int(argv[2]), argv[3], argv[4]
    if os.getppid() != judge:  # the judge is gone already
        return 1
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=sock_fd)
    if site_dir:
        import site
        site.addsitedir(site_dir)
    try:
        for name in filter(None, modules.split(",")):
            importlib.import_module(name)
        importlib.import_module("grader.judging.sandbox_init")
    except BaseException as exc:  # noqa: BLE001 (the judge reports the template broken: IE, never CE)
        sock.send(marshal.dumps(("broken", f"{type(exc).__name__}: {exc}")))
        return 1
    bad = _unreadable()
    if bad:
        sock.send(marshal.dumps(("broken", "the judge's installation is not readable by the sandbox's "
                                           "unprivileged user: " + "; ".join(bad))))
        return 1
    sock.send(marshal.dumps(("ready", (os.getpid(), _address_space()))))
    serve(sock, os.getpid())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
