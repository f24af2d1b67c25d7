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
:func:`_plan`. Contestants keep their local test drivers there, with imports such as ``os`` or ``time``.

Every syntax that reads or names an attribute goes through one decision, :func:`_read_finding`: ``x.attr``
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
:data:`BANNED_NAMES`, :data:`DENIED_ROUTES`, :data:`DENIED_ATTRIBUTES`, ...); this module only applies
it. ``kdt-grade audit FILE`` is ``grader.cli.audit``.
"""
from __future__ import annotations

import _string
import ast
import functools
import itertools
import importlib
import re
import string
import types
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..audit_policy import (ALLOWED_DUNDER_STORES, ALLOWED_MODULES, ATTRIBUTE_STRING, BANNED_NAMES, DENIED_ATTRIBUTES,
                           DENIED_ROUTES, ENTRY_POINTS, FIXED_FORM_HELPERS, INTROSPECTION_ATTRIBUTES,
                           MAX_ALIAS_STEPS, MAX_AST_NODES, MAX_QUOTED_CHARS, MAX_VIOLATIONS,
                           MAX_ALIAS_BINDINGS, MAX_ALIAS_DEPTH, PASSIVE_DECORATORS, REEXPORTED_PACKAGES, RULES,
                           SELF_MATCHING_CLASSES, STDLIB_MODULES, STDLIB_SUBMODULES, TOP_LEVEL_STATEMENTS)
from ..pyparse import parse, source_encoding

__all__ = [
    "ALLOWED_MODULES", "BANNED_NAMES", "DENIED_ATTRIBUTES", "DENIED_ROUTES", "ENTRY_POINTS", "INTROSPECTION_ATTRIBUTES",
    "RULES", "SELF_MATCHING_CLASSES", "AuditReport", "Violation", "audit_file", "audit_source",
]

_STATEMENT_NAMES: dict[type[ast.stmt], str] = {
    ast.Expr: "expression statement", ast.For: "`for` loop", ast.AsyncFor: "`async for` loop",
    ast.While: "`while` loop", ast.If: "`if` statement", ast.With: "`with` block",
    ast.AsyncWith: "`async with` block", ast.Try: "`try` block", ast.TryStar: "`try` block",
    ast.AugAssign: "augmented assignment", ast.Delete: "`del` statement", ast.Match: "`match` block",
    ast.Raise: "`raise` statement", ast.Assert: "`assert` statement", ast.Pass: "`pass` statement",
    ast.Global: "`global` statement",
}

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


# ---------------------------------------------------------------------------------------------
# The result
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` is a key of :data:`RULES`; ``line``/``col`` are 1-based (col in
    characters); ``text`` is the stripped source line; ``message`` says what to change."""

    rule: str
    line: int
    col: int
    text: str
    message: str


@dataclass(frozen=True)
class AuditReport:
    """The audit of one file: every violation in source order.

    ``skipped`` names the top-level functions and classes whose bodies were not audited because only
    the ``if __name__ == "__main__":`` block reaches them.
    """

    filename: str
    violations: list[Violation] = field(default_factory=list)
    skipped: tuple[str, ...] = ()
    truncated: bool = False  # the audit stopped at MAX_VIOLATIONS: there may be more

    @property
    def ok(self) -> bool:
        """True when the file broke no rule."""
        return not self.violations

    def to_dict(self) -> dict:
        """Plain data for JSON: filename, ok, violations (list of dicts) and skipped."""
        return {"filename": self.filename, "ok": self.ok, "truncated": self.truncated,
                "violations": [asdict(v) for v in self.violations], "skipped": list(self.skipped)}

    def format(self) -> str:
        """Human text: a summary line, then ``line L, col C: [rule] message`` and the source line
        indented below it, for every violation."""
        if self.ok:
            return f"{self.filename}: no violations"
        head = f"{self.filename}: {len(self.violations)} violation(s)"
        if self.truncated:
            head += f" (the audit stops at the first {MAX_VIOLATIONS}: fix these and run it again)"
        body = (f"line {v.line}, col {v.col}: [{v.rule}] {v.message}\n    {v.text}" for v in self.violations)
        return "\n".join([head, *body])


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------

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
    plan = _plan(tree)
    visits = list(_walk(tree, plan))
    class_level = frozenset(stmt for node, _, _ in visits if isinstance(node, ast.ClassDef) for stmt in node.body)
    nodes = [node for node, _, _ in visits]
    auditor = _Auditor(lines, _Bindings.collect(nodes), class_level, functools.cache(lambda: _bound_anywhere(nodes)))
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


# ---------------------------------------------------------------------------------------------
# Stage 1: what is judged (main blocks and reachability)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Plan:
    """The judged top-level statements and the function bodies the judge never reaches."""

    statements: tuple[ast.stmt, ...]
    skipped_bodies: frozenset[ast.AST]
    skipped: tuple[str, ...]


def _plan(tree: ast.Module) -> _Plan:
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
        if isinstance(stmt, _DEFINITIONS):
            units[stmt.name].append(stmt)
    deferred = {name: [fn for node in nodes for fn in _deferred_functions(node)] for name, nodes in units.items()}
    edges = {name: _names_in(stmt for fn in fns for stmt in fn.body) for name, fns in deferred.items()}
    from_main = _closure(_names_in(guarded), edges)
    roots = _roots(statements, units, deferred, from_main)
    skipped = tuple(sorted(set(units) - _closure(roots, edges)))
    bodies = frozenset(fn for name in skipped for fn in deferred[name])
    return _Plan(tuple(statements), bodies, skipped)


def _roots(statements: list[ast.stmt], units: dict[str, list[ast.stmt]],
           deferred: dict[str, list[ast.AST]], from_main: set[str]) -> set[str]:
    """Names judged code uses directly: import-time names, entry points, definitions the main block
    does not reach, and definitions that may run while being created."""
    all_deferred = frozenset(fn for fns in deferred.values() for fn in fns)
    imported = _Bindings.collect(s for s in statements if isinstance(s, (ast.Import, ast.ImportFrom)))
    rebound = _bound_names(statements)
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
    if isinstance(expr, ast.Name) and expr.id == "__name__":
        return "name"
    return "main" if isinstance(expr, ast.Constant) and expr.value == "__main__" else None


def _deferred_functions(node: ast.stmt) -> list[ast.AST]:
    """The functions whose bodies run only when called: a function itself, or a class's methods."""
    if isinstance(node, ast.ClassDef):
        return [stmt for stmt in node.body if isinstance(stmt, _FUNCTIONS)]
    return [node]


def _skippable(node: ast.stmt, imported: _Bindings, rebound: frozenset[str]) -> bool:
    """True when creating the definition cannot call its body: only passive decorators and, for a
    class, no bases or metaclass (``__init_subclass__``) and a body of methods and literal
    attributes (no descriptor's ``__set_name__``)."""
    if not all(_is_passive(d, imported, rebound) for d in node.decorator_list):
        return False
    if isinstance(node, _FUNCTIONS):
        return True
    return not node.bases and not node.keywords and all(
        _is_inert_class_statement(stmt, imported, rebound) for stmt in node.body)


def _is_inert_class_statement(stmt: ast.stmt, imported: _Bindings, rebound: frozenset[str]) -> bool:
    """A class-body statement that cannot call a method: a passive method, ``pass``, a string or a
    literal attribute."""
    if isinstance(stmt, _FUNCTIONS):
        return all(_is_passive(d, imported, rebound) for d in stmt.decorator_list)
    if isinstance(stmt, ast.Pass) or _is_string_statement(stmt):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return all(isinstance(t, ast.Name) for t in targets) and (
            stmt.value is None or isinstance(stmt.value, ast.Constant))
    return False


def _is_passive(decorator: ast.expr, imported: _Bindings, rebound: frozenset[str]) -> bool:
    """Whether the decorator (called or not) resolves to one of :data:`PASSIVE_DECORATORS`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name) and target.id not in rebound:
        return target.id in PASSIVE_DECORATORS
    return any(_canonical(b.path) in PASSIVE_DECORATORS for b in imported.resolve(target))


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
        annotation = getattr(node, "returns" if isinstance(node, _FUNCTIONS) else "annotation", None)
        if isinstance(annotation, ast.expr):
            names |= {sub.id for expr in _string_annotations(annotation)
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


# ---------------------------------------------------------------------------------------------
# Stage 2: walking the judged code with its scopes
# ---------------------------------------------------------------------------------------------

def _walk(tree: ast.Module, plan: _Plan) -> Iterator[tuple[ast.AST, ast.AST | None, frozenset[str]]]:
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


def _children(node: ast.AST, exempt: frozenset[str], plan: _Plan) -> list[tuple[ast.AST, frozenset[str]]]:
    """The judged children of ``node`` with the exempt names in force where each one runs."""
    if isinstance(node, ast.Module):
        return _paired(plan.statements, exempt)
    if isinstance(node, _FUNCTIONS):
        outer = [*node.decorator_list, *_defaults(node.args), *_annotations(node)]
        inner = [] if node in plan.skipped_bodies else node.body
        return _paired(outer, exempt) + _paired(inner, exempt | _local_names(node))
    if isinstance(node, ast.Lambda):
        return _paired(_defaults(node.args), exempt) + _paired([node.body], exempt | _parameters(node.args))
    if isinstance(node, _COMPREHENSIONS):
        first, *rest = node.generators  # the first iterable is evaluated in the enclosing scope
        inner = [first.target, *first.ifs, *(part for g in rest for part in (g.target, g.iter, *g.ifs)),
                 *([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])]
        return [(first.iter, exempt)] + _paired(inner, exempt | _comprehension_targets(node))
    extra = _string_annotations(node.annotation) if isinstance(node, ast.AnnAssign) else []
    return _paired([*ast.iter_child_nodes(node), *extra], exempt)


def _paired(nodes: Iterable[ast.AST], exempt: frozenset[str]) -> list[tuple[ast.AST, frozenset[str]]]:
    return [(node, exempt) for node in nodes]


def _defaults(args: ast.arguments) -> list[ast.expr]:
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


def _all_args(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs,
            *([args.kwarg] if args.kwarg else [])]


def _parameters(args: ast.arguments) -> frozenset[str]:
    return frozenset(a.arg for a in _all_args(args))


def _annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    """A function's annotations, plus the expressions inside string annotations."""
    found = [a.annotation for a in _all_args(fn.args) if a.annotation] + ([fn.returns] if fn.returns else [])
    return found + [inner for expr in found for inner in _string_annotations(expr)]


def _string_annotations(annotation: ast.expr | None) -> list[ast.expr]:
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


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Names local to a function: parameters and names bound in its own body, minus ``global`` ones."""
    names, declared_global = set(_parameters(fn.args)), set()
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, _DEFINITIONS):
            names.add(node.name)  # a nested scope: its own names stay inside it
            continue
        if isinstance(node, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        if isinstance(node, ast.Global):
            declared_global.update(node.names)
        names.update(_bound_by(node))
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(names - declared_global)


def _comprehension_targets(node: ast.expr) -> frozenset[str]:
    return frozenset(sub.id for g in node.generators for sub in ast.walk(g.target) if isinstance(sub, ast.Name))


def _bound_names(statements: Iterable[ast.stmt]) -> frozenset[str]:
    """Names bound anywhere at module level (not inside functions or classes)."""
    names: set[str] = set()
    todo: list[ast.AST] = list(statements)
    while todo:
        node = todo.pop()
        if isinstance(node, _DEFINITIONS):
            names.add(node.name)
            continue
        names.update(_bound_by(node))
        todo.extend(ast.iter_child_nodes(node))
    return frozenset(names)


def _bound_anywhere(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Names bound by any of ``nodes`` in any scope: definitions, parameters and :func:`_bound_by`."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, _DEFINITIONS):
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


# ---------------------------------------------------------------------------------------------
# Stage 3: what names refer to imported modules
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Binding:
    """A name's imported value: its dotted path and whether it certainly is a module."""

    path: str
    is_module: bool


class _Bindings:
    """Names bound by imports at any judged scope, plus plain aliases of them (``t = torch``).

    Flow-insensitive on purpose: a name imported anywhere counts as imported everywhere, which can
    only add findings. Alias chains are followed with a worklist; a chain that keeps growing (``x =
    x.attr``) or fans out beyond :data:`MAX_ALIAS_BINDINGS` / :data:`MAX_ALIAS_DEPTH` is not followed
    further and its assignment is listed in ``untraceable`` (reported as ``module-alias``).
    """

    def __init__(self, table: dict[str, set[_Binding]]) -> None:
        self._table = table
        self.untraceable: list[ast.AST] = []

    @classmethod
    def collect(cls, nodes: Iterable[ast.AST]) -> _Bindings:
        """Bindings from the imports among ``nodes``, then their aliases until nothing changes."""
        table: dict[str, set[_Binding]] = defaultdict(set)
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
                        or any(_canonical(b.path).count(".") >= MAX_ALIAS_DEPTH for b in new)):
                    stuck.add(node)
                    self.untraceable.append(node)
                    continue
                self._table[target] |= new
                for reader in readers[target]:
                    if reader not in queued:
                        queued.add(reader)
                        todo.append(reader)

    def resolve(self, expr: ast.AST) -> frozenset[_Binding]:
        """What a ``Name`` or attribute chain may refer to among imported values (empty if none)."""
        if isinstance(expr, ast.Name):
            return frozenset(self._table.get(expr.id, ()))
        if isinstance(expr, ast.Attribute):
            return frozenset(_Binding(f"{b.path}.{expr.attr}", False) for b in self.resolve(expr.value))
        if isinstance(expr, ast.NamedExpr):  # `(k := kdt).x` is `kdt.x`
            return self.resolve(expr.value)
        return frozenset()


def _root_name(expr: ast.expr) -> str:
    """The name an attribute chain starts from (``a`` for ``a.b.c``)."""
    while isinstance(expr, ast.Attribute | ast.NamedExpr):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else ""


def _import_bindings(node: ast.AST) -> list[tuple[str, _Binding]]:
    """``import a.b`` binds ``a``; ``import a.b as c`` binds ``c`` to ``a.b``; ``from a import b``
    binds ``b`` to ``a.b`` (maybe not a module)."""
    if isinstance(node, ast.Import):
        return [(a.asname, _Binding(a.name, True)) if a.asname else
                (a.name.split(".")[0], _Binding(a.name.split(".")[0], True)) for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
        return [(a.asname or a.name, _Binding(f"{node.module}.{a.name}", False))
                for a in node.names if a.name != "*"]
    return []


def _aliases(node: ast.AST) -> list[tuple[ast.AST, list[str], ast.expr]]:
    """``(where, names, chain)`` for every alias one node makes: an assignment (see
    :func:`_alias_assignment`) or a match's captures of a subject the audit can name (``match kdt.sim:
    case object(run=r):`` binds ``r`` to ``kdt.sim.run``)."""
    if isinstance(node, ast.Match):
        return [(pattern, [pattern.name], subject) for case in node.cases
                for pattern, subject in _pattern_subjects(case.pattern, node.subject)
                if isinstance(pattern, ast.MatchAs) and pattern.name and subject is not None]
    alias = _alias_assignment(node)
    return [(node, *alias)] if alias else []


def _pattern_subjects(pattern: ast.pattern, subject: ast.expr | None) -> Iterator[tuple[ast.pattern, ast.expr | None]]:
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
    """The expression ``subject.name`` (unlocated; for :meth:`_Bindings.resolve`), or None."""
    return None if subject is None else ast.Attribute(value=subject, attr=name, ctx=ast.Load())


def _attribute_names(text: str) -> list[str]:
    """The attribute names a string spells: all its segments when it is a dotted name
    (:data:`ATTRIBUTE_STRING`), and the attributes in its format fields (``'{0.gi_frame}'``)."""
    names = text.split(".") if ATTRIBUTE_STRING.fullmatch(text) else []
    return names + (_format_attributes(text) if "{" in text else [])


def _format_attributes(text: str, depth: int = 2) -> list[str]:
    """The ``.name`` parts of the replacement fields of a format string, and of the fields nested in
    their format specs (``str.format`` reads them from its arguments; it nests no deeper than ``depth``,
    which also keeps a string of a million braces linear). A string that is no valid format gives none."""
    try:
        fields = [(field, spec) for _, field, spec, _ in string.Formatter().parse(text)]
    except ValueError:
        return []
    names = []
    for field, spec in fields:
        try:  # str.format's own parser of `0.a[1].b`
            names += [key for is_attr, key in _string.formatter_field_name_split(field or "")[1] if is_attr]
        except ValueError:
            pass
        if spec and depth > 1:
            names += _format_attributes(spec, depth - 1)
    return names


def _alias_assignment(node: ast.AST) -> tuple[list[str], ast.expr] | None:
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


def _canonical(path: str) -> str:
    """Follow re-exports: restart the path at its last segment naming an allowed package."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in REEXPORTED_PACKAGES:
            return ".".join([REEXPORTED_PACKAGES[parts[i]], *parts[i + 1:]])
    return path


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


@functools.cache
def _public_names(module_name: str) -> frozenset[str]:
    """A trusted standard-library module's public API: ``__all__`` or its public non-module names."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module)
                 if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)]
    return frozenset(names) | STDLIB_SUBMODULES.get(module_name, frozenset())


def _read_finding(name: str, receivers: Iterable[str] = (), *, super_init: bool = False
                  ) -> tuple[str, str] | None:
    """The one decision whether reading the attribute ``name`` is allowed, for every syntax that reads or
    names one (see the module docstring): ``(rule, detail)`` when it is refused, else None. The detail
    completes a sentence whose subject is the code that reads it.

    ``receivers`` are the dotted paths of the imported values the object read from may be (empty when
    the audit does not know it). Refused on any object: dunder attributes (interpreter internals:
    ``__dict__``, ``__globals__``, ``__subclasses__``; only ``super().__init__``, ``super_init``, is
    allowed), :data:`INTROSPECTION_ATTRIBUTES` (frames and code reach the builtins) and
    :data:`DENIED_ATTRIBUTES`. Refused on an imported value: private names and what
    :func:`_member_finding` refuses.
    """
    if _is_dunder(name) and not (super_init and name == "__init__"):
        return "dunder", (f"reads the dunder attribute `{name}`, which reaches interpreter internals "
                          "(only `super().__init__` is allowed)")
    if name in INTROSPECTION_ATTRIBUTES:
        return "introspection", (f"reads `{name}`, interpreter introspection (frames, generators, "
                                 "tracebacks, code objects), which kernels never need")
    if name in DENIED_ATTRIBUTES:
        return "denied-route", f"uses `.{name}`, which {DENIED_ATTRIBUTES[name]}"
    return next(filter(None, (_member_finding(path, name) for path in sorted(receivers))), None)


@functools.lru_cache(maxsize=4096)  # deep chains and nested patterns ask for the same paths again
def _member_finding(path: str, name: str) -> tuple[str, str] | None:
    """``name`` read from the imported value at ``path``: a private name (``torch._C``), a denied route
    (``torch.load``, also through re-exports) or a name outside a standard-library module's public API."""
    if name.startswith("_") and not _is_dunder(name):
        return "private-attribute", f"uses `{name}`, a private attribute of an imported module"
    canonical = _canonical(f"{path}.{name}")
    for route, why in DENIED_ROUTES.items():
        if canonical == route or canonical.startswith(route + "."):
            return "denied-route", f"reaches `{route}`, which {why}"
    return _stdlib_finding(canonical)


@functools.lru_cache(maxsize=4096)
def _path_finding(path: str) -> tuple[str, str] | None:
    """The first refused read along an imported dotted path (``torch.utils.cpp_extension`` reads
    ``utils`` from ``torch``, then ``cpp_extension`` from ``torch.utils``), else None."""
    parts = path.split(".")
    return next(filter(None, (_read_finding(parts[i], [".".join(parts[:i])]) for i in range(1, len(parts)))),
                None)


def _stdlib_finding(canonical: str) -> tuple[str, str] | None:
    """A name outside the public API of an allowed standard-library module (``enum.bltns``)."""
    for module in STDLIB_MODULES:
        if canonical.startswith(module + "."):
            name = canonical[len(module) + 1:].split(".")[0]
            if name not in _public_names(module):
                return "denied-route", f"uses `{name}`, which is not in the public API of `{module}`"
            return None
    return None


@functools.lru_cache(maxsize=4096)
def _names_module(path: str) -> bool:
    """Whether the imported dotted ``path`` (re-exports followed: ``_canonical``) is a module object: looked
    up attribute by attribute from its top-level package, one of :data:`ALLOWED_MODULES` (the judge's
    own packages, imported here if need be; nothing of the submission runs). A name that is missing,
    private or whose lookup raises is not taken for a module (its read is judged by the other rules)."""
    parts = _canonical(path).split(".")
    if parts[0] not in ALLOWED_MODULES or any(part.startswith("_") for part in parts[1:]):
        return False
    try:
        value = importlib.import_module(parts[0])
        for part in parts[1:]:
            value = getattr(value, part)
    except Exception:  # a name the package does not have (or whose lookup fails) is no module
        return False
    return isinstance(value, types.ModuleType)


def _guards_route(path: str) -> bool:
    """True when a denied route lies below ``path`` (``torch``, ``torch.utils``, ``typing``)."""
    prefix = _canonical(path) + "."
    return any(route.startswith(prefix) for route in DENIED_ROUTES)


# ---------------------------------------------------------------------------------------------
# Stage 4: the rules, one check per node type
# ---------------------------------------------------------------------------------------------

class _Auditor:
    """Applies the rules to judged nodes and collects violations with their source positions."""

    def __init__(self, lines: list[str], bindings: _Bindings, class_level: frozenset[ast.stmt],
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
            if not isinstance(stmt, TOP_LEVEL_STATEMENTS) and not _is_string_statement(stmt):
                what = _STATEMENT_NAMES.get(type(stmt), f"`{type(stmt).__name__}` statement")
                self._report("top-level", stmt, f"{what} at top level runs when the judge imports the file; "
                             "only imports, definitions, assignments and docstrings may be there "
                             "(local test code goes under `if __name__ == \"__main__\":`)")

    def check_untraceable(self) -> None:
        """Rule ``module-alias`` for alias chains too tangled to follow (``x = x.attr``)."""
        for node in self._bindings.untraceable:
            self._report("module-alias", node, "this chain of module aliases is too tangled for the audit "
                         "to follow; name module attributes directly")

    # -- per node type ---------------------------------------------------------------------

    def _check_import(self, node: ast.Import, parent, exempt) -> None:
        for alias in node.names:
            if self._check_module(alias, alias.name):
                self._check_path(alias, alias.name)

    def _check_import_from(self, node: ast.ImportFrom, parent, exempt) -> None:
        if node.level:
            self._report("import", node, "relative import: a submission is a single file")
            return
        if node.module == "__future__" or not self._check_module(node, node.module):
            return
        for alias in node.names:
            if alias.name == "*":
                self._report("import-star", alias, f"`from {node.module} import *` hides which names it "
                             "binds; import the names you use")
            else:  # reads the attribute `alias.name` of the module
                self._check_path(alias, f"{node.module}.{alias.name}")

    def _check_name(self, node: ast.Name, parent, exempt) -> None:
        loads = isinstance(node.ctx, ast.Load)
        if node.id in BANNED_NAMES:
            if loads and node.id not in exempt:
                self._report("banned-name", node, f"`{node.id}` {BANNED_NAMES[node.id]}")
        elif _is_dunder(node.id) and (not isinstance(node.ctx, ast.Store) or node.id not in ALLOWED_DUNDER_STORES):
            self._report("dunder", node, f"the dunder name `{node.id}` reaches interpreter internals")
        if loads:
            self._check_alias(node, parent)
            self._check_called(node, parent)

    def _check_attribute(self, node: ast.Attribute, parent, exempt) -> None:
        self._check_read(node, lambda: f"`{_excerpt(node)}`", node.attr, node.value, super_init=_is_super_init(node))
        if not isinstance(node.ctx, ast.Load):
            self._check_assign(node, node.value, f".{node.attr}")
        else:
            self._check_alias(node, parent)
            self._check_called(node, parent)

    def _check_subscript(self, node: ast.Subscript, parent, exempt) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._check_assign(node, node.value, "[...]")

    def _check_call(self, node: ast.Call, parent, exempt) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and func.id not in exempt and node.args:
            self._check_assign(node, node.args[0], f" via {func.id}()")
        if self._fixed_form_helper(func):
            applied = (isinstance(parent, ast.Call) and parent.func is node) or (
                isinstance(parent, _DEFINITIONS) and node in parent.decorator_list)
            plain = len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
            if not (applied and plain):
                self._report_fixed_form(node, func)

    def _check_match(self, node: ast.Match, parent, exempt) -> None:
        """Class patterns read attributes of their subject (value patterns and a class pattern's class
        are ``ast.Attribute`` nodes, checked as such); captures bind names."""
        for case in node.cases:
            for pattern, subject in _pattern_subjects(case.pattern, node.subject):
                if isinstance(pattern, ast.MatchClass):
                    self._check_class_pattern(pattern, subject)
                self._check_capture(pattern)

    def _check_class_pattern(self, node: ast.MatchClass, subject: ast.expr | None) -> None:
        """``C(attr=p)`` reads ``subject.attr`` (the subject an attribute chain the audit may know);
        ``C(p)`` reads the attribute ``C.__match_args__`` names, which the audit cannot see, unless ``C``
        is a builtin that matches the subject itself (``int(n)``)."""
        for name, sub in zip(node.kwd_attrs, node.kwd_patterns):
            self._check_read(self._keyword_node(name, sub), lambda: f"`{_excerpt(node)}`", name, subject)
        if node.patterns and not self._matches_itself(node.cls):
            self._report("denied-route", node.patterns[0], f"`{_excerpt(node)}`: a positional sub-pattern reads "
                         "the attribute the class's `__match_args__` names, a string the audit cannot check; "
                         "name the attribute instead (`C(x=p)`)")

    def _check_capture(self, node: ast.pattern) -> None:
        """A capture stores a name, under the rule of ``ast.Name`` stores."""
        name = node.rest if isinstance(node, ast.MatchMapping) else getattr(node, "name", None)
        if name and _is_dunder(name) and name not in ALLOWED_DUNDER_STORES:
            self._report("dunder", node, f"the pattern binds the dunder name `{name}`")

    def _check_constant(self, node: ast.Constant, parent, exempt) -> None:
        """A string spelling attribute names (``'gi_frame'``, ``'{0.f_globals}'``) is what getattr-like
        helpers read by (``functools.update_wrapper(assigned=...)``, ``cached_property.attrname``,
        ``__match_args__``, ``str.format``): refused names are refused there too. The pieces of an
        f-string are not names."""
        if not isinstance(node.value, str) or isinstance(parent, ast.JoinedStr):
            return
        for name in dict.fromkeys(_attribute_names(node.value)):
            self._check_read(node, lambda: f"the string {_excerpt(node)} names an attribute for getattr-like "
                             "helpers: it", name, None)

    _CHECKS = {
        ast.Import: _check_import, ast.ImportFrom: _check_import_from, ast.Name: _check_name,
        ast.Attribute: _check_attribute, ast.Subscript: _check_subscript, ast.Call: _check_call,
        ast.Match: _check_match, ast.Constant: _check_constant,
    }

    # -- shared checks ---------------------------------------------------------------------

    def _check_module(self, node: ast.AST, module: str) -> bool:
        """Rule ``import``; returns whether the module is allowed."""
        if module.split(".")[0] in ALLOWED_MODULES:
            return True
        allowed = ", ".join(sorted(ALLOWED_MODULES))
        self._report("import", node, f"import of `{module}`: judged code may import only {allowed} "
                     "(and their submodules)")
        return False

    def _check_path(self, node: ast.AST, path: str) -> None:
        """Rules ``denied-route`` and ``private-attribute`` for an imported dotted path."""
        if finding := _path_finding(path):
            self._report(finding[0], node, f"`{path}` {finding[1]}")

    def _check_read(self, where: ast.AST, code: Callable[[], str], name: str, receiver: ast.expr | None,
                    super_init: bool = False) -> None:
        """Every attribute rule for one read of ``name`` from ``receiver`` (None: an object the audit
        cannot name), decided by :func:`_read_finding`; ``code()`` is the message's subject (made only
        for a violation: unparsing every node of a long chain would be quadratic)."""
        if finding := _read_finding(name, self._receivers(receiver), super_init=super_init):
            self._report(finding[0], where, f"{code()} {finding[1]}")

    def _receivers(self, expr: ast.expr | None) -> list[str]:
        """The imported paths ``expr`` may be; none when one of them is already refused (reported at
        the inner read: ``torch._C.x`` only at ``_C``)."""
        paths = sorted(b.path for b in self._bindings.resolve(expr)) if expr is not None else []
        return [] if any(map(_path_finding, paths)) else paths

    def _keyword_node(self, name: str, pattern: ast.pattern) -> ast.AST:
        """A node located at the keyword of ``name=pattern`` in a class pattern (the AST keeps only
        the sub-pattern's position)."""
        line = self._lines[pattern.lineno - 1].encode() if 0 < pattern.lineno <= len(self._lines) else b""
        start = line.rfind(name.encode(), 0, pattern.col_offset)
        return ast.Name(name, lineno=pattern.lineno, col_offset=start if start >= 0 else pattern.col_offset)

    def _matches_itself(self, cls: ast.expr) -> bool:
        """Whether a class pattern's class is one of the builtins :data:`SELF_MATCHING_CLASSES`."""
        return isinstance(cls, ast.Name) and cls.id in SELF_MATCHING_CLASSES and cls.id not in self._rebound()

    def _check_assign(self, node: ast.AST, target: ast.expr, what: str) -> None:
        """Rule ``module-assign``: ``target`` must not be an imported module (or part of one)."""
        for binding in sorted(self._bindings.resolve(target), key=lambda b: b.path):
            self._report("module-assign", node, f"changes `{binding.path}{what}`, part of an imported "
                         "module; a submission may not modify kdt, torch, numpy or the standard library")
            return

    def _fixed_form_helper(self, expr: ast.expr) -> str | None:
        """The one of :data:`FIXED_FORM_HELPERS` that ``expr`` may be, if any."""
        paths = {_canonical(b.path) for b in self._bindings.resolve(expr)} & FIXED_FORM_HELPERS
        return min(paths) if paths else None

    def _check_called(self, node: ast.expr, parent: ast.AST | None) -> None:
        """A fixed-form helper may only be called (the call itself is checked by ``_check_call``)."""
        if not (isinstance(parent, ast.Call) and parent.func is node) and self._fixed_form_helper(node):
            self._report_fixed_form(node, node)

    def _report_fixed_form(self, node: ast.AST, helper: ast.expr) -> None:
        path = self._fixed_form_helper(helper)
        self._report("denied-route", node, f"`{_excerpt(node)}`: `{path}` reads and writes the attributes its "
                     f"`assigned` and `updated` strings name; only its fixed form `@{path}(f)` (one argument, "
                     "applied at once) is allowed")

    def _check_alias(self, node: ast.expr, parent: ast.AST | None) -> None:
        """Rule ``module-alias``: a module that leads to denied routes, any module bound by ``import``,
        and any module reached as an attribute (``torch.nn``: ``_names_module``) may only be used as
        ``module.attr``, called, subscripted or aliased by ``=`` to a variable (a class attribute would
        carry it on as ``self.name``). Laundered through a container or a call (``[torch.nn][0]``), a
        module is out of the audit's sight, and with it the private and denied names below it
        (``.modules.module.torch._C``)."""
        if not _escapes(node, parent) and parent not in self._class_level:
            return
        for binding in self._bindings.resolve(node):
            if binding.is_module or _guards_route(binding.path) or _names_module(binding.path):
                self._report("module-alias", node, f"the module `{binding.path}` is used as a value; "
                             f"use its attributes directly (`{binding.path}.name`)")
                return

    # -- reporting -------------------------------------------------------------------------

    def _report(self, rule: str, node: ast.AST, message: str) -> None:
        line, col = _position(node, self._lines)
        text = self._lines[line - 1].strip() if 0 < line <= len(self._lines) else ""
        if len(text) > MAX_QUOTED_CHARS:
            text = text[:MAX_QUOTED_CHARS] + " ..."
        violation = Violation(rule, line, col, text, message)
        self._found.setdefault((rule, line, col, message), violation)


def _excerpt(node: ast.AST, limit: int = 60) -> str:
    """The code of a node, shortened for a message."""
    code = ast.unparse(node)
    return code if len(code) <= limit else code[:limit - 3] + "..."


def _is_string_statement(stmt: ast.stmt) -> bool:
    """A bare string literal (a docstring): evaluates nothing."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _is_super_init(node: ast.Attribute) -> bool:
    """``super().__init__`` or ``super(Cls, self).__init__``."""
    value = node.value
    return (node.attr == "__init__" and isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "super")


def _escapes(node: ast.expr, parent: ast.AST | None) -> bool:
    """Whether a value leaves the forms the audit follows: ``x.attr``, ``x(...)``, ``x[...]``, ``name = x``
    and ``match x:`` (its captures and keyword patterns are followed; the patterns that are not, items
    of a sequence or mapping, cannot match a module)."""
    if isinstance(parent, ast.Match) and parent.subject is node:
        return False
    if isinstance(parent, ast.Attribute | ast.Subscript):
        return parent.value is not node
    if isinstance(parent, ast.Call):
        return parent.func is not node
    if isinstance(parent, ast.Assign | ast.AnnAssign | ast.NamedExpr) and parent.value is node:
        return _alias_assignment(parent) is None
    return True


def _position(node: ast.AST, lines: list[str]) -> tuple[int, int]:
    """1-based line and character column; an attribute is located at its name (``x.[attr]``)."""
    line, offset = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
    if isinstance(node, ast.Attribute) and node.end_col_offset is not None:
        line, offset = node.end_lineno, max(0, node.end_col_offset - len(node.attr.encode()))
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return line, len(text.encode()[:offset].decode(errors="ignore")) + 1


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
