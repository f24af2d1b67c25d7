"""Grading throughput of the service: submissions per minute with 1 and with 2 worker processes.

Grades N copies of an example submission (a random comment makes each copy's sha256 differ) through the
real path: `Service.submit` -> Redis -> a Celery worker started with `kdt-grade worker --concurrency W`
-> SQLite (or --database-url), and times from the first submit to the last total stored. Each copy is
graded in full (audit, sandboxed compile, ten test points). Prints one line per worker count, the
speed-up, and checks that every point of every copy got what `kdt-grade local --json` gives the file
(verdict, cycles, score and message).

`--embedded` measures the embedded mode instead (no broker: the test points of one submission at a time
over a local process pool of W processes). `--cold` also runs each worker count with
`KDT_GRADE_COMPILE_WARM=0` (every compile a fresh interpreter), alternating with the warm default, so the
two are compared in one run.

Per run it also prints the latency from a submission's submit to its final total (p50, p99) and the share of
the worker's CPU time (all its processes, `RUSAGE_CHILDREN` once it has exited) that was not test-point
simulation (the sum of the points' judge wall seconds, single-threaded).

Run: `.venv/bin/python benchmarks/grading_throughput.py [-n 4] [--file F] [--workers 1 2]`
(needs Redis at --redis-url, default redis://127.0.0.1:6379/14, which it flushes).
"""
import argparse
import json
import os
import resource
import statistics
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.config import load_settings  # noqa: E402
from grader.service import Service  # noqa: E402

KDT_GRADE = [sys.executable, "-m", "grader.cli"]


def copies(path: Path, n: int) -> list[bytes]:
    data = path.read_bytes()
    return [data + f"\n# copy {i} {secrets.token_hex(8)}\n".encode() for i in range(n)]


def start_worker(env: dict, concurrency: int, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        proc = subprocess.Popen(KDT_GRADE + ["worker", "--concurrency", str(concurrency), "--without-mingle",
                                             "--without-gossip", "--hostname", f"bench{concurrency}@%h"],
                                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
    deadline = time.monotonic() + 120
    while b" ready." not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start:\n{log.read_text()}")
        time.sleep(0.2)
    return proc


def stop_worker(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def local_results(path: Path) -> list:
    """``(task, point, verdict, cycles, score, message)`` of every test point as ``kdt-grade local --json``
    grades ``path``: what every graded copy must get."""
    proc = subprocess.run(KDT_GRADE + ["local", str(path), "--json"], capture_output=True, text=True, cwd=ROOT,
                          env={k: v for k, v in os.environ.items() if not k.startswith("KDT_GRADE_")})
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kdt-grade local failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return [_key(p) for p in json.loads(proc.stdout)["points"]]


def _key(point: dict) -> tuple:
    return (point["task"], point["point"], point["verdict"], point["cycles"], point["score"], point["message"])


def wait_all(service, ids: list, t0: float) -> tuple[list, list]:
    """Poll until every submission is final; ``(states, seconds from t0 to each one's final total)``."""
    states, latency = {}, {}
    while len(states) < len(ids):
        for i in ids:
            if i not in states:
                state = service.status(i)
                if state["status"] in ("done", "failed"):
                    states[i], latency[i] = state, time.perf_counter() - t0
        time.sleep(0.2)
    return [states[i] for i in ids], [latency[i] for i in ids]


def run(files: list[bytes], workers: int, args, tmp: Path, warm: bool = True) -> dict:
    data_dir = tmp / f"workers-{workers}-{'warm' if warm else 'cold'}"
    database_url = args.database_url or f"sqlite:///{data_dir / 'kdt-grade.sqlite3'}"
    broker_url = None if args.embedded else args.redis_url
    settings = load_settings(data_dir=data_dir, database_url=database_url, broker_url=broker_url, workers=workers)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KDT_GRADE_")}
    env.update(KDT_GRADE_DATA_DIR=str(data_dir), KDT_GRADE_DATABASE_URL=database_url,
               KDT_GRADE_WORKERS=str(workers), KDT_GRADE_COMPILE_WARM="1" if warm else "0")
    if args.embedded:
        settings = load_settings(data_dir=data_dir, database_url=database_url, workers=workers, compile_warm=warm)
    data_dir.mkdir(parents=True)
    with Service(settings) as service:
        service.init_db()
        proc = None
        if not args.embedded:
            import redis

            redis.Redis.from_url(args.redis_url).flushdb()
            env["KDT_GRADE_BROKER_URL"] = args.redis_url
            proc = start_worker(env, workers, tmp / f"worker-{workers}-{warm}.log")
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            t0 = time.perf_counter()
            ids = [service.submit(data, f"copy{i}.py", f"bench{i}") for i, data in enumerate(files)]
            states, latency = wait_all(service, ids, t0)
            elapsed = time.perf_counter() - t0
        finally:
            if proc is not None:
                stop_worker(proc)
                redis.Redis.from_url(args.redis_url).flushdb()
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    simulated = sum(p["wall_seconds"] or 0.0 for s in states for p in s["points"])
    return {"elapsed": elapsed, "totals": [s["total"] for s in states], "latency": sorted(latency),
            "points": [[_key(p) for p in s["points"]] for s in states],
            "worker_cpu": worker_cpu if proc is not None else None, "simulated": simulated}


def report(label: str, n: int, r: dict) -> None:
    lat = r["latency"]
    p99 = lat[min(len(lat) - 1, round(0.99 * (len(lat) - 1)))]
    cpu = r["worker_cpu"]
    share = f"{100 * (1 - r['simulated'] / cpu):.0f}% of the worker's {cpu:.1f} CPU s" if cpu else "n/a (embedded)"
    print(f"{label}: {r['elapsed']:6.1f} s for {n} submissions = {60 * n / r['elapsed']:5.2f} submissions/min "
          f"({600 * n / r['elapsed']:5.1f} test points/min), total {r['totals'][0]:.1f} each; latency p50 "
          f"{statistics.median(lat):.1f} s, p99 {p99:.1f} s; not test-point work: {share}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=4, help="copies to grade (default 4)")
    parser.add_argument("--file", type=Path, default=ROOT / "submissions" / "examples" / "optimized.py")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="worker process counts")
    parser.add_argument("--redis-url", default=os.environ.get("KDT_GRADE_BENCH_REDIS_URL",
                                                              "redis://127.0.0.1:6379/14"))
    parser.add_argument("--database-url", help="default: a new SQLite file per run")
    parser.add_argument("--embedded", action="store_true", help="no broker: the embedded process pool")
    parser.add_argument("--cold", action="store_true", help="also run with cold compiles (KDT_GRADE_COMPILE_WARM=0)")
    args = parser.parse_args()

    files = copies(args.file, args.n)
    mode = "embedded pool" if args.embedded else f"Celery + Redis ({args.redis_url})"
    print(f"grading {args.n} copies of {args.file.name} via {mode}; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}")
    results = {}
    want = local_results(args.file)
    with tempfile.TemporaryDirectory(prefix="kdt-grade-bench-") as tmp:
        totals_seen = set()
        for w in args.workers:
            for warm in ((False, True) if args.cold else (True,)):
                r = run(files, w, args, Path(tmp), warm)
                totals_seen |= set(r["totals"])
                if len(totals_seen) != 1:
                    raise SystemExit(f"copies got different totals: {sorted(totals_seen)}")
                differ = [i for i, points in enumerate(r["points"]) if points != want]
                if differ:
                    raise SystemExit(f"copies {differ} got other results than `kdt-grade local` (verdict, cycles, "
                                     f"score or message of a point): {r['points'][differ[0]]} != {want}")
                results[w, warm] = r["elapsed"]
                report(f"{w} worker process{'es' if w > 1 else ''}, {'warm' if warm else 'cold'} compiles",
                       args.n, r)
    print(f"every point of every copy (verdict, cycles, score, message) is what `kdt-grade local` gives: yes "
          f"({len(want)} points)")
    warm_runs = {w: e for (w, warm), e in results.items() if warm}
    base = min(warm_runs)
    for w in sorted(warm_runs):
        if w != base:
            print(f"speed-up {base} -> {w} worker processes (warm): {warm_runs[base] / warm_runs[w]:.2f}x")
    for w in sorted(warm_runs):
        if (w, False) in results:
            print(f"{w} worker process(es): warm compiles grade {results[w, False] / results[w, True]:.2f}x "
                  "the submissions per minute of cold ones")


if __name__ == "__main__":
    main()
