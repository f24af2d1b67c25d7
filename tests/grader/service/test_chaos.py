"""Fault injection with real services (issue 11): a private Redis started here, PostgreSQL in a fresh
schema, and our own TCP proxies (tests/faults.py) in front of both, which the tests cut and restore. The
workers (real `kdt-grade worker` processes) and the CLI reach both services only through the proxies; the
test observes the database directly.

In every scenario the submission completes by itself after recovery (no admin action: the workers'
dispatcher and sweeper do it), with exactly the results and totals of `kdt-grade local`, one row per
test point, and no attempt spent by the outage. The intervals are short here (heartbeat 1 s, stale
after 6 s, sweep every 2 s); production defaults are 5 s, 30 s and 15 s.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.engine import make_url

import db
from db.outbox import OutboxRow
from db.submissions import Submission
from grader.config import load_settings
from grader.runtime.broker import QUEUES
from grader.service import Service
from service_testlib import (FIXTURES, SLOW, Deployment, Workers, point_outcomes, reuse_entries_match, task_scores,
                             unique_copy, wait_until)
from tests.faults import PrivateRedis, TCPProxy
from tests.shared_services import fresh_postgres_schema

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("chaos")]  # one rig (module fixture) for all
VADD_ONLY = FIXTURES.parents[2] / "judger" / "fixtures" / "vadd_only.py"
SLOW_COMPILE = FIXTURES.parents[2] / "judger" / "fixtures" / "slow_compile_vadd.py"  # a 2 s compile
FAST = {"heartbeat_seconds": 1, "heartbeat_stale_seconds": 6, "sweep_interval_seconds": 2,
        "dispatch_interval_seconds": 1, "transient_retry_seconds": 300, "max_attempts": 3}


class Rig:
    """The services, their proxies, one deployment whose every process goes through the proxies, the
    workers, and an observer `Service` that reaches the database directly."""

    def __init__(self, tmp_path: Path, postgres_url: str):
        self.redis = PrivateRedis()
        self.broker_proxy = TCPProxy("127.0.0.1", self.redis.port)
        direct = make_url(postgres_url)
        self.db_proxy = TCPProxy(direct.host or "127.0.0.1", direct.port or 5432)
        proxied = direct.set(host="127.0.0.1", port=self.db_proxy.port).render_as_string(hide_password=False)
        self.deployment = Deployment(tmp_path, proxied, f"redis://127.0.0.1:{self.broker_proxy.port}/0", **FAST)
        self.observer = Service(load_settings(data_dir=tmp_path / "observer", database_url=postgres_url,
                                              broker_url=self.redis.url, **FAST))
        self.workers = Workers()

    def close(self) -> None:
        self.workers.stop_all()
        self.deployment.service.close()
        self.observer.close()
        self.broker_proxy.close()
        self.db_proxy.close()
        self.redis.stop()

    # ---- observations (direct database) ----

    def rows(self, submission_id: int) -> list[dict]:
        with self.observer.session() as session:
            return db.list_results(session, submission_id)

    def running(self, submission_id: int, key: tuple) -> dict | None:
        row = {(r["task"], r["point"]): r for r in self.rows(submission_id)}.get(key)
        return row if row is not None and row["finished_at"] is None else None

    def outbox(self, submission_id: int) -> list[str]:
        with self.observer.session() as session:
            return sorted(session.scalars(select(OutboxRow.key).where(OutboxRow.submission_id == submission_id)))

    def redis_queue_empty(self) -> bool:
        import redis

        client = redis.Redis(port=self.redis.port, socket_timeout=5)
        try:
            return all(client.llen(name) == 0 for name in QUEUES)  # judge and compile queues
        finally:
            client.close()

    def compiled(self, submission_id: int) -> set:
        with self.observer.session() as session:
            return db.compiled_points(session, submission_id)

    def compiled_verdicts(self, submission_id: int) -> dict:
        with self.observer.session() as session:
            return {key: db.get_compiled(session, submission_id, *key).get("verdict", "IR")
                    for key in db.compiled_points(session, submission_id)}

    def submission_count(self) -> int:
        with self.observer.session() as session:
            return session.scalar(select(func.count()).select_from(Submission))

    def submit(self, path: Path, user: str) -> tuple[int, object]:
        """Submit a copy of ``path`` with its kernels renamed for ``user`` (``unique_copy``): the scenarios
        grade the same few files, and each must really be compiled and simulated, not reused."""
        path = unique_copy(path, self.deployment.data_dir.parent / "copies", user)
        proc = self.deployment.cli("submit", path, "--user", user)
        return int(re.search(r"submission (\d+) accepted", proc.stdout).group(1)), proc

    def complete_like_local(self, submission_id: int, local: dict, attempts: dict | None = None,
                            generation: int = 0, timeout: float = 240, since: float | None = None) -> dict:
        """Wait (no admin action) until done, then check it against `local` (see the module docstring).
        ``since``: the monotonic time of the recovery, for the printed figure."""
        since = time.monotonic() if since is None else since
        state = self.observer.wait(submission_id, timeout=timeout, poll=0.5)
        print(f"\nsubmission {submission_id} completed {time.monotonic() - since:.1f} s after the recovery")
        assert state["status"] == "done", state
        assert point_outcomes(state["points"]) == point_outcomes(local["points"])
        assert task_scores(state) == task_scores(local) and state["total"] == local["total"]
        rows = self.rows(submission_id)
        assert len(rows) == len({(r["task"], r["point"]) for r in rows}) == 10
        assert all(r["finished_at"] is not None and r["generation"] == generation for r in rows)
        expected = {(r["task"], r["point"]): 1 for r in rows} | (attempts or {})
        assert {(r["task"], r["point"]): r["attempts"] for r in rows} == expected
        with self.observer.session() as session:
            assert db.compiled_points(session, submission_id) == set(expected)
            assert reuse_entries_match(session, submission_id, state) == sum(
                p["verdict"] == "AC" for p in state["points"])  # every simulated AC kept, as it was recorded
        wait_until(lambda: self.outbox(submission_id) == [], 30, "the outbox to be empty")
        return state


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    with fresh_postgres_schema("kdt_chaos") as url:
        rig = Rig(tmp_path_factory.mktemp("chaos"), url)
        try:
            rig.deployment.cli("admin", "init-db")
            rig.workers.start(rig.deployment, concurrency=2)
            yield rig
        finally:
            rig.close()


@pytest.fixture
def healthy(rig):
    """Every scenario starts and ends with both services reachable."""
    rig.broker_proxy.restore()
    rig.db_proxy.restore()
    yield rig
    rig.broker_proxy.restore()
    rig.db_proxy.restore()


def test_broker_cut_during_compile(healthy, local_results):
    rig = healthy
    local = local_results(SLOW_COMPILE)  # before any fault: computing it takes a while
    # The compile task has left the queue (a worker took it) and no compiled point is stored yet: cut. The
    # compile takes two seconds and a little (a warm compile alone is well under one); on a loaded machine
    # this poll may still see it only once it is over, and then the scenario is started again with a new
    # submission (that one is graded normally).
    for attempt in range(4):
        submission_id, _ = rig.submit(SLOW_COMPILE, f"compile-cut-{attempt}")
        wait_until(lambda: rig.redis_queue_empty() and not rig.outbox(submission_id), 60, "the compile to start",
                   interval=0.05)
        if not rig.compiled(submission_id):
            break
        rig.complete_like_local(submission_id, local)
    else:
        raise AssertionError(f"four compiles ended before the poll saw them start: {rig.compiled_verdicts(submission_id)}")
    rig.broker_proxy.cut()
    # The compile ends meanwhile: the judge messages of the points it compiled to IR wait in the outbox,
    # in the database; the CE points (tasks 2-4 are not solved) got their results in the compile's own
    # transaction and need no message (issue 20: they never wait for a worker).
    wait_until(lambda: len(rig.compiled(submission_id)) == 10, 120, "the compiled points")
    to_judge = sorted(k for k, v in rig.compiled_verdicts(submission_id).items() if v == "IR")
    keys = wait_until(lambda: len(rig.outbox(submission_id)) == len(to_judge) and rig.outbox(submission_id), 120,
                      "the judge rows to wait in the outbox")
    assert to_judge == [(1, 0), (1, 1)]
    assert keys == sorted(f"judge {submission_id} {t}.{p}" for t, p in to_judge)
    time.sleep(3)
    rows = rig.rows(submission_id)  # nothing can be judged while the broker is away
    assert sorted((r["task"], r["point"]) for r in rows) == sorted(set(rig.compiled(submission_id)) - set(to_judge))
    assert all(r["verdict"] == "CE" and r["finished_at"] is not None for r in rows)
    rig.broker_proxy.restore()
    rig.complete_like_local(submission_id, local, since=time.monotonic())


def test_broker_restarted_during_judging_loses_its_queue(healthy, local_results):
    rig = healthy
    local = local_results(SLOW)  # before any fault: computing it takes a while
    submission_id, _ = rig.submit(SLOW, "broker-restart")
    wait_until(lambda: rig.running(submission_id, (1, 1)), 120, "test point 1.1 to start")
    rig.redis.restart()  # an empty Redis: every queued and unacknowledged message is gone
    rig.complete_like_local(submission_id, local, since=time.monotonic())


def test_database_cut_during_judging(healthy, local_results):
    rig = healthy
    local = local_results(SLOW)  # before any fault: computing it takes a while
    submission_id, _ = rig.submit(SLOW, "db-cut")
    wait_until(lambda: rig.running(submission_id, (1, 1)), 120, "test point 1.1 to start")
    rig.db_proxy.cut()
    time.sleep(15)  # longer than a heartbeat may be silent (6 s): the outage must not count as a death
    rig.db_proxy.restore()
    rig.complete_like_local(submission_id, local, since=time.monotonic())


def test_database_lost_between_the_last_point_and_the_totals(healthy, local_results):
    rig = healthy
    local = local_results(VADD_ONLY)  # before any fault: computing it takes a while
    submission_id, _ = rig.submit(VADD_ONLY, "totals-lost")
    state = rig.complete_like_local(submission_id, local)
    # What a connection dropped after the last point's commit leaves: every point final, no totals.
    with rig.observer.session() as session:
        session.execute(update(Submission).where(Submission.id == submission_id).values(
            task1=None, task2=None, task3=None, task4=None, total=None, scored_generation=None))
    assert rig.observer.status(submission_id)["status"] == "running"
    assert submission_id not in [r["submission_id"] for r in rig.observer.leaderboard()]
    lost = time.monotonic()
    again = rig.complete_like_local(submission_id, local, since=lost)  # the sweeper stores them
    assert again["tasks"] == state["tasks"] and again["total"] == state["total"]


def test_database_cut_after_the_last_point_committed_and_before_its_totals(healthy, local_results):
    """The real cut: once nine points are final and the tenth is judging, the observer locks the
    submission's row (FOR NO KEY UPDATE: the totals wait for it, result rows do not). The tenth's result
    commits, its totals wait for the lock, and then the database is cut: that transaction dies with its
    connection. After the restore the worker's retry or the sweeper stores the totals, no attempt spent."""
    from sqlalchemy import select as select_

    rig = healthy
    local = local_results(SLOW)  # before any fault: computing it takes a while
    submission_id, _ = rig.submit(SLOW, "totals-cut")

    def finished() -> set:
        return {(r["task"], r["point"]) for r in rig.rows(submission_id) if r["finished_at"] is not None}
    wait_until(lambda: len(finished()) == 9 and rig.running(submission_id, (1, 1)), 180,
               "nine points final and test point 1.1 judging")
    engine = db.make_engine(rig.observer.settings.db_url)
    try:
        with engine.connect() as locker:
            locker.execute(select_(Submission.id).where(Submission.id == submission_id)
                           .with_for_update(key_share=True))  # FOR NO KEY UPDATE: result rows may still refer to it
            wait_until(lambda: len(finished()) == 10, 180, "the last point's result to commit")
            assert rig.observer.status(submission_id)["total"] is None  # its totals wait for the lock
            rig.db_proxy.cut()
            time.sleep(2)
            locker.rollback()  # the waiting transaction gets the lock, but its client is cut off
        time.sleep(8)  # longer than a heartbeat may be silent: the outage must not count as a death
        assert rig.observer.status(submission_id)["total"] is None
    finally:
        engine.dispose()
        rig.db_proxy.restore()
    rig.complete_like_local(submission_id, local, since=time.monotonic())


def test_a_whole_worker_sigkilled(healthy, local_results):
    rig = healthy
    local = local_results(SLOW)  # before any fault: computing it takes a while
    submission_id, _ = rig.submit(SLOW, "worker-killed")
    wait_until(lambda: rig.running(submission_id, (1, 1)), 120, "test point 1.1 to start")
    rig.workers.kill(rig.workers.procs[-1])  # the whole process group: as if the machine were lost
    killed = time.monotonic()
    judging = {(r["task"], r["point"]) for r in rig.rows(submission_id) if r["finished_at"] is None}
    assert (1, 1) in judging
    rig.workers.start(rig.deployment, concurrency=2)
    # The points the dead worker was judging get one more attempt; nothing else spent one.
    rig.complete_like_local(submission_id, local, attempts={key: 2 for key in judging}, since=killed)


def test_rejudge_while_the_broker_is_down(healthy, local_results):
    rig = healthy
    local = local_results(VADD_ONLY)
    submission_id, _ = rig.submit(VADD_ONLY, "rejudged")
    rig.complete_like_local(submission_id, local)
    rig.broker_proxy.cut()
    proc = rig.deployment.cli("admin", "rejudge", "--fresh", submission_id)  # simulated again, not reused
    assert f"rejudge (fresh): queued 1 submission(s): {submission_id}" in proc.stdout
    assert rig.outbox(submission_id) == [f"compile {submission_id}"]
    # The old result stays visible (leaderboard and status) until the new one lands.
    board = {r["submission_id"]: r["total"] for r in rig.observer.leaderboard()}
    assert board[submission_id] == local["total"]
    state = rig.observer.status(submission_id)
    assert state["status"] == "queued" and state["rejudging"] and state["total"] == local["total"]
    time.sleep(3)
    rig.broker_proxy.restore()
    rig.complete_like_local(submission_id, local, generation=1, since=time.monotonic())


def test_submit_while_the_broker_is_down(healthy, local_results):
    rig = healthy
    local = local_results(VADD_ONLY)  # before any fault: computing it takes a while
    rig.broker_proxy.cut()
    submission_id, proc = rig.submit(VADD_ONLY, "broker-down")
    assert "the broker is unreachable" in proc.stderr and "queued in the database" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert rig.outbox(submission_id) == [f"compile {submission_id}"]
    time.sleep(3)
    rig.broker_proxy.restore()
    rig.complete_like_local(submission_id, local, since=time.monotonic())


def test_submit_while_the_database_is_down(healthy):
    rig = healthy
    stored = sorted((rig.deployment.data_dir / "submissions").rglob("*.py"))
    before = rig.submission_count()
    fresh = VADD_ONLY.read_bytes() + b"\n# a file never stored before\n"
    path = rig.deployment.log_dir / "db-down.py"
    path.write_bytes(fresh)
    rig.db_proxy.cut()
    proc = rig.deployment.cli("submit", path, "--user", "db-down", check=False)
    rig.db_proxy.restore()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the database is unreachable"), proc.stderr
    assert "nothing was stored" in lines[0] and proc.stdout == ""
    assert sorted((rig.deployment.data_dir / "submissions").rglob("*.py")) == stored
    assert rig.submission_count() == before
