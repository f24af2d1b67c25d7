"""The scoreboard page with 300 contestants: how long the server takes to render ``/``, and how
much each live update sends.

Builds a fresh SQLite contest (300 accounts, 3 scored submissions each), starts ``kdt-grade serve`` on a
loopback port and measures, from a client on the same machine:

- ``GET /`` with the board recomputed each time (requests 1.1 s apart, past the board's 1 s reuse) and
  back to back (the reused board): p50 / p99 / max in milliseconds, and the page's size;
- the same in-process (FastAPI's test client over the same app), as CPU time of the server process
  (``time.process_time``): what rendering costs, whatever else the machine is doing;
- ``GET /scoreboard.json``: the bytes of a full document, of a 304 (nothing changed), and of the update
  after one contestant's new better submission moves them up four places (only the moved rows are sent).

Run: ``.venv/bin/python benchmarks/scoreboard_render.py [--users 300] [--samples 20]``
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import update

import db
from db.submissions import Submission
from grader.service import accounts
from grader.config import load_settings
from grader.service import Service

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = {1: 10, 2: 20, 3: 30, 4: 40}


def populate(service: Service, users: int, per_user: int, rng: random.Random) -> None:
    """``users`` accounts with ``per_user`` scored submissions each (random scores, distinct totals)."""
    accounts.import_users(service, [(f"user{i:03d}", f"Contestant {i}") for i in range(users)])
    with service.session() as session:
        for i in range(users):
            user_id = db.get_or_create_user(session, f"user{i:03d}")["id"]
            for k in range(per_user):
                row = db.create_submission(session, user_id, f"try{k}.py", "0" * 64, "def get_kernel(t): pass\n")
                scores = {f"task{t}": round(rng.uniform(0, w), 4) for t, w in WEIGHTS.items()}
                session.execute(update(Submission).where(Submission.id == row["id"])
                                .values(**scores, total=sum(scores.values())))


def improve(service: Service, user: str, places: int) -> None:
    """A new submission of ``user`` whose total passes the ``places`` contestants ranked just above them."""
    board = service.leaderboard()
    rank = next(r["rank"] for r in board if r["user_name"] == user)
    target = board[rank - 1 - places]["total"] + 1e-3
    with service.session() as session:
        user_id = db.get_or_create_user(session, user)["id"]
        row = db.create_submission(session, user_id, "better.py", "0" * 64, "def get_kernel(t): pass\n")
        session.execute(update(Submission).where(Submission.id == row["id"])
                        .values(task1=target, task2=0, task3=0, task4=0, total=target))


def timed_get(client: httpx.Client, path: str) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    response = client.get(path)
    return (time.perf_counter() - t0) * 1000, response


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    p99 = ms[min(len(ms) - 1, int(round(0.99 * (len(ms) - 1))))]
    return f"p50 {statistics.median(ms):6.1f} ms   p99 {p99:6.1f} ms   max {ms[-1]:6.1f} ms   (n={len(ms)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=300)
    parser.add_argument("--per-user", type=int, default=3)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "var"
        settings = load_settings(data_dir=data_dir, workers=1)
        service = Service(settings)
        service.init_db()
        populate(service, args.users, args.per_user, random.Random(12))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KDT_GRADE_")}
        env.update(KDT_GRADE_DATA_DIR=str(data_dir), KDT_GRADE_WORKERS="1")
        port = _free_port()
        script = Path(sys.executable).with_name("kdt-grade")
        proc = subprocess.Popen([str(script), "serve", "--port", str(port), "--log-level", "warning"], env=env,
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
            _wait_up(client)
            client.get("/")  # warm up (templates compiled, connections open)
            cold, warm = [], []
            for _ in range(args.samples):
                time.sleep(1.1)
                ms, page = timed_get(client, "/")
                cold.append(ms)
            for _ in range(args.samples * 5):
                warm.append(timed_get(client, "/")[0])
            rows = page.text.count("<tr data-user=")
            print(f"scoreboard page, {rows} contestants, {len(page.content) / 1024:.1f} KiB of HTML")
            print(f"  GET / (board recomputed)   {summary(cold)}")
            print(f"  GET / (board reused, <1 s) {summary(warm)}")

            cpu_recomputed, cpu_reused = in_process_cpu(settings, args.samples)
            print(f"  in-process CPU per GET / (board recomputed) {summary(cpu_recomputed)}")
            print(f"  in-process CPU per GET / (board reused)     {summary(cpu_reused)}")
            print(f"  goal: under 100 ms on the server; CPU p99 recomputed / goal = {max(cpu_recomputed) / 100:.2f}; "
                  f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall times include the wait)")

            full = client.get("/scoreboard.json?since=unknown")
            version = full.json()["version"]
            same = client.get(f"/scoreboard.json?since={version}")
            improve(service, "user150" if args.users > 150 else "user001", 4)
            time.sleep(1.1)
            changed = client.get(f"/scoreboard.json?since={version}")
            doc = changed.json()
            print("live updates (/scoreboard.json):")
            print(f"  full document              {len(full.content):7d} bytes ({len(full.json()['changed'])} rows)")
            print(f"  nothing changed            {len(same.content):7d} bytes (HTTP {same.status_code})")
            print(f"  one contestant up 4 places {len(changed.content):7d} bytes ({len(doc['changed'])} rows changed: "
                  f"{', '.join(r['user'] for r in doc['changed'])}); full page {len(page.content)} bytes")
        finally:
            proc.terminate()
            proc.wait(timeout=60)
            service.close()


def in_process_cpu(settings, samples: int) -> tuple[list[float], list[float]]:
    """CPU milliseconds of this process per ``GET /`` through the app in-process, the board recomputed
    every time (``ttl`` 0) and reused."""
    from fastapi.testclient import TestClient

    from grader.web.app import create_app

    app = create_app(settings)
    out = []
    with TestClient(app) as client:
        for ttl in (0.0, 3600.0):
            app.state.scoreboards.ttl = ttl
            client.get("/")
            ms = []
            for _ in range(samples):
                t0 = time.process_time()
                assert client.get("/").status_code == 200
                ms.append((time.process_time() - t0) * 1000)
            out.append(ms)
    return out[0], out[1]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_up(client: httpx.Client) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if client.get("/api/v1/contest").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("the server did not come up")


if __name__ == "__main__":
    main()
