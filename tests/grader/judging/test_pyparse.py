"""grader.judging.pyparse.parse is safe under threads (CPython 3.11's ast.parse is not: a thread switch inside its
C-to-Python conversion fails another thread's parse with "AST constructor recursion depth mismatch", which
made one of 50 concurrent uploads an HTTP 500). A gc callback runs Python code inside every collection,
which makes such switches frequent; every intake-side caller goes through the lock."""
import ast
import gc
import resource
import sys
import threading
import time
from pathlib import Path

import pytest

from grader.judging import audit, pipeline, pyparse

SOURCE = (Path(__file__).resolve().parents[3] / "submissions" / "examples" / "optimized.py").read_text()


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


def test_the_symbol_table_check_is_safe_in_parallel_too(frequent_thread_switches):
    errors = []

    def work():
        for _ in range(100):
            try:
                pyparse.check_syntax(SOURCE)
            except (SystemError, SyntaxError) as exc:
                errors.append(str(exc))
    workers = [threading.Thread(target=work) for _ in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert errors == []


def test_the_intake_and_the_audit_parse_through_the_lock(monkeypatch):
    calls = []
    check, parse = pyparse.check_syntax, pyparse.parse
    monkeypatch.setattr(pipeline, "check_syntax", lambda *a, **k: calls.append("intake") or check(*a, **k))
    monkeypatch.setattr(audit, "parse", lambda *a, **k: calls.append("audit") or parse(*a, **k))
    pipeline.check_source(SOURCE.encode(), 1 << 20)
    audit.audit_source(SOURCE)
    assert calls[:2] == ["intake", "audit"]


@pytest.mark.parametrize("source, message", [
    ("def f(:\n", "line 1: invalid syntax"),
    ("x = 1\n\nnonlocal y\n", "line 3: nonlocal declaration not allowed at module level"),
    ("def f(a):\n    global a\n", "line 2: name 'a' is parameter and global"),
    ("def f():\n    nonlocal q\n", "line 2: no binding for nonlocal 'q' found"),
    ("from __future__ import braces\n", "line 1: not a chance"),
    ("y = [(x := 1) for x in z]\n", "line 1: assignment expression cannot rebind comprehension iteration variable 'x'"),
])
def test_the_intake_refuses_what_import_would_refuse_in_the_parser_or_the_symbol_table(source, message):
    """The intake's check is the parser plus the symbol table: scope errors that ``ast.parse`` accepts but
    ``import`` refuses are refused with the line, before anything is stored."""
    with pytest.raises(pipeline.Rejected) as refused:
        pipeline.check_source(source.encode(), 1 << 20)
    assert str(refused.value) == f"the file is not valid Python: {message}"


@pytest.mark.parametrize("source", [
    "return 1\n",                    # the code generator's errors: import refuses these, the intake lets
    "break\n",                       # them through to the compile step (a CE with the message)
    "async def f():\n    return [x async for x in y]\n",
    "\ufeffx = 1\n",
])
def test_the_intake_accepts_what_parses_and_has_a_symbol_table(source):
    assert pipeline.check_source(source.encode(), 1 << 20) == source


def test_a_pattern_that_makes_the_compiler_quadratic_costs_the_intake_nothing():
    """The intake parses and builds the symbol table, it does not compile: CPython's code generator needs
    memory growing with the square of a match pattern's names (8000 names: 2.6 GB), they do not."""
    names = ",".join(f"a{i}" for i in range(8000))
    source = f"match x:\n    case [{names}]:\n        pass\n".encode()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert pipeline.check_source(source, 1 << 20) == source.decode()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200 * 1024  # KiB: under 200 MB more


@pytest.mark.parametrize("head, encoding", [
    ("# coding: unicode_escape\n", "unicode_escape"),
    ("#!/usr/bin/env python\n# -*- coding: latin-1 -*-\n", "iso-8859-1"),
    ("# vim: set fileencoding=utf-16 :\n", "utf-16"),
    ("#a\r# coding: cp1252\r", "cp1252"),          # CR line ends: Python's import reads line 2 too
    ("# coding: utf8\n", "utf-8"), ("# -*- coding: UTF_8 -*-\n", "utf-8"), ("\ufeff# coding: utf-8\n", "utf-8"),
    ("x = 1\n# coding: latin-1\n", "utf-8"),        # line 2 counts only below a comment line
    ("\n\n# coding: latin-1\n", "utf-8"),          # line 3 never counts
])
def test_source_encoding_follows_pep_263(head, encoding):
    assert pyparse.source_encoding(head + "x = 1\n") == encoding


def test_the_intake_and_the_audit_refuse_other_coding_declarations():
    """Found by an attacker review: `# coding: unicode_escape` made an escaped comment run as code in the
    sandboxed import while the audit (reading UTF-8) saw a comment."""
    hidden = "# coding: unicode_escape\n# \\x0aimport os\\x0araise SystemExit(1)\ndef get_kernel(t):\n    return None\n"
    with pytest.raises(pipeline.Rejected, match="declares the source encoding 'unicode_escape'"):
        pipeline.check_source(hidden.encode(), 1 << 20)
    with pytest.raises(pipeline.Rejected, match="coding declaration is not usable: unknown encoding: nosuch"):
        pipeline.check_source(b"# coding: nosuch\nx = 1\n", 1 << 20)
    with pytest.raises(pipeline.Rejected, match="coding declaration is not usable"):  # import refuses it too
        pipeline.check_source("\ufeff# coding: utf8\nx = 1\n".encode(), 1 << 20)
    assert pipeline.check_source("\ufeff# coding: utf-8\nx = 1\n".encode(), 1 << 20).startswith("\ufeff")
    report = audit.audit_source(hidden)
    assert [(v.rule, v.line) for v in report.violations] == [("encoding", 1)]
    assert "unicode_escape" in report.violations[0].message
