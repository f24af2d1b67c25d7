"""The walk over judged code: every node the judge may run, with its parent and the names local to the
scopes around it (what :meth:`Checker.check <.checker.Checker.check>` receives), in source order and
without recursion (a hostile file may nest deeper than Python's stack)."""
from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from .plan import Plan
from .scopes import (COMPREHENSIONS, FUNCTIONS, comprehension_targets, defaults, function_annotations, local_names,
                     parameters, string_annotations)


def walk(tree: ast.Module, plan: Plan) -> Iterator[tuple[ast.AST, ast.AST | None, frozenset[str]]]:
    """Yield ``(node, parent, exempt)`` for every judged node, in source order, without recursion.

    ``exempt`` holds the names that are local to an enclosing function, lambda or comprehension
    there: such a name can never be the builtin of the same name. Module and class bindings do not
    exempt: they are dynamic (``exec = exec`` at top level still holds the builtin).
    """
    todo: list[tuple[ast.AST, ast.AST | None, frozenset[str]]] = [(tree, None, frozenset())]
    while todo:
        node, parent, exempt = todo.pop()
        yield node, parent, exempt
        todo += [(child, node, scope) for child, scope in reversed(_children(node, exempt, plan))]


def _children(node: ast.AST, exempt: frozenset[str], plan: Plan) -> list[tuple[ast.AST, frozenset[str]]]:
    """The judged children of ``node`` with the exempt names in force where each one runs."""
    if isinstance(node, ast.Module):
        return _paired(plan.statements, exempt)
    if isinstance(node, FUNCTIONS):
        outer = [*node.decorator_list, *defaults(node.args), *function_annotations(node)]
        inner = [] if node in plan.skipped_bodies else node.body
        return _paired(outer, exempt) + _paired(inner, exempt | local_names(node))
    if isinstance(node, ast.Lambda):
        return _paired(defaults(node.args), exempt) + _paired([node.body], exempt | parameters(node.args))
    if isinstance(node, COMPREHENSIONS):
        first, *rest = node.generators  # the first iterable is evaluated in the enclosing scope
        inner = [first.target, *first.ifs, *(part for g in rest for part in (g.target, g.iter, *g.ifs)),
                 *([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])]
        return [(first.iter, exempt)] + _paired(inner, exempt | comprehension_targets(node))
    extra = string_annotations(node.annotation) if isinstance(node, ast.AnnAssign) else []
    return _paired([*ast.iter_child_nodes(node), *extra], exempt)


def _paired(nodes: Iterable[ast.AST], exempt: frozenset[str]) -> list[tuple[ast.AST, frozenset[str]]]:
    """Each node with the same exempt names."""
    return [(node, exempt) for node in nodes]
