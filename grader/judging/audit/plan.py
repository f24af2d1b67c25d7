"""What the judge may run (:func:`make_plan`): the top-level statements outside the
``if __name__ == "__main__":`` blocks, and the bodies of the definitions that only those blocks reach,
which the audit skips (a contestant's local test driver lives there, with imports such as ``os``).
"""
from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..audit_policy import ENTRY_POINTS, PASSIVE_DECORATORS
from .bindings import Bindings
from .reads import canonical_path
from .scopes import DEFINITIONS, FUNCTIONS, bound_names, is_string_statement, string_annotations


@dataclass(frozen=True)
class Plan:
    """The judged top-level statements and the function bodies the judge never reaches."""

    statements: tuple[ast.stmt, ...]
    skipped_bodies: frozenset[ast.AST]
    skipped: tuple[str, ...]


def make_plan(tree: ast.Module) -> Plan:
    """Decide what the judge may run.

    A top-level function or class is skipped when the main block reaches it (transitively, through
    the names its body uses) and nothing else does. Judged code is: import-time code, the entry
    points, every definition the main block does not reach (dead code included: something unseen
    might still call it) and every definition whose creation may call it (see :func:`_skippable`).
    Only bodies are skipped; a skipped definition's decorators, defaults and annotations run at
    import time and stay audited.
    """
    statements, guarded = _split_main_blocks(tree.body)
    units: dict[str, list[ast.stmt]] = defaultdict(list)
    for stmt in statements:
        if isinstance(stmt, DEFINITIONS):
            units[stmt.name].append(stmt)
    deferred = {name: [fn for node in nodes for fn in _deferred_functions(node)] for name, nodes in units.items()}
    edges = {name: _names_in(stmt for fn in fns for stmt in fn.body) for name, fns in deferred.items()}
    from_main = _closure(_names_in(guarded), edges)
    roots = _roots(statements, units, deferred, from_main)
    skipped = tuple(sorted(set(units) - _closure(roots, edges)))
    bodies = frozenset(fn for name in skipped for fn in deferred[name])
    return Plan(tuple(statements), bodies, skipped)


def _roots(statements: list[ast.stmt], units: dict[str, list[ast.stmt]],
           deferred: dict[str, list[ast.AST]], from_main: set[str]) -> set[str]:
    """Names judged code uses directly: import-time names, entry points, definitions the main block
    does not reach, and definitions that may run while being created."""
    all_deferred = frozenset(fn for fns in deferred.values() for fn in fns)
    imported = Bindings.collect(s for s in statements if isinstance(s, (ast.Import, ast.ImportFrom)))
    rebound = bound_names(statements)
    unskippable = {name for name, nodes in units.items()
                   if name not in from_main or not all(_skippable(n, imported, rebound) for n in nodes)}
    return _names(_outside_bodies(statements, all_deferred)) | ENTRY_POINTS | unskippable


def _split_main_blocks(body: list[ast.stmt]) -> tuple[list[ast.stmt], list[ast.AST]]:
    """Judged top-level statements (a main block's ``else`` included) and the main blocks' tests and
    bodies."""
    statements: list[ast.stmt] = []
    guarded: list[ast.AST] = []
    for stmt in body:
        if _is_main_guard(stmt):
            guarded += [stmt.test, *stmt.body]
            statements += stmt.orelse
        else:
            statements.append(stmt)
    return statements, guarded


def _is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if not (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare)):
        return False
    test = stmt.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    return {_guard_operand(test.left), _guard_operand(test.comparators[0])} == {"name", "main"}


def _guard_operand(expr: ast.expr) -> str | None:
    """``"name"`` for ``__name__``, ``"main"`` for the string ``"__main__"``, else None."""
    if isinstance(expr, ast.Name) and expr.id == "__name__":
        return "name"
    return "main" if isinstance(expr, ast.Constant) and expr.value == "__main__" else None


def _deferred_functions(node: ast.stmt) -> list[ast.AST]:
    """The functions whose bodies run only when called: a function itself, or a class's methods."""
    if isinstance(node, ast.ClassDef):
        return [stmt for stmt in node.body if isinstance(stmt, FUNCTIONS)]
    return [node]


def _skippable(node: ast.stmt, imported: Bindings, rebound: frozenset[str]) -> bool:
    """True when creating the definition cannot call its body: only passive decorators and, for a
    class, no bases or metaclass (``__init_subclass__``) and a body of methods and literal
    attributes (no descriptor's ``__set_name__``)."""
    if not all(_is_passive(d, imported, rebound) for d in node.decorator_list):
        return False
    if isinstance(node, FUNCTIONS):
        return True
    return not node.bases and not node.keywords and all(
        _is_inert_class_statement(stmt, imported, rebound) for stmt in node.body)


def _is_inert_class_statement(stmt: ast.stmt, imported: Bindings, rebound: frozenset[str]) -> bool:
    """A class-body statement that cannot call a method: a passive method, ``pass``, a string or a
    literal attribute."""
    if isinstance(stmt, FUNCTIONS):
        return all(_is_passive(d, imported, rebound) for d in stmt.decorator_list)
    if isinstance(stmt, ast.Pass) or is_string_statement(stmt):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return all(isinstance(t, ast.Name) for t in targets) and (
            stmt.value is None or isinstance(stmt.value, ast.Constant))
    return False


def _is_passive(decorator: ast.expr, imported: Bindings, rebound: frozenset[str]) -> bool:
    """Whether the decorator (called or not) resolves to one of :data:`PASSIVE_DECORATORS`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name) and target.id not in rebound:
        return target.id in PASSIVE_DECORATORS
    return any(canonical_path(b.path) in PASSIVE_DECORATORS for b in imported.resolve(target))


def _closure(start: Iterable[str], edges: dict[str, set[str]]) -> set[str]:
    """Every name reachable from ``start`` along ``edges``."""
    seen, todo = set(), list(start)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(edges.get(name, ()))
    return seen


def _names_in(nodes: Iterable[ast.AST]) -> set[str]:
    """Every identifier used as a name under ``nodes`` (see :func:`_names`)."""
    return _names(sub for node in nodes for sub in ast.walk(node))


def _names(nodes: Iterable[ast.AST]) -> set[str]:
    """Identifiers used as a ``Name`` (any context) among ``nodes`` themselves, plus those inside
    their string annotations, which typing may evaluate."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name):
            names.add(node.id)
        annotation = getattr(node, "returns" if isinstance(node, FUNCTIONS) else "annotation", None)
        if isinstance(annotation, ast.expr):
            names |= {sub.id for expr in string_annotations(annotation)
                      for sub in ast.walk(expr) if isinstance(sub, ast.Name)}
    return names


def _outside_bodies(nodes: Iterable[ast.AST], deferred: frozenset[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``nodes`` except the bodies of the ``deferred`` functions."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        yield node
        if node in deferred:
            todo += [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
        else:
            todo.extend(ast.iter_child_nodes(node))
