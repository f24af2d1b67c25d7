"""Paths and helpers shared by the service tests (fixtures are in conftest.py)."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

import db
from grader.config import load_settings
from grader.service import Service
from tests.shared_services import POSTGRES_URL, REDIS_URL, fresh_postgres_schema, locked_redis, require  # noqa: F401  (re-exported for the tests)

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "submissions" / "examples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPTIMIZED, BASELINE = EXAMPLES / "optimized.py", EXAMPLES / "baseline.py"
FAILING, SLOW = FIXTURES / "failing.py", FIXTURES / "slow_vadd.py"

_SCRIPT = Path(sys.executable).with_name("kdt-grade")
KDT_GRADE = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "grader.cli"]


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll `predicate` until it returns something true; return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def clean_env() -> dict:
    """This process's environment without any KDT_GRADE_* setting."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KDT_GRADE_")}


def run_cli(args: list, env: dict, *, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `kdt-grade ARGS` with `env`; an unexpected exit code fails with the output."""
    proc = subprocess.run(KDT_GRADE + [str(a) for a in args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"kdt-grade {' '.join(map(str, args))} exited {proc.returncode}\n"
                             f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    return proc


def shown_times(table: str) -> list[str]:
    """The times a CLI table shows, in order: ``2026-12-05 14:03:12 UTC``."""
    return re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", table)


def utc_text(iso: str) -> str:
    """A ``--json`` time (ISO 8601 with an offset) as the pages and the tables write it."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class Deployment:
    """One test deployment: its settings as environment variables (for subprocesses) and a `Service`."""

    def __init__(self, tmp_path: Path, database_url: str | None, broker_url: str | None, **extra):
        self.data_dir = tmp_path / "var"
        self.env = clean_env()
        self.env.update({"KDT_GRADE_DATA_DIR": str(self.data_dir), "KDT_GRADE_WORKERS": "2",
                         "PYTHONUNBUFFERED": "1", "COLUMNS": "160"})
        if database_url:
            self.env["KDT_GRADE_DATABASE_URL"] = database_url
        if broker_url:
            self.env["KDT_GRADE_BROKER_URL"] = broker_url
        self.env.update({f"KDT_GRADE_{k.upper()}": str(v) for k, v in extra.items()})
        self.settings = load_settings(data_dir=self.data_dir, database_url=database_url, broker_url=broker_url,
                                      workers=2, **extra)
        self.service = Service(self.settings)
        self.log_dir = tmp_path / "logs"
        self.log_dir.mkdir(exist_ok=True)

    def cli(self, *args, check=True, timeout=600) -> subprocess.CompletedProcess:
        return run_cli(list(args), self.env, check=check, timeout=timeout)

    def status(self, submission_id: int) -> dict:
        return self.service.status(submission_id)

    def wait(self, submission_id: int, timeout: float = 300) -> dict:
        return self.service.wait(submission_id, timeout=timeout, poll=0.3)


@pytest.fixture
def make_deployment(tmp_path):
    """``make_deployment(database_url=None, broker_url=None, **settings) -> Deployment``; each one's service
    is closed after the test (shared by tests/grader/service and tests/grader/web, whose conftests import it)."""
    made = []

    def make(database_url=None, broker_url=None, **extra) -> Deployment:
        deployment = Deployment(tmp_path, database_url, broker_url, **extra)
        made.append(deployment)
        return deployment

    yield make
    for deployment in made:
        deployment.service.close()


@pytest.fixture
def workers():
    """Start workers with ``workers.start(deployment)``; all are stopped after the test."""
    pool = Workers()
    yield pool
    pool.stop_all()


@pytest.fixture(scope="session")
def local_results():
    """``local_results(path)``: the report of ``kdt-grade local PATH --json``, once per run and file (the
    xdist workers share them: whichever asks first computes it, the others wait for it)."""
    cache: dict = {}
    shared = Path(os.environ.get("KDT_GRADE_TEST_RUN_DIR") or tempfile.gettempdir()) / "local-results"
    shared.mkdir(exist_ok=True)

    def get(path) -> dict:
        if path not in cache:
            key = hashlib.sha256(f"{path}\0".encode() + Path(path).read_bytes()).hexdigest()[:24]
            report = shared / f"{key}.json"
            with open(shared / f"{key}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not report.exists():
                    env = {**clean_env(), "KDT_GRADE_WORKERS": "2"}
                    proc = run_cli(["local", path, "--json"], env, check=False)
                    assert proc.returncode in (0, 1), proc.stderr  # 1: some point is not AC
                    out = proc.stdout
                    json.loads(out)  # a report, or fail here
                    report.with_suffix(".tmp").write_text(out)
                    report.with_suffix(".tmp").rename(report)
            cache[path] = json.loads(report.read_text())
        return cache[path]

    return get


class Workers:
    """`kdt-grade worker` subprocesses of one test; each leads its own process group."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []

    def start(self, deployment: Deployment, concurrency: int = 2) -> subprocess.Popen:
        n = len(self.procs) + 1
        log_path = deployment.log_dir / f"worker-{n}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                KDT_GRADE + ["worker", "--concurrency", str(concurrency), "--hostname",
                             f"test{n}-{os.getpid()}@%h", "--without-mingle", "--without-gossip"],
                env=deployment.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
        proc.log_path = log_path
        self.procs.append(proc)
        wait_until(lambda: b" ready." in log_path.read_bytes() or proc.poll() is not None, 120,
                   f"worker {n} to start (log {log_path})")
        if proc.poll() is not None:
            raise AssertionError(f"worker {n} exited {proc.returncode}:\n{log_path.read_text()}")
        wait_until(lambda: len(self.children(proc)) >= concurrency, 60, f"worker {n}'s pool processes")
        return proc

    @staticmethod
    def children(proc: subprocess.Popen) -> list[int]:
        """The pool processes of a worker (its child processes)."""
        try:
            return [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            return []

    def stop(self, proc: subprocess.Popen, timeout: float = 120) -> None:
        """Warm shutdown (SIGTERM to the main process: running tasks finish first), then SIGKILL of what
        is left of the group."""
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill(proc)

    def kill(self, proc: subprocess.Popen) -> None:
        """SIGKILL the worker's whole process group (as if its machine were lost)."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(30)

    def stop_all(self) -> None:
        """Stop every worker; then fail if a pool process's start-up hook raised (Celery only logs that,
        and the process then grades without its memory limit and with its parent's connections)."""
        for proc in self.procs:
            self.stop(proc, timeout=30)
        for proc in self.procs:
            broken = [line for line in proc.log_path.read_text(errors="replace").splitlines()
                      if "Signal handler" in line and " raised: " in line]
            assert not broken, f"a worker pool process failed to start cleanly ({proc.log_path}): {broken[0]}"


def unique_copy(path: Path, directory: Path, tag: str) -> Path:
    """A copy of submission ``path`` (same file name, in ``directory/tag``) whose ``@kdt.kernel`` functions
    are renamed with the suffix ``_tag``: the same results, but another IR (the IR names its kernel), so no
    stored result or compile of an earlier copy is reused (``grader.service.reuse``)."""
    text, suffix = path.read_text(), re.sub(r"\W", "_", tag)
    for name in re.findall(r"@kdt\.kernel\([^\n]*\)\s*\ndef (\w+)\(", text):
        text = re.sub(rf"\b{name}\b", f"{name}_{suffix}", text)
    copy = directory / tag / path.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(text)
    return copy


def reuse_entries_match(session, submission_id: int, state: dict) -> int:
    """Check that every stored reusable result (``db.reuse``) of this submission's compiled kernels is its
    recorded outcome (verdict, cycles, score, message): no entry half written or of another result; return
    how many there are."""
    from db.reuse import find_reusable

    points = {(p["task"], p["point"]): p for p in state["points"]}
    found = 0
    for task, point in sorted(db.compiled_points(session, submission_id)):
        key = db.get_compiled(session, submission_id, task, point).get("key")
        entry = find_reusable(session, key) if key else None
        if entry is not None:
            p = points[(task, point)]
            assert (entry["verdict"], entry["cycles"], entry["score"], entry["message"]) == \
                (p["verdict"], p["cycles"], p["score"], p["message"]), (task, point)
            found += 1
        else:
            assert points[(task, point)]["verdict"] not in ("AC", "WA", "RE"), (task, point)  # kept when simulated
    return found


def point_outcomes(points: list[dict]) -> dict:
    """{(task, point): (verdict, cycles, score, message)} of `local --json` or `status` points."""
    return {(p["task"], p["point"]): (p["verdict"], p["cycles"], p["score"], p["message"]) for p in points}


def task_scores(report: dict) -> dict:
    """{task id: score} of `local --json` or `status`."""
    return {int(t): v["score"] for t, v in report["tasks"].items()}


class Scenario:
    """The steps of one end-to-end scenario: tests of one module, run in their order and on one xdist worker
    (``pytest.mark.xdist_group`` with ``--dist loadgroup``), that share a module-scoped fixture and each go on
    from where the step before left it. ``step(request)`` (in a function-scoped fixture that the steps use)
    fails a step at once when an earlier one failed or did not run in this process before it (a step run
    alone, or steps spread over xdist workers), and notes this step's outcome."""

    def __init__(self):
        self.failed: str | None = None
        self.done: set[str] = set()

    @contextmanager
    def step(self, request: pytest.FixtureRequest):
        from tests.shared_services import FAILED_PHASE

        node = request.node
        steps = list(dict.fromkeys(item.originalname for item in request.session.items
                                   if item.path == node.path and request.fixturename in item.fixturenames))
        missing = [name for name in steps[:steps.index(node.originalname)] if name not in self.done]
        if self.failed:
            pytest.fail(f"an earlier step of this scenario failed: {self.failed}", pytrace=False)
        if missing:
            pytest.fail(f"the earlier steps of this scenario did not run before it here: {missing} (run the "
                        "whole module; under xdist with --dist loadgroup)", pytrace=False)
        yield self
        self.done.add(node.originalname)
        if FAILED_PHASE in node.stash:
            self.failed = node.nodeid


@contextmanager
def broker_deployment(tmp_path: Path, backend: str, **settings):
    """For a module-scoped fixture: a deployment on ``backend`` ("sqlite" or "postgresql", a new database) with
    a Redis database of its own, the database made through the CLI, ``deployment.workers`` to start workers
    with and ``deployment.scenario`` (a ``Scenario``); afterwards the workers are stopped and the databases
    dropped."""
    with ExitStack() as stack:
        database_url = (f"sqlite:///{tmp_path / 'service.sqlite3'}" if backend == "sqlite"
                        else stack.enter_context(fresh_postgres_schema("kdt_service")))
        redis_url = stack.enter_context(locked_redis())
        deployment = Deployment(tmp_path, database_url, redis_url, **settings)
        stack.callback(deployment.service.close)
        deployment.workers = Workers()
        stack.callback(deployment.workers.stop_all)
        deployment.scenario = Scenario()
        deployment.cli("admin", "init-db")
        yield deployment
