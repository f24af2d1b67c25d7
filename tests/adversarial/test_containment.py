"""Issue 20: a run is contained by the kernel (its own PID namespace and cgroup), not by a kill loop.

Real sandboxed children doing what the security review did: a fast fork chain that must not outlive its
run (nor touch the next run of its user id), several processes that together exceed the memory limit,
a fan-out of processes against ``pids.max``, and several writers filling the disk. Values asserted are
the kernel's: statuses, processes left, cgroup directories, bytes written.
"""
import contextlib
import json
import os
import textwrap
from pathlib import Path

import pytest

from grader.judging import cgroups, sandbox
from grader.judging.compile import compile_submission
from grader.judging.sandbox import SandboxLimits, containment, run_sandboxed

pytestmark = pytest.mark.skipif(not containment().complete,
                                reason="containment needs root, namespaces and cgroups (CI runs as root)")
LIMITS = SandboxLimits(cpu_seconds=5, wall_seconds=20, memory_bytes=512 * 2**20)


def run(code: str, limits: SandboxLimits = LIMITS, files: dict | None = None):
    files = {"child.py": textwrap.dedent(code).encode(), **(files or {})}
    return run_sandboxed(("script", "child.py"), [], files, limits)


def result(r) -> dict:
    return json.loads(r.result.decode().splitlines()[-1])


def processes_of(uid: int) -> list:
    """Every process on the host with ``uid`` as one of its uids (read from /proc, no helper of ours)."""
    return [pid for pid, uids in sandbox._process_uids().items() if uid in uids]


def our_cgroups() -> list:
    """Run groups this test process made that still exist, in every hierarchy."""
    left = []
    for base in cgroups.layout().bases.values():
        parent = os.path.join(base, cgroups.PARENT)
        if os.path.isdir(parent):
            left += [n for n in os.listdir(parent) if n.startswith(f"run-{os.getpid()}-")]
    return left


FORK_CHAIN = """
    import json, os, sys, time
    fd = int(sys.argv[-1])
    if os.fork() == 0:          # the chain: each member forks its successor and exits at once
        os.setsid()
        while True:
            try:
                if os.fork():
                    os._exit(0)
            except OSError:     # a refused fork (a process limit, for a moment) must not end the chain
                pass
    open(os.path.join(os.environ["TMPDIR"], "left-by-the-first"), "w").write("x")
    time.sleep(0.5)             # the chain has changed its pid thousands of times by now
    os.write(fd, json.dumps({"uid": os.getuid(), "cwd": os.getcwd(), "out": os.environ["TMPDIR"],
                             "pid": os.getpid()}).encode() + b"\\n")
"""


def test_a_fast_fork_chain_does_not_outlive_its_run_and_the_next_run_of_its_uid_is_alone(monkeypatch):
    # One slot only: the next run must get the same user id, which it gets only once the slot is clean.
    monkeypatch.setattr(sandbox, "UID_BASE", sandbox.UID_BASE + sandbox.UID_SLOTS - 1)
    monkeypatch.setattr(sandbox, "UID_SLOTS", 1)
    first = run(FORK_CHAIN, files={"submission.py": b"SECRET_OF_THE_FIRST = 1\n"})
    assert first.ok and first.contained, first.stderr
    facts = result(first)
    assert facts["pid"] == 2  # init is 1: the child runs in a PID namespace of its own
    assert first.killed_escapees >= 1  # a member of the chain was alive when the main process ended
    assert processes_of(facts["uid"]) == []
    assert our_cgroups() == []
    assert not os.path.exists(facts["cwd"]) and not os.path.exists(facts["out"])  # never on the host

    second = run(f"""
        import json, os, sys
        seen = {{}}
        for path in ({facts['cwd']!r} + '/submission.py', {facts['cwd']!r}):
            try:
                seen[path] = open(path).read() if path.endswith('.py') else str(os.listdir(path))
            except OSError as e:
                seen[path] = e.__class__.__name__
        seen["out"] = str(os.listdir(os.environ["TMPDIR"]))  # the same path as the first run's: its own
        procs = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
        os.write(int(sys.argv[-1]), json.dumps({{"uid": os.getuid(), "seen": seen, "procs": procs,
                                                "cgroupfs": os.listdir("/sys/fs/cgroup"),
                                                "root": sorted(os.listdir(os.path.dirname(os.getcwd())))}}).encode())
    """, files={"submission.py": b"SECRET_OF_THE_SECOND = 2\n"})
    assert second.ok, second.stderr
    later = result(second)
    assert later["uid"] == facts["uid"]
    assert later["seen"].pop("out") == "[]"  # nothing the first run wrote
    assert set(later["seen"].values()) == {"FileNotFoundError"}  # the first run's directory is gone
    assert later["procs"] == [1, 2]  # init and itself: nothing of the first run
    assert later["cgroupfs"] == []  # no other run's usage to read either
    assert len(later["root"]) == 2 and "out" in later["root"]  # its own directory and output area only
    assert processes_of(facts["uid"]) == [] and our_cgroups() == []


def test_a_memory_fan_out_is_killed_as_a_memory_limit():
    """Four processes of 120 MiB each: every one fits the per-process address-space limit, together they
    exceed the run's 256 MiB. The kernel kills one, the sandbox ends the whole run."""
    limits = SandboxLimits(cpu_seconds=10, wall_seconds=30, memory_bytes=256 * 2**20)
    r = run("""
        import os, time
        for _ in range(4):
            if os.fork() == 0:
                block = b"\\x01" * (120 * 2**20)   # written, so resident
                time.sleep(30)
                os._exit(0)
        for _ in range(4):
            os.wait()
    """, limits)
    assert r.status == "memory_limit" and r.contained, (r.status, r.stderr)
    assert 200 * 2**20 < r.memory_peak_bytes <= 256 * 2**20
    assert r.wall_seconds < 20  # ended at once, not by the wall clock
    assert our_cgroups() == []


def test_a_memory_fan_out_at_compile_time_is_the_contestants_compile_error():
    """The review's way: the audit hook (a detector) found through gc and switched off, then forks. The
    whole run's memory limit holds and the contestant reads why."""
    source = textwrap.dedent("""
        import gc, os, time
        hook = next(o for o in gc.get_objects() if type(o).__name__ == "Recorder")
        type(hook).__call__ = lambda self, event, args: None
        hook.events.clear()
        children = []
        for _ in range(6):
            pid = os.fork()
            if pid == 0:
                block = b"\\x01" * (200 * 2**20)
                time.sleep(60)
                os._exit(0)
            children.append(pid)
        for pid in children:
            os.waitpid(pid, 0)
        def get_kernel(task_id):
            return None
    """).encode()
    limits = SandboxLimits(cpu_seconds=10, wall_seconds=60, memory_bytes=1024 * 2**20)
    outcome = compile_submission(source, [(1, 0)], limits)
    failure = outcome.kernels[(1, 0)]
    assert outcome.run.status == "memory_limit", (outcome.run, failure)
    assert outcome.run.memory_peak_bytes <= 1024 * 2**20
    assert failure.verdict == "CE" and "its processes together used more than 1024 MiB" in failure.message
    assert our_cgroups() == []


def test_an_operation_the_hook_refused_is_sv_even_when_the_run_is_killed_afterwards():
    """Attacker review: the hook's events reached the judge only in the child's last line, so a submission
    that caught the refusal and then spun until the whole run's CPU limit killed it got AC on the points
    compiled before and CE on the rest. Now each refused event is written to the judge at once: SV."""
    source = textwrap.dedent("""
        import os
        def get_kernel(task_id):
            try:
                os.system("true")          # refused by the audit hook (the static audit is not run here)
            except PermissionError:
                pass
            while True:                    # the run's CPU limit ends it before its final report
                pass
    """).encode()
    outcome = compile_submission(source, [(1, 0), (1, 1)], SandboxLimits(cpu_seconds=3, wall_seconds=30))
    assert outcome.run.status == "cpu_limit" or outcome.run.signal_name == "SIGXCPU", outcome.run  # killed
    assert [e["event"] for e in outcome.events if e["blocked"]] == ["os.system"]
    for point in ((1, 0), (1, 1)):
        failure = outcome.kernels[point]
        assert failure.verdict == "SV" and "os.system" in failure.message, failure
    assert our_cgroups() == []


def test_a_process_fan_out_is_capped_by_pids_max():
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=20, processes=32)
    r = run("""
        import json, os, sys, time
        started, refused = 0, 0
        for _ in range(200):
            try:
                pid = os.fork()
            except OSError:
                refused += 1
                continue
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            started += 1
        os.write(int(sys.argv[-1]), json.dumps({"started": started, "refused": refused}).encode())
    """, limits)
    assert r.ok, r.stderr
    counts = result(r)
    assert 20 <= counts["started"] < 32 and counts["refused"] == 200 - counts["started"]
    assert r.pids_refused >= counts["refused"]  # the cgroup's limit refused them
    assert r.killed_escapees == counts["started"]
    assert our_cgroups() == []


def test_a_disk_fill_by_several_processes_stops_at_the_cap_and_nothing_lands_on_the_host():
    cap = 8 * 2**20
    limits = SandboxLimits(cpu_seconds=10, wall_seconds=30, disk_bytes=cap, file_bytes=4 * 2**20)
    r = run("""
        import errno, json, os, sys
        out = os.environ["TMPDIR"]
        elsewhere = {}
        for path in ("written.txt", "/tmp/x", "/var/tmp/x", "/dev/shm/x", "/run/lock/x", "/var/lib/x",
                     "/root/x", os.path.join(os.path.dirname(os.getcwd()), "x")):
            try:
                open(path, "w").write("x")
                elsewhere[path] = "written"
            except OSError as e:
                elsewhere[path] = errno.errorcode[e.errno]
        children = []
        for k in range(3):
            pid = os.fork()
            if pid == 0:
                n = 0
                written = 0
                try:
                    while True:
                        with open(os.path.join(out, f"{k}-{n}"), "wb") as f:
                            n += 1
                            for _ in range(16):
                                written += f.write(b"x" * 65536)
                except OSError as e:
                    os._exit(100 + e.errno if e.errno < 100 else 99)
            children.append(pid)
        codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in children]
        total = sum(os.path.getsize(os.path.join(out, name)) for name in os.listdir(out))
        os.write(int(sys.argv[-1]), json.dumps({"codes": codes, "total": total, "elsewhere": elsewhere}).encode())
    """, limits)
    assert r.ok, r.stderr
    facts = result(r)
    assert facts["codes"] == [100 + 28] * 3  # every writer stopped with ENOSPC
    assert cap - 2**20 <= facts["total"] <= cap
    # Read-only mounts, root's directories, or hidden (/run is an empty tmpfs: no /run/lock).
    assert set(facts["elsewhere"].values()) <= {"EROFS", "EACCES", "ENOENT"}, facts["elsewhere"]
    assert facts["elsewhere"]["written.txt"] == "EACCES" and facts["elsewhere"]["/tmp/x"] == "EROFS"
    # Nothing of it on the host: the writers' files (k-n) lived in the run's tmpfs only. (Other runs, of
    # other tests, may be using the host's work root meanwhile, so only this run's names are looked for.)
    assert [str(p) for k in range(3) for p in Path(sandbox.WORK_ROOT).rglob(f"{k}-0")] == []
    assert our_cgroups() == []


def test_busy_processes_together_hit_the_runs_cpu_limit():
    """Three busy processes, each under its own 2 s RLIMIT_CPU: the run's CPU time (all of them) ends it."""
    r = run("""
        import os
        for _ in range(2):
            if os.fork() == 0:
                break
        while True:
            pass
    """, SandboxLimits(cpu_seconds=2, wall_seconds=30, cpus=3.0))
    assert r.status == "cpu_limit" and r.contained, (r.status, r.stderr)
    assert 3.0 < r.cpu_seconds < 5.0
    assert our_cgroups() == []


def test_no_new_privileges_no_ptrace_no_user_namespaces():
    """The workload: no_new_privs, not dumpable; seccomp refuses user namespaces, ptrace, mounts and
    sockets other than local, IP and netlink ones with EPERM while threads, fork and exec work (x86_64)."""
    if os.uname().machine != "x86_64":
        pytest.skip("the seccomp filter is x86_64 only")
    r = run("""
        import ctypes, json, os, subprocess, sys, threading
        libc = ctypes.CDLL(None, use_errno=True)
        def call(f, *a):
            return f(*a), ctypes.get_errno()
        facts = {"unshare_user": call(libc.unshare, 0x10000000), "ptrace_attach_init": call(libc.ptrace, 16, 1, 0, 0),
                 "mount": call(libc.mount, b"none", b"/tmp", b"tmpfs", 0, None),
                 "no_new_privs": libc.prctl(39, 0, 0, 0, 0), "dumpable": libc.prctl(3, 0, 0, 0, 0),
                 "unshare_cmd": subprocess.run(["unshare", "--user", "true"], capture_output=True).returncode}
        import socket
        for name, family in (("vsock", 40), ("packet", 17), ("inet", 2), ("unix", 1), ("inet6", 10)):
            try:
                socket.socket(family, socket.SOCK_STREAM if family != 17 else socket.SOCK_RAW).close()
                facts[name] = "opened"
            except OSError as e:
                facts[name] = e.errno
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        facts["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        os.write(int(sys.argv[-1]), json.dumps(facts).encode())
    """)
    assert r.ok, r.stderr
    facts = result(r)
    assert facts["unshare_user"] == facts["ptrace_attach_init"] == facts["mount"] == [-1, 1]  # EPERM
    assert facts["no_new_privs"] == 1 and facts["dumpable"] == 0
    assert facts["unshare_cmd"] != 0 and facts["fork"] == 7
    # attacker review: AF_VSOCK sockets worked (no network namespace covers vsock); now only the local, IP
    # and netlink families open
    assert (facts["vsock"], facts["packet"]) == (1, 1)  # EPERM from the filter
    assert facts["inet"] == facts["unix"] == facts["inet6"] == "opened"


def test_the_empty_group_of_a_judge_killed_mid_run_is_removed_by_the_next_run():
    dead = 2**22 + 12345  # above pid_max's default: no such process
    name = f"run-{dead}-0123456789ab"
    made = []
    for parent in cgroups._parents(cgroups.layout()).values():
        path = os.path.join(parent, name)
        os.mkdir(path)
        os.utime(path, (1, 1))  # made long ago
        made.append(path)
    try:
        assert run("print('ok')").ok
        assert [p for p in made if os.path.exists(p)] == []
    finally:
        for path in made:
            if os.path.exists(path):
                os.rmdir(path)


def test_files_an_organiser_left_world_readable_outside_the_judge_are_out_of_reach():
    """A contained run sees the system's directories and the judge's own packages only: a world-readable
    tokens file in the judge's checkout, under /opt or under /home is not there (the attacker review read
    other contestants' tokens from the checkout through a bypassed audit)."""
    from grader.judging.sandbox import JUDGE_ROOT
    secrets = [os.path.join(JUDGE_ROOT, "kdt-test-tokens.csv"), "/opt/kdt-test-secret/token",
               "/home/kdt-test-secret/token"]
    made = []
    try:
        for path in secrets:
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path), mode=0o755)
                made.append(os.path.dirname(path))
            with open(path, "w") as f:
                f.write("alice,token-of-alice\n")
            os.chmod(path, 0o644)
        r = run(f"""
            import json, os, sys
            import kdt, judger.scoring
            seen = {{}}
            for path in {secrets!r}:
                try:
                    seen[path] = open(path).read()
                except OSError as e:
                    seen[path] = type(e).__name__
            os.write(int(sys.argv[-1]), json.dumps(seen).encode())
        """, SandboxLimits(cpu_seconds=20, wall_seconds=60))
        assert r.ok, r.stderr
        assert result(r) == {path: "FileNotFoundError" for path in secrets}
    finally:
        for path in secrets:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        for d in made:
            os.rmdir(d)


def test_the_hosts_sys_is_hidden_and_numpy_and_torch_still_work():
    """/sys (the host's devices, network and block configuration, other runs' cgroup usage) is an empty
    tmpfs in a contained run, /sys/fs/cgroup an empty directory in it; importing and computing with numpy
    and torch needs nothing there (no warning either: their stderr stays empty)."""
    r = run("""
        import json, os, sys
        import numpy, torch
        seen = {"sys": os.listdir("/sys"), "fs": os.listdir("/sys/fs"), "cgroup": os.listdir("/sys/fs/cgroup"),
                "net": os.path.exists("/sys/class/net"), "cpu": os.path.exists("/sys/devices/system/cpu"),
                "torch": float((torch.ones(64, 64) @ torch.ones(64, 64)).sum()),
                "numpy": float(numpy.ones((32, 32)).dot(numpy.ones((32, 32))).sum())}
        os.write(int(sys.argv[-1]), json.dumps(seen).encode())
    """, SandboxLimits(cpu_seconds=20, wall_seconds=60, memory_bytes=2 * 2**30))
    assert r.ok, r.stderr
    assert result(r) == {"sys": ["fs"], "fs": ["cgroup"], "cgroup": [], "net": False, "cpu": False,
                         "torch": 262144.0, "numpy": 32768.0}
    assert r.stderr == b""
