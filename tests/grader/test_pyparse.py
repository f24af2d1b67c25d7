"""grader.pyparse.parse is safe under threads (CPython 3.11's ast.parse is not: a thread switch inside its
C-to-Python conversion fails another thread's parse with "AST constructor recursion depth mismatch", which
made one of 50 concurrent uploads an HTTP 500). A gc callback runs Python code inside every collection,
which makes such switches frequent; every intake-side caller goes through the lock."""
import ast
import gc
import sys
import threading
import time
from pathlib import Path

import pytest

from grader import audit, pipeline, pyparse

SOURCE = (Path(__file__).resolve().parents[2] / "submissions" / "examples" / "optimized.py").read_text()


@pytest.fixture
def frequent_thread_switches():
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    callback = lambda *_: time.sleep(0)  # noqa: E731  (Python code inside a collection: a switch point)
    sys.setswitchinterval(1e-6)
    gc.set_threshold(50)
    gc.callbacks.append(callback)
    yield
    gc.callbacks.remove(callback)
    gc.set_threshold(*thresholds)
    sys.setswitchinterval(interval)


def parse_in_threads(parse, threads=4, each=100) -> list[str]:
    errors, expected = [], len(list(ast.walk(ast.parse(SOURCE))))

    def work():
        for _ in range(each):
            try:
                if len(list(ast.walk(parse(SOURCE)))) != expected:
                    errors.append("a different tree")
            except SystemError as exc:
                errors.append(str(exc))
    workers = [threading.Thread(target=work) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return errors


def test_parallel_parses_all_succeed_with_the_same_tree(frequent_thread_switches):
    assert parse_in_threads(pyparse.parse) == []


def test_the_intake_and_the_audit_parse_through_the_lock(monkeypatch):
    calls = []
    real = pyparse.parse
    monkeypatch.setattr(pipeline, "parse", lambda *a, **k: calls.append("intake") or real(*a, **k))
    monkeypatch.setattr(audit, "parse", lambda *a, **k: calls.append("audit") or real(*a, **k))
    pipeline.check_source(SOURCE.encode(), 1 << 20)
    audit.audit_source(SOURCE)
    assert calls[:2] == ["intake", "audit"]
