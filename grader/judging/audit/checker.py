"""The auditor's core (:class:`Checker`): the state the rules share, the dispatch of each judged node to
the check of its type, the rules that look at the whole file (``top-level``, tangled aliases) and the
one way a violation is recorded (position, quoted line, no duplicates).

The per-node rules are mixins over it, one module a concern: ``names`` (imports and bare names),
``attributes`` (attribute reads, stores, and modules used as values), ``calls`` and ``patterns``
(``match``). ``grader.judging.audit`` assembles them into the auditor and fills :attr:`Checker._CHECKS`.
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import ClassVar

from ..audit_policy import MAX_QUOTED_CHARS, MAX_VIOLATIONS, TOP_LEVEL_STATEMENTS
from .bindings import Bindings
from .report import Violation
from .scopes import is_string_statement

_STATEMENT_NAMES: dict[type[ast.stmt], str] = {
    ast.Expr: "expression statement", ast.For: "`for` loop", ast.AsyncFor: "`async for` loop",
    ast.While: "`while` loop", ast.If: "`if` statement", ast.With: "`with` block",
    ast.AsyncWith: "`async with` block", ast.Try: "`try` block", ast.TryStar: "`try` block",
    ast.AugAssign: "augmented assignment", ast.Delete: "`del` statement", ast.Match: "`match` block",
    ast.Raise: "`raise` statement", ast.Assert: "`assert` statement", ast.Pass: "`pass` statement",
    ast.Global: "`global` statement",
}


class Checker:
    """Applies the rules to judged nodes and collects violations with their source positions.

    ``lines`` are the source lines (to locate and quote); ``bindings`` what names are imported values;
    ``class_level`` the statements of class bodies (their names become attributes); ``rebound`` gives, on
    demand, the names the file binds anywhere (such a name may not be the builtin).
    """

    #: node type -> the unbound check of that type, ``check(self, node, parent, exempt)``
    _CHECKS: ClassVar[dict[type[ast.AST], Callable[..., None]]] = {}

    def __init__(self, lines: list[str], bindings: Bindings, class_level: frozenset[ast.stmt],
                 rebound: Callable[[], frozenset[str]]) -> None:
        self._lines = lines
        self._bindings = bindings
        self._class_level = class_level  # class-body statements: their names become attributes
        self._rebound = rebound  # names the file binds somewhere (they may not be the builtins), on demand
        self._found: dict[tuple, Violation] = {}

    def violations(self) -> list[Violation]:
        """The violations found so far, in source order, without duplicates."""
        return sorted(self._found.values(), key=lambda v: (v.line, v.col, v.rule, v.message))

    def full(self) -> bool:
        """Whether ``MAX_VIOLATIONS`` have been found (the audit stops checking)."""
        return len(self._found) >= MAX_VIOLATIONS

    def check(self, node: ast.AST, parent: ast.AST | None, exempt: frozenset[str]) -> None:
        """Run the check registered for the node's type, if any."""
        check = self._CHECKS.get(type(node))
        if check:
            check(self, node, parent, exempt)

    def check_top_level(self, statements: Iterable[ast.stmt]) -> None:
        """Rule ``top-level``: module-level code must not do anything when imported."""
        for stmt in statements:
            if not isinstance(stmt, TOP_LEVEL_STATEMENTS) and not is_string_statement(stmt):
                what = _STATEMENT_NAMES.get(type(stmt), f"`{type(stmt).__name__}` statement")
                self._report("top-level", stmt, f"{what} at top level runs when the judge imports the file; "
                             "only imports, definitions, assignments and docstrings may be there "
                             "(local test code goes under `if __name__ == \"__main__\":`)")

    def check_untraceable(self) -> None:
        """Rule ``module-alias`` for alias chains too tangled to follow (``x = x.attr``)."""
        for node in self._bindings.untraceable:
            self._report("module-alias", node, "this chain of module aliases is too tangled for the audit "
                         "to follow; name module attributes directly")

    # -- reporting -------------------------------------------------------------------------

    def _report(self, rule: str, node: ast.AST, message: str) -> None:
        """Record a violation of ``rule`` at ``node`` (once per rule, position and message)."""
        line, col = _position(node, self._lines)
        text = self._lines[line - 1].strip() if 0 < line <= len(self._lines) else ""
        if len(text) > MAX_QUOTED_CHARS:
            text = text[:MAX_QUOTED_CHARS] + " ..."
        violation = Violation(rule, line, col, text, message)
        self._found.setdefault((rule, line, col, message), violation)


def excerpt(node: ast.AST, limit: int = 60) -> str:
    """The code of a node, shortened for a message."""
    code = ast.unparse(node)
    return code if len(code) <= limit else code[:limit - 3] + "..."


def _position(node: ast.AST, lines: list[str]) -> tuple[int, int]:
    """1-based line and character column; an attribute is located at its name (``x.[attr]``)."""
    line, offset = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
    if isinstance(node, ast.Attribute) and node.end_col_offset is not None:
        line, offset = node.end_lineno, max(0, node.end_col_offset - len(node.attr.encode()))
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return line, len(text.encode()[:offset].decode(errors="ignore")) + 1
