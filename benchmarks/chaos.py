"""Chaos benchmark of the grading service: N submissions while faults strike at random moments.

Real services: a private Redis started here, PostgreSQL (a fresh schema of --postgres-url, default the
test server), and our own TCP proxies (tests/faults.py) in front of both; `kdt-grade worker` processes
reach both only through the proxies. Faults, drawn from a seeded RNG over the first --window seconds:
`broker-cut` and `db-cut` (a proxy cut for 4-15 s), `broker-restart` (Redis restarted empty: the queue is
lost), `worker-kill` (a whole worker SIGKILLed, a new one started). Submissions arrive at random moments
in the same window; one refused because the database is down (ServiceUnavailable, HTTP 503 for the
server) is submitted again a second later, as a client would.

Prints how many submissions completed, how long after the end of the last fault the last one finished
(goal: under 60 s with the default intervals), every mismatch against `kdt-grade local` (goal: none),
duplicate rows, the attempts above 1 (only a killed worker's points may have them), and the stored
reusable results (``db.reuse``) of the submissions' kernels that differ from the recorded outcome (goal: none).

Run: `.venv/bin/python benchmarks/chaos.py [-n 12] [--seed 1] [--faults 4] [--workers 2] [--window 60]`
"""
from __future__ import annotations

import argparse
import json
import random
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy.engine import make_url  # noqa: E402

import db  # noqa: E402
from grader.config import load_settings  # noqa: E402
from grader.errors import ServiceUnavailable  # noqa: E402
from grader.service import Service  # noqa: E402
from tests.faults import PrivateRedis, TCPProxy  # noqa: E402
from tests.shared_services import POSTGRES_URL, fresh_postgres_schema  # noqa: E402

KDT_GRADE = [sys.executable, "-m", "grader.cli"]
FILES = [ROOT / "tests" / "judger" / "fixtures" / "vadd_only.py", ROOT / "tests" / "grader" / "service" / "fixtures" /
         "slow_vadd.py", ROOT / "submissions" / "examples" / "baseline.py"]
FAULTS = ("broker-cut", "db-cut", "broker-restart", "worker-kill")


def local_report(path: Path, env: dict) -> dict:
    proc = subprocess.run(KDT_GRADE + ["local", str(path), "--json"], env=env, capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode not in (0, 1):  # 1: graded, some point not AC
        raise subprocess.CalledProcessError(proc.returncode, proc.args, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


class Cluster:
    def __init__(self, tmp: Path, postgres_url: str, workers: int, intervals: dict):
        self.redis = PrivateRedis()
        self.broker_proxy = TCPProxy("127.0.0.1", self.redis.port)
        direct = make_url(postgres_url)
        self.db_proxy = TCPProxy(direct.host or "127.0.0.1", direct.port or 5432)
        proxied = direct.set(host="127.0.0.1", port=self.db_proxy.port).render_as_string(hide_password=False)
        broker = f"redis://127.0.0.1:{self.broker_proxy.port}/0"
        self.env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("KDT_GRADE_")}
        self.env.update({"KDT_GRADE_DATA_DIR": str(tmp / "var"), "KDT_GRADE_DATABASE_URL": proxied,
                         "KDT_GRADE_BROKER_URL": broker, "KDT_GRADE_WORKERS": "1", "PYTHONUNBUFFERED": "1",
                         **{f"KDT_GRADE_{k.upper()}": str(v) for k, v in intervals.items()}})
        self.client = Service(load_settings(data_dir=tmp / "var", database_url=proxied, broker_url=broker,
                                            **intervals))
        self.observer = Service(load_settings(data_dir=tmp / "obs", database_url=postgres_url,
                                              broker_url=self.redis.url, **intervals))
        self.tmp, self.procs, self.count = tmp, [], 0
        subprocess.run(KDT_GRADE + ["admin", "init-db"], env=self.env, cwd=ROOT, check=True, capture_output=True)
        for _ in range(workers):
            self.start_worker()

    def start_worker(self) -> None:
        self.count += 1
        log = self.tmp / f"worker-{self.count}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(KDT_GRADE + ["worker", "-c", "1", "--without-mingle", "--without-gossip",
                                                 "--hostname", f"chaos{self.count}@%h"],
                                    env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                    cwd=ROOT)
        deadline = time.monotonic() + 180
        while b" ready." not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"worker {self.count} did not start:\n{log.read_text()}")
            time.sleep(0.2)
        self.procs.append(proc)

    def kill_worker(self, rng: random.Random) -> None:
        import os
        import signal

        alive = [p for p in self.procs if p.poll() is None]
        victim = rng.choice(alive)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(30)
        self.start_worker()

    def close(self) -> None:
        import os
        import signal

        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.client.close()
        self.observer.close()
        self.broker_proxy.close()
        self.db_proxy.close()
        self.redis.stop()


def inject(cluster: Cluster, plan: list, rng: random.Random, t0: float, log: list) -> None:
    for at, kind, duration in plan:
        time.sleep(max(0.0, t0 + at - time.monotonic()))
        start = time.monotonic() - t0
        if kind == "broker-cut":
            cluster.broker_proxy.cut()
            time.sleep(duration)
            cluster.broker_proxy.restore()
        elif kind == "db-cut":
            cluster.db_proxy.cut()
            time.sleep(duration)
            cluster.db_proxy.restore()
        elif kind == "broker-restart":
            cluster.redis.restart()
        else:
            cluster.kill_worker(rng)
        log.append((start, kind, time.monotonic() - t0))
        print(f"  fault {kind:15s} {start:6.1f} s .. {time.monotonic() - t0:6.1f} s", flush=True)


def submit(cluster: Cluster, data: bytes, name: str, user: str) -> tuple[int, int]:
    refused = 0
    while True:
        try:
            return cluster.client.submit(data, name, user), refused
        except ServiceUnavailable:
            refused += 1
            time.sleep(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=12, help="submissions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--faults", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--window", type=float, default=60.0, help="seconds over which faults and submissions fall")
    parser.add_argument("--postgres-url", default=POSTGRES_URL)
    parser.add_argument("--heartbeat", type=float, default=5.0)
    parser.add_argument("--stale", type=float, default=30.0)
    parser.add_argument("--sweep", type=float, default=15.0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    intervals = {"heartbeat_seconds": args.heartbeat, "heartbeat_stale_seconds": args.stale,
                 "sweep_interval_seconds": args.sweep, "dispatch_interval_seconds": 2.0}
    plan = sorted((rng.uniform(0, args.window), rng.choice(FAULTS), rng.uniform(4, 15)) for _ in range(args.faults))
    arrivals = sorted(rng.uniform(0, args.window) for _ in range(args.n))
    files = [rng.choice(FILES) for _ in range(args.n)]
    with tempfile.TemporaryDirectory(prefix="kdt-chaos-") as tmp, fresh_postgres_schema("kdt_chaos_bench") as url:
        tmp = Path(tmp)
        env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("KDT_GRADE_")}
        local = {path: local_report(path, {**env, "KDT_GRADE_WORKERS": "2"}) for path in set(files)}
        cluster = Cluster(tmp, url, args.workers, intervals)
        try:
            print(f"{args.n} submissions, {args.faults} faults (seed {args.seed}), {args.workers} workers; "
                  f"heartbeat {args.heartbeat:g} s, stale after {args.stale:g} s, sweep every {args.sweep:g} s")
            faults: list = []
            t0 = time.monotonic()
            chaos = threading.Thread(target=inject, args=(cluster, plan, rng, t0, faults))
            chaos.start()
            ids, refusals = {}, 0
            for i, (at, path) in enumerate(zip(arrivals, files, strict=True)):
                time.sleep(max(0.0, t0 + at - time.monotonic()))
                data = path.read_bytes() + f"\n# chaos {i} {secrets.token_hex(6)}\n".encode()
                submission_id, refused = submit(cluster, data, path.name, f"user{i}")
                ids[submission_id], refusals = path, refusals + refused
            chaos.join()
            last_fault = max((end for _, _, end in faults), default=0.0)
            deadline = time.monotonic() + 600
            finished = {}
            while len(finished) < len(ids) and time.monotonic() < deadline:
                for sid in ids:
                    if sid not in finished and cluster.observer.status(sid)["status"] in ("done", "failed"):
                        finished[sid] = time.monotonic() - t0
                time.sleep(0.5)
            report(cluster, ids, local, finished, last_fault, refusals)
        finally:
            cluster.close()


def report(cluster: Cluster, ids: dict, local: dict, finished: dict, last_fault: float, refusals: int) -> None:
    mismatches, duplicates, extra_attempts, entries, bad_entries, reused = [], 0, [], 0, [], 0
    for sid, path in sorted(ids.items()):
        state = cluster.observer.status(sid)
        with cluster.observer.session() as session:
            rows = db.list_results(session, sid)
            stored = _reuse_entries(session, sid)
        reused += sum(p["reused"] for p in state["points"])
        recorded = {(p["task"], p["point"]): (p["verdict"], p["cycles"], p["score"], p["message"]) for p in state["points"]}
        entries += len(stored)
        bad_entries += [(sid, key) for key, outcome in stored.items() if outcome != recorded[key]]
        duplicates += len(rows) - len({(r["task"], r["point"]) for r in rows})
        extra_attempts += [(sid, r["task"], r["point"], r["attempts"]) for r in rows if r["attempts"] > 1]
        want = {(p["task"], p["point"]): (p["verdict"], p["cycles"], p["score"]) for p in local[path]["points"]}
        got = {(p["task"], p["point"]): (p["verdict"], p["cycles"], p["score"]) for p in state["points"]}
        if sid in finished and (want != got or state["total"] != local[path]["total"]):
            mismatches.append((sid, path.name, state["total"], local[path]["total"]))
    last = max(finished.values(), default=float("nan"))
    backlog = sum(1 for sid in ids if finished.get(sid, float("inf")) > last_fault)
    print("finished at (s): " + ", ".join(f"#{sid} {finished[sid]:.0f}" for sid in sorted(finished)))
    print(f"completed: {len(finished)} / {len(ids)}; {backlog} were still unfinished when the last fault ended")
    print(f"last submission finished {last - last_fault:.1f} s after the end of the last fault "
          f"(the last fault ended at {last_fault:.1f} s)")
    print(f"mismatches against `kdt-grade local`: {len(mismatches)} {mismatches or ''}")
    print(f"duplicate result rows: {duplicates}; intake refusals while the database was down (retried): {refusals}")
    print(f"test points with more than one attempt: {len(extra_attempts)} {extra_attempts or ''}")
    print(f"reusable results of these kernels: {entries} (points reused: {reused}); entries that differ from "
          f"the point's recorded outcome (half written or wrong): {len(bad_entries)} {bad_entries or ''}")


def _reuse_entries(session, submission_id: int) -> dict:
    """{(task, point): (verdict, cycles, score, message)} of the stored reusable results (``db.reuse``) of a
    submission's compiled kernels."""
    from db.reuse import find_reusable

    found = {}
    for task, point in db.compiled_points(session, submission_id):
        key = db.get_compiled(session, submission_id, task, point).get("key")
        entry = find_reusable(session, key) if key else None
        if entry is not None:
            found[(task, point)] = (entry["verdict"], entry["cycles"], entry["score"], entry["message"])
    return found


if __name__ == "__main__":
    main()
