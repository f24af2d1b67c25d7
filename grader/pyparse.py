"""``parse``: ``ast.parse`` made safe for threads (the server's request and grading threads all parse);
``check_syntax``: whether a text is Python at all, the intake's check, without building the tree.

CPython 3.11 keeps the recursion depth of its C-to-Python AST conversion in state shared by all
threads; a thread switch in the middle (a garbage collection running Python code is enough) makes a
parse in another thread fail with ``SystemError: AST constructor recursion depth mismatch``. Under 50
concurrent uploads that turned one intake into an HTTP 500. Parsing takes a millisecond or two, so one
lock costs nothing that matters. (kdt's front end parses in the single-threaded compile child.)
"""
import ast
import threading
import warnings

_LOCK = threading.Lock()
INTAKE_FILE = "<kdt-grade intake>"
# The compiler's SyntaxWarnings ("is" with a literal, ...) of a contestant's file are theirs to see when
# their kernel runs, not lines in the server's log: silenced for the intake's own file name only.
warnings.filterwarnings("ignore", category=SyntaxWarning, module=r"^<kdt-grade intake>$")


def check_syntax(source: str) -> None:
    """Raise what Python's compiler raises for ``source`` (``SyntaxError`` with ``lineno`` and ``msg``,
    ``ValueError`` for NUL bytes, ``RecursionError``/``MemoryError`` for hostile nesting); return None for
    a file Python accepts. Compiles to bytecode and drops it: no syntax tree is handed to Python, so this
    takes about 60% of ``ast.parse``'s time, creates almost no objects, and needs no lock. It refuses
    what ``import`` would refuse, ``return`` outside a function included (``ast.parse`` accepts those)."""
    compile(source, INTAKE_FILE, "exec", dont_inherit=True)


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` under the process-wide parse lock; raises what it raises
    (``SyntaxError``, ``ValueError`` for NUL bytes, ``RecursionError``/``MemoryError`` for hostile
    nesting)."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
