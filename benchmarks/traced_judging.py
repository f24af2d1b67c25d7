"""What tracing costs the judge (issue 22): CPU seconds of judging every test point of a submission
untraced (``pipeline.judge``), with the judge's own trace of jobs 0-3 (``pipeline.judge_traced``, what the
service stores for the page), and with every job traced (``pipeline.judge_explained``, ``--explain``).

The submission is compiled once (in the sandbox, as the service does); then each way judges the same
compiled points, best of ``--repeat`` runs in this process's CPU seconds (``time.process_time``, far less
disturbed by other jobs than the wall clock). Prints one line per way with its ratio to untraced.
Run: ``.venv/bin/python benchmarks/traced_judging.py [FILE] [--repeat N]``
"""
import argparse
import time
from pathlib import Path

from timing import best_time

from grader.config import load_settings
from grader.judging import pipeline

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=ROOT / "submissions/examples/optimized.py", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    settings = load_settings()
    compiled = pipeline.prepare(args.file.read_bytes(), pipeline.ALL_POINTS, settings)
    ways = {"untraced (judge)": pipeline.judge, "jobs 0-3 traced (judge_traced, the service)": pipeline.judge_traced,
            "every job traced (judge_explained, --explain)": pipeline.judge_explained}
    seconds = {}
    for name, judge in ways.items():
        seconds[name] = best_time(lambda: [judge(*p, compiled[p], settings) for p in pipeline.ALL_POINTS],
                                  args.repeat, clock=time.process_time)
    base = seconds["untraced (judge)"]
    print(f"{args.file.name}: {len(pipeline.ALL_POINTS)} test points, best of {args.repeat}, CPU seconds")
    for name, s in seconds.items():
        print(f"  {name:48s} {s:7.3f} s  {s / base:5.3f}x")


if __name__ == "__main__":
    main()
