"""Static audit of a submission file before any of it runs.

Implements the first check of the way described in spec/architecture.md ("intake -> static audit ->
sandboxed child"): the file is parsed with :mod:`ast` and never imported or executed. Every violation
of the rules in :data:`RULES` is reported with its rule id, line, column (1-based characters) and the
source line; the caller turns a report that is not :attr:`AuditReport.ok` into the verdict ``SV`` for
every test point (spec/judging.md, "Verdicts").

What is audited is what can run in the judge, which imports the file and calls ``get_kernel``:

* everything at import time: top-level statements, decorators, default values, annotations, class
  bodies;
* the bodies of functions that judged code may reach.

Code under ``if __name__ == "__main__":`` never runs in the judge and is skipped, and so are the bodies
of top-level functions (and the methods of plain classes) that only that block reaches; see
:func:`.plan.make_plan`. Contestants keep their local test drivers there, with imports such as ``os`` or ``time``.

Every syntax that reads or names an attribute goes through one decision, :func:`.reads.read_finding`: ``x.attr``
(any context), the segments of ``import a.b.c`` and the names of ``from m import name``, a class pattern's
keyword attributes (``case C(attr=p)``, nested at any depth, with the subject the audit knows), value
patterns and a class pattern's class (``case a.b:``, ``case a.B():``, which are ``ast.Attribute`` nodes),
and string constants that spell attribute names (``'gi_frame'``, ``'a.f_globals'``, ``'{0.gi_frame}'``),
which getattr-like helpers turn into reads. A positional sub-pattern reads the attributes named by the
class's ``__match_args__`` at run time: it is refused except for the builtins that match themselves
(``case int(n):``).

The audit is a fast first line of defence with precise messages, not the security boundary: values
handed around at run time (containers, arguments, strings built at run time) are not followed. The wall
is the operating system's (``grader.judging.sandbox``: the child's own user id, namespaces and limits);
``grader.judging.audithook`` in the child is a detector beside it, which code that reached the builtins can switch
off.

The policy lives in ``grader.judging.audit_policy`` (:data:`RULES`, :data:`ALLOWED_MODULES`,
:data:`BANNED_NAMES`, :data:`DENIED_ROUTES`, :data:`DENIED_ATTRIBUTES`, ...); this package only applies
it, in stages (``kdt-grade audit FILE`` is ``grader.cli.audit``):

1. ``plan``: what the judge may run (main blocks skipped, and what only they reach);
2. ``walk`` over the judged nodes with the local names of their scopes (``scopes``);
3. ``bindings``: which names are imported values, aliases followed;
4. the rules, one mixin a concern over ``checker.Checker``, assembled here as ``_Auditor``: ``names``
   (imports, builtins, dunder names), ``attributes`` (reads, stores, modules as values), ``calls``
   (fixed-form helpers) and ``patterns`` (``match``); every attribute read is decided in ``reads``.

This module is the driver: :func:`audit_source` and :func:`audit_file`, the refusals of the whole file
(encoding, syntax, size) and the :class:`AuditReport` of ``report``.
"""
from __future__ import annotations

import ast
import functools
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from ..audit_policy import (ALLOWED_MODULES, BANNED_NAMES, DENIED_ATTRIBUTES, DENIED_ROUTES, ENTRY_POINTS,
                            INTROSPECTION_ATTRIBUTES, MAX_AST_NODES, MAX_QUOTED_CHARS, MAX_VIOLATIONS, RULES,
                            SELF_MATCHING_CLASSES)
from ..pyparse import parse, source_encoding
from .attributes import AttributeChecks
from .bindings import Bindings
from .calls import CallChecks
from .names import NameChecks
from .patterns import PatternChecks
from .plan import make_plan
from .report import AuditReport, Violation
from .scopes import bound_anywhere
from .walk import walk

__all__ = [
    "ALLOWED_MODULES", "BANNED_NAMES", "DENIED_ATTRIBUTES", "DENIED_ROUTES", "ENTRY_POINTS", "INTROSPECTION_ATTRIBUTES",
    "RULES", "SELF_MATCHING_CLASSES", "AuditReport", "Violation", "audit_file", "audit_source",
]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class _Auditor(NameChecks, AttributeChecks, CallChecks, PatternChecks):
    """Every rule on judged nodes: the checks of each concern, dispatched by node type."""

    _CHECKS: ClassVar[dict[type[ast.AST], Callable[..., None]]] = {
        ast.Import: NameChecks._check_import, ast.ImportFrom: NameChecks._check_import_from,
        ast.Name: NameChecks._check_name,
        ast.Attribute: AttributeChecks._check_attribute, ast.Subscript: AttributeChecks._check_subscript,
        ast.Constant: AttributeChecks._check_constant,
        ast.Call: CallChecks._check_call,
        ast.Match: PatternChecks._check_match,
    }


def audit_source(source: str, filename: str = "<submission>") -> AuditReport:
    """Audit a submission's source text statically; never imports or runs it.

    A file that does not parse yields a single ``syntax`` violation instead of an exception.
    Returns an :class:`AuditReport`; raises nothing for any input string.
    """
    source = source.removeprefix("\ufeff")  # a UTF-8 BOM is legal in a file, not in a str to parse
    lines = _LINE_BREAK.split(source)
    encoding = _declared_encoding(source)
    if encoding != "utf-8":  # the import would read other code than this text
        return AuditReport(filename, [Violation("encoding", 1, 1, lines[0].strip(), f"the file declares the "
                                                f"source encoding {encoding}; only UTF-8 is audited: remove "
                                                "the coding line")])
    try:
        tree = parse(source, filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        return AuditReport(filename, [_syntax_violation(err, source, lines)])
    if _too_large(tree):
        return AuditReport(filename, [Violation("size", 1, 1, lines[0].strip()[:MAX_QUOTED_CHARS], (
            f"the file has more than {MAX_AST_NODES:,} syntax nodes, more than the audit reads (the optimized "
            "example has 3,869): generate less code, e.g. with loops instead of unrolled statements"))])
    plan = make_plan(tree)
    visits = list(walk(tree, plan))
    class_level = frozenset(stmt for node, _, _ in visits if isinstance(node, ast.ClassDef) for stmt in node.body)
    nodes = [node for node, _, _ in visits]
    auditor = _Auditor(lines, Bindings.collect(nodes), class_level, functools.cache(lambda: bound_anywhere(nodes)))
    auditor.check_top_level(plan.statements)
    auditor.check_untraceable()
    for node, parent, exempt in visits:
        if auditor.full():
            break
        auditor.check(node, parent, exempt)
    found = auditor.violations()
    return AuditReport(filename, found[:MAX_VIOLATIONS], plan.skipped, truncated=auditor.full())


def _too_large(tree: ast.AST) -> bool:
    """Whether the tree has more than ``MAX_AST_NODES`` nodes (counting stops there)."""
    return next(itertools.islice(ast.walk(tree), MAX_AST_NODES, None), None) is not None


def audit_file(path: str | Path) -> AuditReport:
    """Read ``path`` as UTF-8 (a BOM allowed) and audit it with :func:`audit_source`.

    Raises ``OSError`` when the file cannot be read and ``UnicodeDecodeError`` when it is not UTF-8.
    """
    path = Path(path)
    return audit_source(path.read_text(encoding="utf-8-sig"), filename=str(path))


def _declared_encoding(source: str) -> str:
    """``pyparse.source_encoding``, with an unknown encoding named as such."""
    try:
        return source_encoding(source)
    except SyntaxError as err:
        return f"that Python cannot use ({err.msg})"


def _syntax_violation(err: Exception, source: str, lines: list[str]) -> Violation:
    """Rule ``syntax`` at the parser's position (for a NUL byte: its line)."""
    line, col = getattr(err, "lineno", None), getattr(err, "offset", None)
    if line is None and "\x00" in source:
        before = source[:source.index("\x00")]
        line, col = len(_LINE_BREAK.split(before)), len(_LINE_BREAK.split(before)[-1]) + 1
    if isinstance(err, (RecursionError, MemoryError)):
        message = "the file is nested too deeply to parse"
    else:
        message = getattr(err, "msg", None) or str(err)
    line = line or 1
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return Violation("syntax", line, col or 1, text, f"syntax error: {message}")
