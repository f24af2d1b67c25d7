"""Which names each scope binds, and the pieces of a function that run where: what the walk needs to
tell a local name from the builtin of the same name (``exec`` as a parameter is not the builtin), and
what the plan needs to tell a top-level name from a rebound one.

Also the string annotations, which ``typing.get_type_hints`` evaluates: they are parsed here and audited
like code.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable

from ..pyparse import parse

#: Node kinds: a function, a definition (function or class), a comprehension (its own scope).
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
DEFINITIONS = (*FUNCTIONS, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def defaults(args: ast.arguments) -> list[ast.expr]:
    """The default values of a function's or lambda's parameters (they run where it is defined)."""
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def _all_args(args: ast.arguments) -> list[ast.arg]:
    """Every parameter, in order: positional-only, plain, ``*args``, keyword-only, ``**kwargs``."""
    return [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs,
            *([args.kwarg] if args.kwarg else [])]


def parameters(args: ast.arguments) -> frozenset[str]:
    """The parameter names, local to the function or lambda."""
    return frozenset(a.arg for a in _all_args(args))


def function_annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """A function's annotations, plus the expressions inside string annotations."""
    found = [a.annotation for a in _all_args(fn.args) if a.annotation] + ([fn.returns] if fn.returns else [])
    return found + [inner for expr in found for inner in string_annotations(expr)]


def string_annotations(annotation: ast.expr | None) -> list[ast.expr]:
    """The expressions written as strings inside an annotation: ``typing.get_type_hints`` and its
    many callers evaluate them, so they are audited like code (located at the string)."""
    found: list[ast.expr] = []
    todo = [annotation] if annotation is not None else []
    while todo:
        for sub in ast.walk(todo.pop()):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                try:
                    parsed = parse(sub.value.strip(), mode="eval").body
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue  # typing would fail on it too
                for inner in ast.walk(parsed):
                    ast.copy_location(inner, sub)
                found.append(parsed)
                todo.append(parsed)
    return found


def local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Names local to a function: parameters and names bound in its own body, minus ``global`` ones."""
    names, declared_global = set(parameters(fn.args)), set()
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, DEFINITIONS):
            names.add(node.name)  # a nested scope: its own names stay inside it
            continue
        if isinstance(node, (ast.Lambda, *COMPREHENSIONS)):
            continue
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        names.update(_bound_by(node))
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(names - declared_global)


def comprehension_targets(node: ast.expr) -> frozenset[str]:
    """The names a comprehension's ``for`` targets bind, local to the comprehension."""
    return frozenset(sub.id for g in node.generators for sub in ast.walk(g.target) if isinstance(sub, ast.Name))


def bound_names(statements: Iterable[ast.stmt]) -> frozenset[str]:
    """Names bound anywhere at module level (not inside functions or classes)."""
    names: set[str] = set()
    todo: list[ast.AST] = list(statements)
    while todo:
        node = todo.pop()
        if isinstance(node, DEFINITIONS):
            names.add(node.name)
            continue
        names.update(_bound_by(node))
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def bound_anywhere(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Names bound by any of ``nodes`` in any scope: definitions, parameters and :func:`_bound_by`."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, DEFINITIONS):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        names.update(_bound_by(node))
    return frozenset(names)


def _bound_by(node: ast.AST) -> list[str]:
    """The names one node binds in its own scope."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def is_string_statement(stmt: ast.stmt) -> bool:
    """A bare string literal (a docstring): evaluates nothing."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)
