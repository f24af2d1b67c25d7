"""The sandboxed child (grader.judging.sandbox): real subprocesses doing hostile things, and the limits holding."""
import os
import shutil
import textwrap

import pytest

from grader.judging.sandbox import SandboxLimits, SandboxRun, network_isolation_available, run_sandboxed

LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=4, memory_bytes=512 * 2**20, output_bytes=50_000)


def run(code: str, limits: SandboxLimits = LIMITS):
    return run_sandboxed(("script", "child.py"), [], {"child.py": textwrap.dedent(code).encode()}, limits)


def test_result_pipe_is_separate_from_stdout():
    r = run("""
        import os, sys
        os.write(int(sys.argv[-1]), b'{"ok": 1}')
        print("chatter")
    """)
    assert r.ok and r.result == b'{"ok": 1}' and r.stdout == b"chatter\n"


def test_environment_is_empty_and_cwd_is_a_fresh_directory():
    os.environ["KDT_GRADE_DATABASE_URL"] = "postgresql://secret@db/prod"
    try:
        r = run("import os; print(sorted(os.environ)); print(os.getcwd()); print(os.listdir('.'))")
    finally:
        del os.environ["KDT_GRADE_DATABASE_URL"]
    out = r.stdout.decode()
    assert "KDT_GRADE_DATABASE_URL" not in out and "secret" not in out
    env_line, cwd, listing = out.splitlines()
    assert "kdt-sandbox-" in cwd and listing == "['child.py']"
    assert not os.path.exists(cwd), "the work directory is removed afterwards"


def test_cpu_limit_kills_an_infinite_loop():
    r = run("while True: pass", SandboxLimits(cpu_seconds=2, wall_seconds=60))  # CPU, not wall, must stop it
    assert r.status == "signalled" and r.signal_name == "SIGXCPU"


def test_wall_clock_limit_kills_a_sleeper():
    r = run("import time; time.sleep(60)")
    assert r.status == "timeout" and r.wall_seconds >= LIMITS.wall_seconds


def test_memory_limit():
    r = run("x = bytearray(10 * 1024**3)")
    assert r.status == "exited" and r.returncode == 1 and b"MemoryError" in r.stderr


def test_output_flood_is_cut():
    r = run("while True: print('x' * 1000)")
    assert r.status == "output_limit" and len(r.stdout) <= LIMITS.output_bytes


def test_file_size_limit():
    """In the output area (TMPDIR: the only writable place of a contained run; the work directory itself
    when uncontained)."""
    code = b"import os; open(os.path.join(os.environ['TMPDIR'], 'big'), 'wb').write(b'x' * 10_000_000)"
    r = run_sandboxed(("script", "c.py"), [], {"c.py": code},
                      SandboxLimits(cpu_seconds=2, wall_seconds=4, file_bytes=1_000_000))
    assert not r.ok and (r.signal_name == "SIGXFSZ" or b"File too large" in r.stderr)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to an unprivileged user needs root")
def test_runs_unprivileged_and_cannot_touch_our_files(tmp_path):
    target = os.path.abspath(__file__) + ".pwned"
    r = run(f"""
        import os
        print(os.getuid())
        try:
            open({target!r}, 'w').write('x')
        except OSError:  # EACCES by the user id; EROFS too when contained (host mounts are read-only)
            print('write refused')
        try:
            open('/etc/shadow').read()
        except PermissionError:
            print('read refused')
    """)
    assert r.unprivileged
    uid, *rest = r.stdout.decode().split()
    assert int(uid) >= 61000 and rest == ["write", "refused", "read", "refused"]
    assert not os.path.exists(target)


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root (CI runs as root)")
def test_the_world_writable_directories_are_private_and_empty(tmp_path):
    """/tmp and /var/tmp are an empty read-only tmpfs for the child (the judge here is not installed below
    them): nothing another process left there can be read, and nothing can be left for a later run."""
    from grader.judging.sandbox import PRIVATE_TMP, containment, hidden_dirs, keep_paths
    import sys

    # This checkout and its interpreter, where they lie below /tmp themselves: a contained child sees them
    # there (bound back), an uncontained one sees all of /tmp (test_a_judge_installed_below_tmp_keeps_...).
    own = [p for p in keep_paths(sys.executable, "") if p.startswith("/tmp/")]
    if own and not containment().complete:
        pytest.skip("the judge lies below /tmp and runs uncontained here: /tmp stays visible")
    assert set(PRIVATE_TMP) - ({"/tmp"} if own else set()) <= set(hidden_dirs(sys.executable, ""))
    secret = tmp_path / "left-by-someone"
    secret.write_text("a token")
    os.chmod(tmp_path, 0o755)
    os.chmod(secret, 0o644)
    marker = "/var/tmp/kdt-sandbox-test-left-behind"
    r = run(f"""
        import os
        print(sorted(os.listdir('/tmp')), os.listdir('/var/tmp'), os.path.exists({str(secret)!r}))
        for path in ('/tmp/x', {marker!r}):
            try:
                open(path, 'w').write('x')
                print('written')
            except OSError as e:
                print('refused', e.errno)
        print(os.getcwd().startswith('/var/lib/kdt-grade-sandbox/kdt-sandbox-'), os.listdir('.'))
    """)
    assert r.ok, r.stderr
    lines = r.stdout.decode().split("\n")[:4]
    assert lines[0] == f"{sorted({p.split('/')[2] for p in own})} [] False" and lines[3] == "True ['child.py']"
    assert lines[1:3] in (["refused 13"] * 2, ["refused 30"] * 2)  # EACCES, or EROFS when contained
    assert not os.path.exists(marker)


def test_a_judge_installed_below_tmp_keeps_tmp_visible_when_uncontained():
    """Uncontained (no root): a clone in /tmp (a newcomer's) must still load, /tmp is left as it is."""
    from grader.judging.sandbox import HIDDEN_DIRS, hidden_dirs

    assert hidden_dirs("/tmp/clone/.venv/bin/python", "") == HIDDEN_DIRS + ("/var/tmp",)
    assert "/tmp" not in hidden_dirs("/usr/bin/python3.11", "/tmp/clone/.venv/lib/python3.11/site-packages")


def test_network_is_unreachable_where_namespaces_are_allowed():
    r = run("""
        import socket
        s = socket.socket(); s.settimeout(2)
        try:
            s.connect(('127.0.0.1', 6379)); print('connected')
        except OSError as e:
            print('refused', e.errno)
    """)
    if network_isolation_available():
        assert r.network_isolated and r.stdout.startswith(b"refused")
        # Unix sockets of local services (PostgreSQL's in /run/postgresql) are hidden too.
        hidden = run("import os; print(os.listdir('/run'), os.path.exists('/run/postgresql/.s.PGSQL.5432'))")
        assert hidden.stdout == b"[] False\n"
    else:  # logged once by the sandbox; the audit and the audit hook still stop sockets
        assert not r.network_isolated


@pytest.mark.skipif(os.geteuid() != 0, reason="RLIMIT_NPROC only binds an unprivileged sandbox user")
def test_fork_bomb_is_contained_and_cleaned_up():
    r = run("""
        import os, time
        for _ in range(100000):
            try:
                os.fork()
            except OSError:
                break
        time.sleep(30)
    """, SandboxLimits(cpu_seconds=2, wall_seconds=3, processes=64))
    assert r.status == "timeout"
    after = run("print('alive')")
    assert after.ok and after.stdout == b"alive\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="per-run user ids need root")
def test_concurrent_children_get_different_users_and_cannot_read_each_other(tmp_path):
    import threading
    probe = """
        import os, sys, time
        print(os.getuid())
        others = [d for d in os.listdir('/tmp') if d.startswith('kdt-sandbox-') and d != os.path.basename(os.getcwd())]
        time.sleep(1)
        for d in others:
            try:
                os.listdir('/tmp/' + d); print('read', d)
            except PermissionError:
                pass
    """
    results = []
    threads = [threading.Thread(target=lambda: results.append(run(probe))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    uids = [int(r.stdout.split()[0]) for r in results]
    assert len(set(uids)) == 2 and all(b"read" not in r.stdout for r in results)


def test_escaped_process_is_killed():
    r = run("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(60)
        print('parent done')
    """)
    assert r.ok and r.stdout == b"parent done\n"
    assert r.killed_escapees == 1  # and "exited", not "timeout": its open pipes did not hold us


def test_a_work_directory_left_by_a_killed_run_is_removed_before_its_user_id_runs_again(tmp_path):
    """A judge SIGKILLed mid-run leaves its child's directory (a submission's source in it) owned by the
    child's uid; the next run with that uid must not be able to read it: it is deleted first."""
    if os.geteuid() != 0:
        pytest.skip("per-run sandbox users need root (the judge's workers run as root)")
    import tempfile

    from grader.judging.sandbox import UID_BASE, UID_SLOTS, _work_root
    stale = []
    for uid in range(UID_BASE, UID_BASE + UID_SLOTS):
        path = tempfile.mkdtemp(prefix="kdt-sandbox-", dir=_work_root())
        with open(os.path.join(path, "submission.py"), "w") as f:
            f.write("SECRET = 1\n")
        os.chown(path, uid, uid)
        os.chmod(path, 0o700)
        stale.append(path)
    r = run(f"""
        readable = []
        for path in {stale!r}:
            try:
                readable.append(open(path + '/submission.py').read())
            except OSError:
                pass
        print(readable)
    """)
    assert r.stdout.strip() == b"[]", r.stderr
    assert sum(not os.path.exists(p) for p in stale) >= 1  # at least the directory of the uid that ran
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)


@pytest.mark.skipif(not __import__("grader.judging.sandbox").judging.sandbox.containment().complete,
                    reason="contained runs need root, namespaces and cgroups (CI runs as root)")
def test_a_judge_installed_below_tmp_is_bound_back_read_only_and_the_rest_of_tmp_stays_hidden(monkeypatch):
    """Contained: /tmp is always an empty tmpfs; only the judge's own install below it (here a site
    directory in /tmp) is bound back, read-only. Another directory of /tmp stays invisible."""
    import sys
    import tempfile

    from grader.judging import sandbox

    # What is bound back below /tmp anyway: this checkout and its interpreter, when they lie there themselves.
    own = [p for p in sandbox.keep_paths(sys.executable, "") if p.startswith("/tmp/")]
    install = tempfile.mkdtemp(prefix="kdt-judge-", dir="/tmp")
    secret_dir = tempfile.mkdtemp(prefix="kdt-secret-", dir="/tmp")
    try:
        site = os.path.join(install, "site-packages")
        os.mkdir(site)
        with open(os.path.join(site, "kdt_probe_mod.py"), "w") as f:
            f.write("X = 42\n")
        with open(os.path.join(secret_dir, "token"), "w") as f:
            f.write("secret")
        for path in (install, site, secret_dir):
            os.chmod(path, 0o755)
        assert [p for p in sandbox.keep_paths(sys.executable, site) if p.startswith("/tmp/")] == sorted([site, *own])
        real = sandbox._interpreter
        monkeypatch.setattr(sandbox, "_interpreter", lambda user: (real(user)[0], site))
        r = run(f"""
            import os, kdt_probe_mod
            try:
                open({site!r} + '/dropped.py', 'w')
                wrote = 'written'
            except OSError as e:
                wrote = e.errno
            print(kdt_probe_mod.X, sorted(os.listdir('/tmp')), os.path.exists({secret_dir!r}), wrote)
        """)
        assert r.ok, r.stderr
        tops = sorted({os.path.basename(install)} | {p.split("/")[2] for p in own})
        assert r.stdout.decode().split("\n")[0] == f"42 {tops} False 30"
        assert not os.path.exists(os.path.join(site, "dropped.py"))
    finally:
        shutil.rmtree(install, ignore_errors=True)
        shutil.rmtree(secret_dir, ignore_errors=True)


def test_as_root_without_containment_nothing_runs_unless_an_organiser_allows_it(tmp_path, monkeypatch):
    """A host without PID namespaces or cgroups (simulated: the probe's answer; the runs are real): the run is
    ``unavailable`` (the judge's fault) and the child never ran; with ``allow_uncontained`` it runs, with
    per-process limits only, and says so."""
    from dataclasses import replace

    from grader.judging import sandbox

    if os.geteuid() != 0:
        pytest.skip("the refusal applies to a root judge")
    state = sandbox.containment()
    monkeypatch.setitem(sandbox._CONTAINMENT, "c", replace(state, namespaces=False, problems=("no namespaces",)))
    code = "import os; print('ran', os.getpid() > 2)"
    refused = run(code)
    assert refused.status == "unavailable" and b"KDT_GRADE_ALLOW_UNCONTAINED=1" in refused.stderr
    assert refused.stdout == b"" and refused.wall_seconds == 0.0  # nothing was started
    allowed = run(code, SandboxLimits(cpu_seconds=2, wall_seconds=4, allow_uncontained=True))
    assert allowed.ok and allowed.stdout == b"ran True\n" and not allowed.contained and allowed.unprivileged


def test_a_result_line_larger_than_any_ir_is_refused_before_it_is_parsed():
    """The child's result lines are parsed in the trusted process: a line of more JSON arrays than an IR can
    have nodes (or longer than the IR's byte limit) is tampering, refused without json.loads (the attacker
    review: a 21-million-array line took 1.9 GB and 28 s to parse)."""
    from grader.judging.compile import MAX_LINE_CHARS, MAX_LINE_CONTAINERS, _parse_results
    many = ('{"task": 1, "point": 0, "ir": ' + "[]," * (MAX_LINE_CONTAINERS + 1) + "[]}").encode()
    assert _parse_results(b'{"ready": true}\n' + many, {(1, 0)}) == (
        {}, [], "line 2 is larger than any IR the judge accepts", True)
    long = b'{"ready": true}\n{"task": 1, "point": 0, "ir": "' + b"x" * MAX_LINE_CHARS + b'"}'
    assert _parse_results(long, {(1, 0)})[2] == "line 2 is larger than any IR the judge accepts"


def test_a_compile_past_its_wall_clock_limit_is_the_judges_fault_on_a_busy_machine_only():
    from grader.judging.compile import BUSY_SHARE, _overloaded, cpu_stall_seconds

    limits = SandboxLimits(cpu_seconds=10, wall_seconds=60)
    timed_out = SandboxRun("timeout", None, "SIGKILL", 60.2, b"", b"", b"", True, True, cpu_seconds=3.5)
    busy = _overloaded(timed_out, limits, stalled=BUSY_SHARE * 60.2 + 1)  # tasks waited for a CPU meanwhile
    assert busy.verdict == "IE" and busy.retry and busy.message == (
        "internal error of the judge: the compile ran 60 s of wall-clock time and used 3.5 s of its 10 s of CPU "
        "time on a busy machine; not your fault, it will be retried")
    assert _overloaded(timed_out, limits, stalled=None).verdict == "IE"  # the kernel does not say: not theirs
    assert _overloaded(timed_out, limits, stalled=1.0) is None  # a quiet machine: it waited on its own (CE)
    blocked = SandboxRun("timeout", None, "SIGKILL", 60.2, b"", b"", b"", True, True, cpu_seconds=0.3)
    assert _overloaded(blocked, limits, stalled=50.0) is None  # busy, but it hardly ran: blocked, not starved
    exited = SandboxRun("exited", 1, None, 61.0, b"", b"", b"", True, True)
    assert _overloaded(exited, limits, stalled=60.0) is None
    stall = cpu_stall_seconds()
    assert stall is None or stall >= 0.0
