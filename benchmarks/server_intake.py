"""Intake latency of the contest server while its pool grades: N concurrent clients submit once.

Starts a real `kdt-grade serve` (embedded mode: the server's own process pool grades; or `--broker-url`
with one `kdt-grade worker`), makes N+1 accounts, submits `--background` copies of the file first so the
pool is busy grading, then N client threads (one httpx client and token each, released together by a
barrier) POST one copy each (a random comment makes every copy's sha256 differ). Prints the POST latency
p50/p99/max, whether grading was running during the intake, the CPU per upload of the HTTP processes
and of the clients (with the floor they set on the last upload's latency on this many cores, and a
yardstick of the machine's speed, for comparing machines), and then waits until all N are graded and
checks that every one has exactly the per-point outcomes and total of `kdt-grade local --json`.

Run: `.venv/bin/python benchmarks/server_intake.py [-n 50] [--file F] [--workers 2] [--http-workers 2] [--background 2]`
"""
import argparse
import concurrent.futures
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.service import accounts  # noqa: E402
from grader.config import load_settings  # noqa: E402
from grader.service import Service  # noqa: E402

KDT_GRADE = [sys.executable, "-m", "grader.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args_list: list, env: dict, log: Path, ready) -> subprocess.Popen:
    with open(log, "wb") as out:
        proc = subprocess.Popen(KDT_GRADE + args_list, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=ROOT)
    deadline = time.monotonic() + 180
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"{args_list[0]} did not start:\n{log.read_text()}")
        time.sleep(0.2)
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def http_cpu_seconds(server: subprocess.Popen) -> float:
    """CPU seconds used so far by the server's HTTP processes (in its process group, named by their
    process title), from ``/proc/PID/stat``: the intake's CPU per upload."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue  # gone meanwhile
        if int(fields[2]) == server.pid and cmdline.startswith(b"kdt-grade serve: HTTP process"):
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def reference_ms(data: bytes, rounds: int = 50) -> float:
    """CPU milliseconds to parse ``data`` with ``ast.parse`` here: a yardstick of this machine's speed, so
    figures from different machines can be compared."""
    import ast

    ast.parse(data)
    t0 = time.thread_time()
    for _ in range(rounds):
        ast.parse(data)
    return (time.thread_time() - t0) / rounds * 1000


def answers(url: str) -> bool:
    try:
        return httpx.get(url + "/api/v1/contest", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def copy_of(data: bytes) -> bytes:
    return data + f"\n# copy {secrets.token_hex(8)}\n".encode()


def client_for(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url + "/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=60)


def post(client: httpx.Client, name: str, data: bytes) -> tuple[float, int, dict]:
    """One timed upload (the TCP connection is opened inside the timing, as a fresh client's would be)."""
    t0 = time.perf_counter()
    response = client.post("/submissions", files={"file": (name, data, "text/x-python")})
    return time.perf_counter() - t0, response.status_code, response.json()


def outcomes(points: list[dict]) -> list:
    return [(p["task"], p["point"], p["verdict"], p["cycles"], p["score"], p["message"]) for p in points]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50, help="concurrent clients, one submission each (default 50)")
    parser.add_argument("--file", type=Path, default=ROOT / "submissions" / "examples" / "optimized.py")
    parser.add_argument("--workers", type=int, default=2, help="grading processes (default 2)")
    parser.add_argument("--background", type=int, default=2, help="copies submitted first to keep the pool busy")
    parser.add_argument("--http-workers", type=int, default=2, help="HTTP processes of the server (default 2)")
    parser.add_argument("--broker-url", help="broker mode: grade on one Celery worker (Redis URL; flushed)")
    parser.add_argument("--database-url", help="default: a new SQLite file (e.g. a PostgreSQL URL of an empty schema)")
    args = parser.parse_args()

    data = args.file.read_bytes()
    print(f"{args.n} concurrent clients submit {args.file.name} to a real server "
          f"({'broker ' + args.broker_url if args.broker_url else 'embedded pool'}, {args.workers} grading "
          f"processes, {args.http_workers} HTTP processes, {'PostgreSQL' if args.database_url else 'SQLite'}); {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"machine yardstick: ast.parse of the file takes {reference_ms(data):.1f} ms of CPU")
    with tempfile.TemporaryDirectory(prefix="kdt-grade-intake-") as tmp:
        tmp = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KDT_GRADE_")}
        env.update(KDT_GRADE_DATA_DIR=str(tmp / "var"), KDT_GRADE_WORKERS=str(args.workers))
        if args.database_url:
            env["KDT_GRADE_DATABASE_URL"] = args.database_url
        settings = load_settings(data_dir=tmp / "var", workers=args.workers, broker_url=args.broker_url,
                                 database_url=args.database_url)
        procs = []
        with Service(settings) as service:
            service.init_db()
            tokens = [accounts.add_user(service, f"client{i:03d}")[1] for i in range(args.n)]
            load_token = accounts.add_user(service, "load")[1]
            if args.broker_url:
                import redis

                redis.Redis.from_url(args.broker_url).flushdb()
                env["KDT_GRADE_BROKER_URL"] = args.broker_url
                log = tmp / "worker.log"
                procs.append(start(["worker", "-c", str(args.workers), "--without-mingle", "--without-gossip"],
                                   env, log, lambda: b" ready." in log.read_bytes()))
            url = f"http://127.0.0.1:{free_port()}"
            server_log = tmp / "server.log"  # "serving on": every HTTP process has started its app
            procs.append(start(["serve", "--port", url.rsplit(":", 1)[1], "--http-workers", str(args.http_workers)],
                               env, server_log, lambda: b"serving on http" in server_log.read_bytes() and answers(url)))
            try:
                with client_for(url, load_token) as load:
                    background = [post(load, "load.py", copy_of(data))[2]["id"] for _ in range(args.background)]
                while args.background and service.status(background[0])["status"] == "queued":
                    time.sleep(0.1)  # grading has begun

                barrier = threading.Barrier(args.n)
                clients = [client_for(url, token) for token in tokens]  # made before the clock starts
                bodies = [copy_of(data) for _ in range(args.n)]

                def client(i: int):
                    barrier.wait()
                    return post(clients[i], f"client{i}.py", bodies[i])
                server = procs[-1]
                http_before, client_before = http_cpu_seconds(server), time.process_time()
                t0 = time.perf_counter()
                with concurrent.futures.ThreadPoolExecutor(args.n) as pool:
                    results = list(pool.map(client, range(args.n)))
                wall = time.perf_counter() - t0
                http_cpu = http_cpu_seconds(server) - http_before
                client_cpu = time.process_time() - client_before
                for c in clients:
                    c.close()
                busy = [service.status(b)["status"] for b in background]
                refused = [r for r in results if r[1] != 202]
                if refused:
                    log_tail = "\n".join((tmp / "server.log").read_text(errors="replace").splitlines()[-80:])
                    raise SystemExit(f"{len(refused)} POSTs were refused: {refused[:3]}\n--- server log\n{log_tail}")
                latencies = sorted(r[0] * 1000 for r in results)
                cuts = statistics.quantiles(latencies, n=100, method="inclusive")
                print(f"POST latency over {args.n} concurrent submissions: p50 {cuts[49]:.0f} ms, p99 {cuts[98]:.0f} ms, "
                      f"max {latencies[-1]:.0f} ms (all {args.n} accepted in {wall:.2f} s); background "
                      f"submissions during the intake: {', '.join(busy) or 'none'}")
                cores = os.cpu_count() or 1
                print(f"CPU per upload: HTTP processes {http_cpu / args.n * 1000:.1f} ms, this benchmark's clients "
                      f"{client_cpu / args.n * 1000:.1f} ms; the {args.n} uploads' CPU spread over {cores} cores "
                      f"takes at least {(http_cpu + client_cpu) / cores * 1000:.0f} ms, a floor for the last "
                      f"upload's latency")
                print(f"goal: p99 under 200 ms while the pool grades: "
                      f"{'met' if cuts[98] < 200 else 'not met'} on this machine")

                t1 = time.perf_counter()
                states = [service.wait(r[2]["id"], timeout=7200, poll=1.0) for r in results]
                print(f"all {args.n} graded {time.perf_counter() - t1:.0f} s after the intake")
            finally:
                for proc in reversed(procs):
                    stop(proc)
                if args.broker_url:
                    redis.Redis.from_url(args.broker_url).flushdb()
        local = json.loads(subprocess.run(KDT_GRADE + ["local", str(args.file), "--json"], env=env, cwd=ROOT,
                                          capture_output=True, text=True).stdout)  # exit 1: a point not AC
    same = [s["status"] == "done" and s["total"] == local["total"] and outcomes(s["points"]) == outcomes(local["points"])
            for s in states]
    print(f"{sum(same)}/{args.n} submissions have exactly the per-point results and total of `kdt-grade local` "
          f"(total {local['total']:.2f})")
    if not all(same):
        raise SystemExit("some submissions differ from local")


if __name__ == "__main__":
    main()
