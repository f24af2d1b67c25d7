"""grader.pyparse.parse is safe under threads (CPython 3.11's ast.parse is not: a thread switch inside its
C-to-Python conversion fails another thread's parse with "AST constructor recursion depth mismatch", which
made one of 50 concurrent uploads an HTTP 500). A gc callback runs Python code inside every collection,
which makes such switches frequent; every intake-side caller goes through the lock."""
import ast
import gc
import subprocess
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


def test_the_audit_parses_through_the_lock_and_the_intake_only_compiles(monkeypatch):
    calls = []
    real_parse, real_check = pyparse.parse, pyparse.check_syntax
    monkeypatch.setattr(pipeline, "check_syntax", lambda *a, **k: calls.append("intake") or real_check(*a, **k))
    monkeypatch.setattr(audit, "parse", lambda *a, **k: calls.append("audit") or real_parse(*a, **k))
    pipeline.check_source(SOURCE.encode(), 1 << 20)
    audit.audit_source(SOURCE)
    assert calls[:2] == ["intake", "audit"]


def test_the_intake_check_needs_no_lock_under_thread_switches(frequent_thread_switches):
    errors = []

    def work():
        for _ in range(100):
            try:
                pyparse.check_syntax(SOURCE)
            except Exception as exc:  # noqa: BLE001  (any failure of a valid file is the bug)
                errors.append(repr(exc))
    workers = [threading.Thread(target=work) for _ in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert errors == []


@pytest.mark.parametrize("source, message", [
    ("def f(:\n    pass\n", "the file is not valid Python: line 1: invalid syntax"),
    ("x = 1\nreturn x\n", "the file is not valid Python: line 2: 'return' outside function"),
    ("nonlocal x\n", "the file is not valid Python: line 1: nonlocal declaration not allowed at module level"),
    ("x = 1\0\n", "the file is not valid Python: source code string cannot contain null bytes"),
])
def test_the_intake_refuses_what_import_would_refuse(source, message):
    with pytest.raises(pipeline.Rejected) as caught:
        pipeline.check_source(source.encode(), 1 << 20)
    assert str(caught.value) == message


def test_the_compilers_warnings_on_a_submission_stay_out_of_the_servers_log():
    code = ("from grader import pipeline\n"
            "pipeline.check_source(b'x = 1\\nassert (x, \"always true\")\\ny = x is 1\\n', 1 << 20)\n"
            "compile('z = 2 is 2', 'other.py', 'exec')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], check=True)
    assert "SyntaxWarning" in done.stderr and "other.py" in done.stderr  # the filter is not global
    assert "kdt-grade intake" not in done.stderr and "always true" not in done.stderr
