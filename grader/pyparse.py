"""``parse``: ``ast.parse`` made safe for threads (the server's request and grading threads all parse).

CPython 3.11 keeps the recursion depth of its C-to-Python AST conversion in state shared by all
threads; a thread switch in the middle (a garbage collection running Python code is enough) makes a
parse in another thread fail with ``SystemError: AST constructor recursion depth mismatch``. Under 50
concurrent uploads that turned one intake into an HTTP 500. Parsing takes a millisecond or two, so one
lock costs nothing that matters. (kdt's front end parses in the single-threaded compile child.)
"""
import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` under the process-wide parse lock; raises what it raises
    (``SyntaxError``, ``ValueError`` for NUL bytes, ``RecursionError``/``MemoryError`` for hostile
    nesting)."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
