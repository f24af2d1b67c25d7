"""Warm starts of contained sandbox runs (``grader.judging.warm``, issue 24): a run forked from the judge
process's template enters the same sandbox as a cold start (the probe below reports the same facts), a
compile gives the same kernels, a template that dies is replaced, one that cannot import is the judge's
fault (``IE``, retried), and a template dies with its judge. Contained runs need root (CI runs as root)."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader.config import SandboxLimits, load_settings
from grader.judging import warm
from grader.judging.compile import WARM_MODULES, compile_submission
from grader.judging.sandbox import containment, run_sandboxed

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="contained runs need root (CI runs as root)")

EXAMPLES = Path(__file__).resolve().parents[3] / "submissions" / "examples"
LIMITS = SandboxLimits(cpu_seconds=20, wall_seconds=60)
# What a sandboxed process can see of its world, as JSON (run the same way cold and warm).
PROBE = textwrap.dedent("""
    import json, os, resource, signal, socket, sys
    def listing(path):
        try:
            return sorted(os.listdir(path))
        except OSError as exc:
            return type(exc).__name__
    def writable(path):
        try:
            open(os.path.join(path, "x"), "w").close()
            return True
        except OSError:
            return False
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
    facts = {
        "pid": os.getpid(), "ppid": os.getppid(), "uid": os.getuid() >= 61000, "gid": os.getgid() >= 61000,
        "groups": os.getgroups(), "env": sorted(os.environ), "procs": listing("/proc").count("1"),
        "pids": sorted(p for p in listing("/proc") if p.isdigit()),
        "tmp": listing("/tmp"), "run": listing("/run"), "sys": listing("/sys"), "shm": listing("/dev/shm"),
        "write_tmp": writable("/tmp"), "write_cwd": writable("."), "write_home": writable(os.environ["HOME"]),
        "cwd": listing("."), "net": sorted(n for _, n in socket.if_nameindex()),
        "no_new_privs": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
        "cap_eff": status["CapEff"].strip(), "dumpable": __import__("ctypes").CDLL(None).prctl(3, 0, 0, 0, 0),
        "rlimits": [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU,
                                                    resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC,
                                                    resource.RLIMIT_FSIZE, resource.RLIMIT_CORE)],
        "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
        "sigint": str(signal.getsignal(signal.SIGINT)), "sigchld": str(signal.getsignal(signal.SIGCHLD)),
        "sid_is_pid": os.getsid(0) == os.getpgid(0), "nice": os.nice(0), "hostname": socket.gethostname(),
        "mounts": sorted(l.split()[4] for l in open("/proc/self/mountinfo")),
        "argv": sys.argv[1:-1], "flags": [sys.flags.isolated, sys.flags.ignore_environment],
    }
    os.write(int(sys.argv[-1]), json.dumps(facts).encode())
""")


@pytest.fixture(autouse=True)
def fresh_templates():
    """Each test starts without templates in this process and leaves none behind."""
    warm.stop_all()
    yield
    warm.stop_all()


def own_install_in_tmp() -> list[str]:
    """What a child sees in its empty /tmp: nothing, but the top directory of the judge's own install
    (checkout, interpreter) where that lies below /tmp, bound back read-only so the child can import it."""
    tops = {os.path.relpath(path, "/tmp").split(os.sep)[0]
            for path in map(os.path.realpath, (str(EXAMPLES.parents[1]), sys.prefix, sys.base_prefix))
            if path.startswith("/tmp" + os.sep)}
    return sorted(tops)


def probe(modules: tuple) -> dict:
    run = run_sandboxed(("script", "probe.py"), ["--flag"], {"probe.py": PROBE.encode()}, LIMITS, warm=modules)
    assert run.ok and run.contained, (run.status, run.stderr[-2000:])
    return json.loads(run.result)


def test_a_warm_run_sees_exactly_the_world_of_a_cold_one():
    assert containment().complete, containment().describe()
    os.environ["KDT_GRADE_DATABASE_URL"] = "postgresql://secret@db/prod"  # the judge's secret, in its env
    try:
        cold, warm_facts = probe(()), probe(("json", "numpy"))
    finally:
        del os.environ["KDT_GRADE_DATABASE_URL"]
    assert warm_facts == cold
    assert cold["pid"] == 2 and cold["ppid"] == 1 and cold["pids"] == ["1", "2"]  # its own PID namespace
    assert "KDT_GRADE_DATABASE_URL" not in cold["env"] and cold["net"] == ["lo"] and cold["tmp"] == own_install_in_tmp()
    assert cold["cap_eff"] == "0000000000000000" and cold["no_new_privs"] == "1" and cold["seccomp"] == "2"
    assert not cold["write_tmp"] and not cold["write_cwd"] and cold["write_home"]
    assert len(warm.status()) == 1 and "1 run(s)" in warm.status()[0]


def test_warm_compiles_give_the_kernels_of_cold_ones_and_share_one_template():
    points = [(t, p) for t in (1, 2, 3, 4) for p in range(2 if t > 1 else 1)]
    for name in ("optimized.py", "baseline.py"):
        source = (EXAMPLES / name).read_bytes()
        cold = compile_submission(source, points, SandboxLimits(warm=False))
        hot = compile_submission(source, points, SandboxLimits(warm=True))
        assert cold.run.ok and hot.run.ok, (cold.run.stderr[-1000:], hot.run.stderr[-1000:])
        assert hot.run.stderr == cold.run.stderr == b""
        for point in points:
            assert hot.kernels[point].to_dict() == cold.kernels[point].to_dict(), (name, point)
        assert hot.events == cold.events
    (line,) = warm.status()
    assert "2 run(s)" in line and ", ".join(WARM_MODULES) in line


def test_a_template_that_died_is_replaced_and_the_run_still_happens():
    source = (EXAMPLES / "optimized.py").read_bytes()
    assert compile_submission(source, [(1, 0)], SandboxLimits()).run.ok
    (template,) = warm._TEMPLATES.values()
    os.kill(template.pid, signal.SIGKILL)
    template.proc.wait(timeout=10)
    again = compile_submission(source, [(1, 0)], SandboxLimits())
    assert again.run.ok and type(again.kernels[(1, 0)]).__name__ == "CompiledKernel"
    (replacement,) = warm._TEMPLATES.values()
    assert replacement.pid != template.pid and replacement.alive()


def test_a_template_that_cannot_import_is_the_judges_fault_never_the_contestants():
    run = run_sandboxed(("script", "probe.py"), [], {"probe.py": PROBE.encode()}, LIMITS,
                        warm=("json", "no_such_module_of_the_judge"))
    assert run.status == "unavailable" and not run.ok
    assert b"could not import the judge's modules" in run.stderr and b"no_such_module_of_the_judge" in run.stderr
    # through the compile: IE, retried (pipeline.judge_fault), never CE
    from grader.judging import compile as compiling
    original = compiling.WARM_MODULES
    compiling.WARM_MODULES = original + ("no_such_module_of_the_judge",)
    try:
        outcome = compile_submission((EXAMPLES / "optimized.py").read_bytes(), [(1, 0)], SandboxLimits())
    finally:
        compiling.WARM_MODULES = original
    failure = outcome.kernels[(1, 0)]
    assert failure.verdict == "IE" and failure.retry and "not your fault" in failure.message


JUDGE = """
import sys, time
from grader.config import SandboxLimits
from grader.judging import warm
from grader.judging.sandbox import run_sandboxed
run = run_sandboxed(("script", "c.py"), [], {"c.py": b"print(1)"}, SandboxLimits(), warm=("json",))
(template,) = warm._TEMPLATES.values()
print(run.ok, template.pid, flush=True)
time.sleep(600)
"""


def test_a_template_dies_with_its_judge():
    judge = subprocess.Popen([sys.executable, "-c", JUDGE], stdout=subprocess.PIPE, text=True)
    try:
        ok, pid = judge.stdout.readline().split()
        assert ok == "True" and Path(f"/proc/{pid}").exists()
    finally:
        judge.kill()
        judge.wait()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the template outlived its judge"


def test_the_settings_switch_warm_compiles_off():
    assert load_settings().sandbox_limits.warm is True
    assert load_settings(compile_warm=False).sandbox_limits.warm is False


def test_a_template_outlives_the_thread_that_started_it():
    """A parent-death signal follows the *thread* that forked: a template started by a compile thread
    that then ended used to be killed with its runs (attacker review). It now ends only with its judge
    process's socket."""
    import threading

    first = {}
    thread = threading.Thread(target=lambda: first.update(run=probe(("json",))))
    thread.start()
    thread.join()
    (template,) = warm._TEMPLATES.values()
    time.sleep(0.5)
    assert template.alive() and first["run"]["pid"] == 2
    probe(("json",))
    assert list(warm._TEMPLATES.values()) == [template] and "2 run(s)" in warm.status()[0]


def test_a_run_whose_template_dies_under_it_is_the_judges_fault():
    """The template's end takes its runs along (their parent-death signal): such a run is ``unavailable``
    (the compile: IE, retried), never a crash of the contestant's code."""
    import threading

    probe(("json",))  # the template is up
    (template,) = warm._TEMPLATES.values()
    timer = threading.Timer(1.5, lambda: os.kill(template.pid, signal.SIGKILL))
    timer.start()
    try:
        run = run_sandboxed(("script", "s.py"), [], {"s.py": b"import time\ntime.sleep(20)\n"}, LIMITS,
                            warm=("json",))
    finally:
        timer.cancel()
    assert run.status == "unavailable" and b"the warm template died during the run" in run.stderr
    after = probe(("json",))  # the next run gets a new template
    assert after["pid"] == 2 and list(warm._TEMPLATES.values())[0].pid != template.pid


def test_a_forked_judge_process_forgets_its_parents_templates():
    probe(("json",))
    (template,) = warm._TEMPLATES.values()
    child = os.fork()
    if child == 0:
        os._exit(0 if not warm._TEMPLATES and not warm._LOCK.locked() and template.sock.fileno() == -1 else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and template.alive() and template.sock.fileno() != -1


SEES = textwrap.dedent("""
    import torch


    class Sees:
        def compile(self, task_args, io_tensors):
            sums = [int(t.contiguous().view(torch.int32).long().sum()) for t in io_tensors.values()]  # exact
            firsts = [float(t.reshape(-1)[0]) for t in io_tensors.values()]
            raise ValueError(f"sees {sorted(io_tensors)} {sums} {firsts} next {torch.rand(3).tolist()} "
                             f"threads {torch.get_num_threads()}")


    def get_kernel(task_id):
        return Sees()
""")


def test_a_warm_compile_hands_the_submission_exactly_the_inputs_and_rng_of_a_cold_one():
    """What a submission's ``.compile`` sees (trial 1's tensors, bit for bit; the RNG after them; torch's
    thread count) is the same in a warm child, a cold child and, but for the thread count, this process
    (``compile_point``)."""
    from judger.grading import CompileFailed, compile_point
    from judger.tasks import get_point, get_task

    points = [(1, 0), (2, 1), (4, 3)]
    cold = compile_submission(SEES.encode(), points, SandboxLimits(warm=False))
    hot = compile_submission(SEES.encode(), points, SandboxLimits(warm=True))
    assert cold.run.ok and hot.run.ok, (cold.run.stderr[-1000:], hot.run.stderr[-1000:])
    namespace = {}
    exec(compile(SEES, "submission.py", "exec"), namespace)
    for point in points:
        assert hot.kernels[point].verdict == cold.kernels[point].verdict == "CE"
        assert hot.kernels[point].message == cold.kernels[point].message, point
        assert "sees " in hot.kernels[point].message
        try:
            compile_point(namespace["Sees"](), get_task(point[0]), get_point(*point), source_path="submission.py")
        except CompileFailed as here:
            seen_here = here.message.split("sees ", 1)[1].split(" threads ")[0]
        assert hot.kernels[point].message.split("sees ", 1)[1].split(" threads ")[0] == seen_here, point


def test_a_prestarted_template_serves_the_first_compile_which_waits_for_it_rather_than_start_another():
    """A judge process starts its template when it starts (``prestart``); a compile made while it still
    imports waits for it and forks from it: one template, the compile's run its first."""
    from grader.judging.compile import prestart

    started = time.monotonic()
    assert prestart(SandboxLimits()) is True
    assert time.monotonic() - started < 1.0, "prestart without wait returns at once"
    outcome = compile_submission((EXAMPLES / "optimized.py").read_bytes(), [(1, 0)], SandboxLimits())
    assert outcome.run.ok and outcome.run.contained, outcome.run.stderr[-1000:]
    assert type(outcome.kernels[(1, 0)]).__name__ == "CompiledKernel"
    (line,) = warm.status()
    assert "1 run(s)" in line and ", ".join(WARM_MODULES) in line


def test_prestart_with_wait_returns_with_the_template_ready_and_nothing_when_warm_compiles_are_off():
    from grader.judging.compile import prestart

    assert prestart(SandboxLimits(warm=False), wait=True) is False and warm.status() == []
    assert prestart(SandboxLimits(), wait=True) is True
    (template,) = warm._TEMPLATES.values()
    assert template.alive() and template.runs == 0 and not warm._LOCK.locked()
    prestart(SandboxLimits(), wait=True)  # a live template is kept, not replaced
    assert list(warm._TEMPLATES.values()) == [template]
    assert compile_submission((EXAMPLES / "baseline.py").read_bytes(), [(1, 0)], SandboxLimits()).run.ok
    assert list(warm._TEMPLATES.values()) == [template] and template.runs == 1


def test_a_process_forked_while_a_template_starts_does_not_keep_it_alive():
    """The judge's end of a template still starting is closed in a process forked meanwhile (by another
    thread: the pool's), so the template still ends with its judge."""
    warm.prestart(warm.TemplateKey(sys.executable, "", (), ("json",)))
    deadline = time.monotonic() + 10
    while not warm._STARTING and time.monotonic() < deadline:
        time.sleep(0.001)
    starting = [s.fileno() for s in warm._STARTING]
    assert starting, "the template started before it could be seen starting"
    child = os.fork()
    if child == 0:
        closed = True
        for fd in starting:
            try:
                os.fstat(fd)
                closed = False
            except OSError:
                pass
        os._exit(0 if closed and not warm._STARTING else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_worker_pool_process_has_its_template_before_it_takes_a_task():
    """``worker.app``'s pool process initialisation (what Celery runs in each new pool process, after a
    start, a restart or the pool's recycling) returns with the warm template up: the process's first
    compile is forked from it. A real process; its template ends with it."""
    probe = ("import worker.app as app\n"
             "from grader.judging import warm\n"
             "app._init_pool_process()\n"
             "(t,) = warm._TEMPLATES.values()\n"
             "print(t.pid, t.alive(), t.runs, flush=True)\n"
             "import sys; sys.stdin.read()\n")
    env = {**os.environ, "KDT_GRADE_BROKER_URL": "memory://"}
    proc = subprocess.Popen([sys.executable, "-c", probe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=EXAMPLES.parents[1])
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        pid, alive, runs = line.split()
        assert alive == "True" and runs == "0" and Path(f"/proc/{pid}").exists()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists(), "the template outlived its pool process"
