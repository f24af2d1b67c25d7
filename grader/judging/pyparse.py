"""``parse``: ``ast.parse`` made safe for threads (the server's request and grading threads all parse);
``check_syntax``: the intake's check that a file is Python, without building the tree;
``source_encoding``: the encoding a file's coding declaration gives it.

CPython 3.11 keeps the recursion depth of its C-to-Python AST conversion in state shared by all
threads; a thread switch in the middle (a garbage collection running Python code is enough) makes a
parse in another thread fail with ``SystemError: AST constructor recursion depth mismatch``. Under 50
concurrent uploads that turned one intake into an HTTP 500. Parsing takes a millisecond or two, so one
lock costs nothing that matters. (kdt's front end parses in the single-threaded compile child.)
"""
import ast
import codecs
import io
import symtable
import threading
import tokenize

_LOCK = threading.Lock()


def source_encoding(text: str) -> str:
    """The encoding Python's import would read ``text`` with, from its coding declaration (PEP 263:
    a ``coding[:=]`` comment on line 1 or 2): ``"utf-8"`` when there is none. A submission is audited
    and stored as UTF-8, so any other declaration would make the sandboxed import see different code
    (``# coding: unicode_escape`` turns an escaped comment into statements). Raises ``SyntaxError`` for
    an unknown encoding, as Python does."""
    # Lines as Python's reader cuts them (LF), and as its universal newlines do (CR, CRLF): either way.
    # A BOM stays: with one, Python accepts no declaration but exactly "utf-8" (SyntaxError otherwise).
    for variant in (text, text.replace("\r\n", "\n").replace("\r", "\n")):
        encoding, _ = tokenize.detect_encoding(io.BytesIO(variant.encode("utf-8", "surrogatepass")).readline)
        if codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig"):  # "utf8", "UTF_8": the same codec
            return encoding
    return "utf-8"


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` under the process-wide parse lock; raises what it raises
    (``SyntaxError``, ``ValueError`` for NUL bytes, ``RecursionError``/``MemoryError`` for hostile
    nesting)."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)


def check_syntax(source: str, filename: str = "<submission>") -> None:
    """Raise ``SyntaxError`` (``ValueError`` for NUL bytes, ``RecursionError``/``MemoryError`` for hostile
    nesting) unless ``source`` is a Python module that ``import`` could compile, as far as the parser and
    the symbol table tell: everything ``ast.parse`` refuses, and the scope errors only the compiler sees
    (``nonlocal`` at module level, a parameter declared ``global``, ...), which an import would refuse too.

    The intake's check (``pipeline.check_source``): CPython's parser and symbol table work on the C-level
    tree, so no Python tree is built (cheaper than ``ast.parse``); the code
    generator, whose memory grows with the square of a match pattern's names, is not run. Under the same
    lock as ``parse`` (the symbol table keeps no shared state, but the lock is cheap and certain)."""
    with _LOCK:
        symtable.symtable(source, filename, "exec")
