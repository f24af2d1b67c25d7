"""What names refer to imported values (:class:`Bindings`): the names imports bind at any judged scope,
and the plain aliases of them (``t = torch``, ``case object(run=r)`` on a subject the audit can name),
followed to their dotted paths (``t.nn`` is ``torch.nn``). The rules ask it what a receiver may be.
"""
from __future__ import annotations

import ast
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..audit_policy import MAX_ALIAS_BINDINGS, MAX_ALIAS_DEPTH, MAX_ALIAS_STEPS, SELF_MATCHING_CLASSES
from .reads import canonical_path


@dataclass(frozen=True)
class Binding:
    """A name's imported value: its dotted path and whether it certainly is a module."""

    path: str
    is_module: bool


class Bindings:
    """Names bound by imports at any judged scope, plus plain aliases of them (``t = torch``).

    Flow-insensitive on purpose: a name imported anywhere counts as imported everywhere, which can
    only add findings. Alias chains are followed with a worklist; a chain that keeps growing (``x =
    x.attr``) or fans out beyond :data:`MAX_ALIAS_BINDINGS` / :data:`MAX_ALIAS_DEPTH` is not followed
    further and its assignment is listed in ``untraceable`` (reported as ``module-alias``).
    """

    def __init__(self, table: dict[str, set[Binding]]) -> None:
        self._table = table
        self.untraceable: list[ast.AST] = []

    @classmethod
    def collect(cls, nodes: Iterable[ast.AST]) -> Bindings:
        """Bindings from the imports among ``nodes``, then their aliases until nothing changes."""
        table: dict[str, set[Binding]] = defaultdict(set)
        aliases: list[tuple[ast.AST, list[str], ast.expr]] = []
        for node in nodes:
            for name, binding in _import_bindings(node):
                table[name].add(binding)
            aliases += _aliases(node)
        bindings = cls(table)
        bindings._follow(aliases)
        return bindings

    def _follow(self, aliases: list[tuple[ast.AST, list[str], ast.expr]]) -> None:
        """Propagate bindings along alias assignments; re-visit an alias only when its source grows."""
        readers: dict[str, list[int]] = defaultdict(list)
        for index, (_, _, value) in enumerate(aliases):
            readers[_root_name(value)].append(index)
        todo, stuck = deque(range(len(aliases))), set()
        queued = set(todo)  # an alias waits in the queue at most once
        steps = 0
        while todo:
            steps += 1
            if steps > MAX_ALIAS_STEPS:  # too much to follow: what is left is not followed
                self.untraceable += list(dict.fromkeys(aliases[i][0] for i in todo if aliases[i][0] not in stuck))
                return
            index = todo.popleft()
            queued.discard(index)
            node, targets, value = aliases[index]
            found = self.resolve(value)
            for target in targets:
                new = found - self._table[target]
                if not new or node in stuck:
                    continue
                if (len(self._table[target]) + len(new) > MAX_ALIAS_BINDINGS
                        or any(canonical_path(b.path).count(".") >= MAX_ALIAS_DEPTH for b in new)):
                    stuck.add(node)
                    self.untraceable.append(node)
                    continue
                self._table[target] |= new
                for reader in readers[target]:
                    if reader not in queued:
                        queued.add(reader)
                        todo.append(reader)

    def resolve(self, expr: ast.AST) -> frozenset[Binding]:
        """What a ``Name`` or attribute chain may refer to among imported values (empty if none)."""
        if isinstance(expr, ast.Name):
            return frozenset(self._table.get(expr.id, ()))
        if isinstance(expr, ast.Attribute):
            return frozenset(Binding(f"{b.path}.{expr.attr}", False) for b in self.resolve(expr.value))
        if isinstance(expr, ast.NamedExpr):  # `(k := kdt).x` is `kdt.x`
            return self.resolve(expr.value)
        return frozenset()


def _root_name(expr: ast.expr) -> str:
    """The name an attribute chain starts from (``a`` for ``a.b.c``)."""
    while isinstance(expr, ast.Attribute | ast.NamedExpr):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else ""


def _import_bindings(node: ast.AST) -> list[tuple[str, Binding]]:
    """``import a.b`` binds ``a``; ``import a.b as c`` binds ``c`` to ``a.b``; ``from a import b``
    binds ``b`` to ``a.b`` (maybe not a module)."""
    if isinstance(node, ast.Import):
        return [(a.asname, Binding(a.name, True)) if a.asname else
                (a.name.split(".")[0], Binding(a.name.split(".")[0], True)) for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
        return [(a.asname or a.name, Binding(f"{node.module}.{a.name}", False))
                for a in node.names if a.name != "*"]
    return []


def _aliases(node: ast.AST) -> list[tuple[ast.AST, list[str], ast.expr]]:
    """``(where, names, chain)`` for every alias one node makes: an assignment (see
    :func:`alias_assignment`) or a match's captures of a subject the audit can name (``match kdt.sim:
    case object(run=r):`` binds ``r`` to ``kdt.sim.run``)."""
    if isinstance(node, ast.Match):
        return [(pattern, [pattern.name], subject) for case in node.cases
                for pattern, subject in pattern_subjects(case.pattern, node.subject)
                if isinstance(pattern, ast.MatchAs) and pattern.name and subject is not None]
    alias = alias_assignment(node)
    return [(node, *alias)] if alias else []


def pattern_subjects(pattern: ast.pattern, subject: ast.expr | None) -> Iterator[tuple[ast.pattern, ast.expr | None]]:
    """Every pattern under ``pattern`` (itself included) with its subject: an expression when the audit
    can name it (``case C(a=C(b=p))`` matches ``p`` against ``subject.a.b``), else None (an item of a
    sequence or mapping, or an attribute ``__match_args__`` names)."""
    todo = [(pattern, subject)]
    while todo:
        node, of = todo.pop()
        yield node, of
        if isinstance(node, ast.MatchAs) and node.pattern:
            todo.append((node.pattern, of))
        elif isinstance(node, ast.MatchOr):
            todo += [(sub, of) for sub in node.patterns]
        elif isinstance(node, ast.MatchClass):
            itself = isinstance(node.cls, ast.Name) and node.cls.id in SELF_MATCHING_CLASSES
            todo += [(sub, of if itself else None) for sub in node.patterns]
            todo += [(sub, _attribute_of(of, name)) for name, sub in zip(node.kwd_attrs, node.kwd_patterns)]
        elif isinstance(node, ast.MatchSequence | ast.MatchMapping):
            todo += [(sub, None) for sub in node.patterns]


def _attribute_of(subject: ast.expr | None, name: str) -> ast.expr | None:
    """The expression ``subject.name`` (unlocated; for :meth:`Bindings.resolve`), or None."""
    return None if subject is None else ast.Attribute(value=subject, attr=name, ctx=ast.Load())


def alias_assignment(node: ast.AST) -> tuple[list[str], ast.expr] | None:
    """``names = chain`` (plain, annotated or walrus) where chain is a name or attribute chain."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        targets = [node.target]
    else:
        return None
    if isinstance(node.value, (ast.Name, ast.Attribute)) and all(isinstance(t, ast.Name) for t in targets):
        return [t.id for t in targets], node.value
    return None
