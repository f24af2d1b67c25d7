"""Static audit of a submission file before any of it runs (issue 5, "static audit").

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

The audit is a fast first line of defence with precise messages, not the security boundary: values
handed around at run time (containers, arguments) are not followed, and that is the sandbox's job.

The policy lives in the tables below (:data:`RULES`, :data:`ALLOWED_MODULES`, :data:`BANNED_NAMES`,
:data:`DENIED_ROUTES`, :data:`DENIED_ATTRIBUTES`, ...); the code only applies them.
"""
from __future__ import annotations

import ast
import functools
import importlib
import json
import re
import types
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
from .pyparse import parse, source_encoding

__all__ = [
    "ALLOWED_MODULES", "BANNED_NAMES", "DENIED_ATTRIBUTES", "DENIED_ROUTES", "ENTRY_POINTS", "RULES",
    "AuditReport", "Violation", "audit_command", "audit_file", "audit_source",
]

# ---------------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------------

#: Rule id -> what it forbids. Every :class:`Violation` carries one of these ids.
RULES: dict[str, str] = {
    "syntax": "the file does not parse as Python 3.11",
    "encoding": "a coding declaration other than UTF-8 (the import would read other code than the audited text)",
    "import": "import of a module outside ALLOWED_MODULES, or a relative import",
    "import-star": "`from M import *`, which binds names the audit cannot see",
    "top-level": "module-level code other than imports, def/class, assignments, string literals "
                 "and `if __name__ == \"__main__\":`",
    "dunder": "access to a dunder attribute or name (`x.__dict__`, `__builtins__`)",
    "banned-name": "use of a builtin listed in BANNED_NAMES (eval, exec, getattr, open, ...)",
    "denied-route": "a file, native-code or escape route: DENIED_ROUTES, DENIED_ATTRIBUTES, or a name "
                    "outside the public API of an allowed standard-library module",
    "private-attribute": "an `_`-prefixed attribute of an imported module (`torch._C`)",
    "introspection": "a frame, generator, coroutine, traceback or code attribute (`g.gi_frame.f_builtins`), "
                     "which reaches the builtins and the judge's own frames",
    "module-assign": "assignment, augmented assignment, deletion or setattr of an attribute or item "
                     "of an imported module",
    "module-alias": "an imported module handed around as a plain value, out of the audit's sight",
}

#: Top-level packages a judged import may come from (their submodules included).
ALLOWED_MODULES: frozenset[str] = frozenset({
    "kdt", "torch", "numpy", "math", "typing", "dataclasses", "functools", "itertools", "collections",
    "enum", "abc",
})

#: Standard-library modules whose attributes are limited to their public API (``__all__``, or the
#: public non-module names when there is none): their re-exported imports (``typing.sys``,
#: ``enum.bltns``, ``dataclasses.inspect``) are escape hatches.
STDLIB_MODULES: tuple[str, ...] = (
    "collections.abc", "math", "typing", "dataclasses", "functools", "itertools", "collections", "enum",
    "abc",
)

#: Public submodules that are not in their package's ``__all__``.
STDLIB_SUBMODULES: dict[str, frozenset[str]] = {"collections": frozenset({"abc"})}

#: Functions the judge calls by name: always judged, even when the main block also calls them.
ENTRY_POINTS: frozenset[str] = frozenset({"get_kernel"})

#: Builtins that run code from strings, reach files or namespaces, or talk to the terminal.
BANNED_NAMES: dict[str, str] = {
    "eval": "runs code from a string",
    "exec": "runs code from a string",
    "compile": "turns a string into code",
    "open": "reads or writes files",
    "__import__": "imports any module by name",
    "getattr": "reads attributes by string, around the attribute rules",
    "setattr": "writes attributes by string, around the attribute rules",
    "delattr": "deletes attributes by string, around the attribute rules",
    "globals": "exposes the module namespace as a dict",
    "vars": "exposes an object's namespace as a dict",
    "locals": "exposes a namespace as a dict",
    "breakpoint": "starts a debugger",
    "input": "reads the judge's standard input",
    "help": "imports modules by name and may start a pager",
}

#: Canonical dotted paths (after import aliases and re-exports are resolved, so ``np.load`` is
#: ``numpy.load``) that reach files, native code, code generation or the network. A path is denied
#: when it is one of these or lies below one.
DENIED_ROUTES: dict[str, str] = {
    "torch.load": "unpickles a file (arbitrary code)",
    "torch.save": "writes a file",
    "torch.from_file": "maps a file",
    "torch.serialization": "reads and writes pickled files",
    "torch.ops": "loads and calls native operator libraries",
    "torch.classes": "loads native classes",
    "torch.library": "defines and loads native operators",
    "torch.utils": "builds C++ extensions, runs code strings, downloads and writes files",
    "torch.hub": "downloads and runs code",
    "torch.package": "packages and imports code",
    "torch.jit": "compiles code and loads archives",
    "torch.compile": "generates and builds native code",
    "torch.fx": "generates and executes Python code",
    "torch.export": "serializes programs to files",
    "torch.onnx": "writes model files",
    "torch.profiler": "writes trace files",
    "torch.autograd.profiler": "writes trace files",
    "torch.testing": "runs test infrastructure with subprocesses and files",
    "torch.multiprocessing": "starts processes",
    "torch.distributed": "opens network connections",
    "numpy.load": "reads files (pickles included)",
    "numpy.save": "writes files",
    "numpy.savez": "writes files",
    "numpy.savez_compressed": "writes files",
    "numpy.savetxt": "writes files",
    "numpy.loadtxt": "reads files",
    "numpy.genfromtxt": "reads files",
    "numpy.fromfile": "reads files",
    "numpy.fromregex": "reads files",
    "numpy.memmap": "maps files",
    "numpy.DataSource": "opens files and URLs",
    "numpy.ctypeslib": "loads native libraries",
    "numpy.lib": "reads and writes file formats and makes unchecked memory views (stride_tricks)",
    "numpy.core": "is an alias of the private numpy._core",
    "numpy.f2py": "builds native code",
    "numpy.distutils": "builds native code",
    "numpy.testing": "builds extensions for tests",
}

#: Attribute names denied on any receiver (and as imported names): standard-library modules that
#: packages re-export (``torch.os``, ``typing.sys``), array/tensor methods that reach files, and the
#: typing helpers that evaluate strings.
DENIED_ATTRIBUTES: dict[str, str] = {
    **{name: "is a re-exported standard-library module outside the allowlist" for name in (
        "os", "sys", "builtins", "subprocess", "importlib", "ctypes", "pickle", "marshal", "shutil",
        "socket", "runpy", "inspect", "pathlib", "posix", "operator",
    )},
    "attrgetter": "reads attributes named by strings, which the audit cannot see",
    "methodcaller": "calls methods named by strings, which the audit cannot see",
    "tofile": "writes a file",
    "fromfile": "reads a file",
    "from_file": "maps a file",
    "dump": "writes an object to a file (`ndarray.dump` pickles it)",
    "get_type_hints": "evaluates string annotations (eval)",
    "ForwardRef": "evaluates a string (eval)",
    "singledispatch": "its register() evaluates string annotations (eval)",
    "singledispatchmethod": "its register() evaluates string annotations (eval)",
}

#: Re-exported package names followed to their canonical path (``a.b.torch.load`` is ``torch.load``).
#: ``abc`` and ``typing`` are left out: ``collections.abc`` and ``numpy.typing`` are packages of
#: their own (typing's string-evaluating helpers are in DENIED_ATTRIBUTES instead).
REEXPORTED_PACKAGES: dict[str, str] = {
    **{name: name for name in ALLOWED_MODULES - {"abc", "typing"}}, "np": "numpy",
}

#: Decorators that only wrap or register a function without calling it when applied, so a function
#: that only the main block reaches may carry them and still be skipped.
PASSIVE_DECORATORS: frozenset[str] = frozenset({
    "staticmethod", "classmethod", "property", "functools.cache", "functools.lru_cache",
    "functools.wraps", "abc.abstractmethod", "typing.overload", "typing.final", "torch.no_grad",
    "torch.inference_mode", "dataclasses.dataclass",
})

#: How far module aliases are followed (``t = torch``; ``u = t.nn``): at most this many imported
#: values per name, and paths of at most this many dots. Beyond that the alias is a ``module-alias``.
MAX_ALIAS_BINDINGS = 32
MAX_ALIAS_DEPTH = 12

#: Dunder names a module or class may define (stores only; reading any dunder name is a violation).
ALLOWED_DUNDER_STORES: frozenset[str] = frozenset({"__all__", "__slots__", "__version__", "__author__"})

#: Attributes of frames, generators, coroutines, async generators, tracebacks and code objects, on any
#: object: no kernel needs them, and they lead to the builtins (``f_builtins``) and the judge's frames.
INTROSPECTION_ATTRIBUTES: frozenset[str] = frozenset({
    "gi_frame", "gi_code", "gi_yieldfrom", "gi_running", "gi_suspended",
    "cr_frame", "cr_code", "cr_await", "cr_origin", "cr_running",
    "ag_frame", "ag_code", "ag_await", "ag_running",
    "f_back", "f_builtins", "f_globals", "f_locals", "f_code", "f_trace", "f_lasti", "f_lineno",
    "tb_frame", "tb_next", "tb_lasti", "tb_lineno",
    "co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_lines", "co_positions",
    "func_globals", "func_code", "im_func", "im_self",
})

#: Statements allowed at top level besides string literals and the main block.
TOP_LEVEL_STATEMENTS: tuple[type[ast.stmt], ...] = (
    ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
    ast.AnnAssign,
)

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
    """The audit of one file: every violation in source order (issue 5).

    ``skipped`` names the top-level functions and classes whose bodies were not audited because only
    the ``if __name__ == "__main__":`` block reaches them.
    """

    filename: str
    violations: list[Violation] = field(default_factory=list)
    skipped: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the file broke no rule."""
        return not self.violations

    def to_dict(self) -> dict:
        """Plain data for JSON: filename, ok, violations (list of dicts) and skipped."""
        return {"filename": self.filename, "ok": self.ok,
                "violations": [asdict(v) for v in self.violations], "skipped": list(self.skipped)}

    def format(self) -> str:
        """Human text: a summary line, then ``line L, col C: [rule] message`` and the source line
        indented below it, for every violation."""
        if self.ok:
            return f"{self.filename}: no violations"
        head = f"{self.filename}: {len(self.violations)} violation(s)"
        body = (f"line {v.line}, col {v.col}: [{v.rule}] {v.message}\n    {v.text}" for v in self.violations)
        return "\n".join([head, *body])


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------

def audit_source(source: str, filename: str = "<submission>") -> AuditReport:
    """Audit a submission's source text statically (issue 5); never imports or runs it.

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
    plan = _plan(tree)
    visits = list(_walk(tree, plan))
    class_level = frozenset(stmt for node, _, _ in visits if isinstance(node, ast.ClassDef) for stmt in node.body)
    auditor = _Auditor(lines, _Bindings.collect(node for node, _, _ in visits), class_level)
    auditor.check_top_level(plan.statements)
    auditor.check_untraceable()
    for node, parent, exempt in visits:
        auditor.check(node, parent, exempt)
    return AuditReport(filename, auditor.violations(), plan.skipped)


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
            if alias := _alias_assignment(node):
                aliases.append((node, *alias))
        bindings = cls(table)
        bindings._follow(aliases)
        return bindings

    def _follow(self, aliases: list[tuple[ast.AST, list[str], ast.expr]]) -> None:
        """Propagate bindings along alias assignments; re-visit an alias only when its source grows."""
        readers: dict[str, list[int]] = defaultdict(list)
        for index, (_, _, value) in enumerate(aliases):
            readers[_root_name(value)].append(index)
        todo, stuck = deque(range(len(aliases))), set()
        while todo:
            node, targets, value = aliases[todo.popleft()]
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
                todo.extend(readers[target])

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


def _path_finding(path: str) -> tuple[str, str] | None:
    """``(rule, detail)`` when an imported dotted path is private or a denied route, else None; the
    detail completes a sentence whose subject is the code that names the path."""
    for part in path.split(".")[1:]:
        if part.startswith("_") and not _is_dunder(part):
            return "private-attribute", f"uses `{part}`, a private attribute of an imported module"
        if part in DENIED_ATTRIBUTES:
            return "denied-route", f"uses `.{part}`, which {DENIED_ATTRIBUTES[part]}"
    canonical = _canonical(path)
    for route, why in DENIED_ROUTES.items():
        if canonical == route or canonical.startswith(route + "."):
            return "denied-route", f"reaches `{route}`, which {why}"
    return _stdlib_finding(canonical)


def _stdlib_finding(canonical: str) -> tuple[str, str] | None:
    """A name outside the public API of an allowed standard-library module (``enum.bltns``)."""
    for module in STDLIB_MODULES:
        if canonical.startswith(module + "."):
            name = canonical[len(module) + 1:].split(".")[0]
            if name not in _public_names(module):
                return "denied-route", f"uses `{name}`, which is not in the public API of `{module}`"
            return None
    return None


def _guards_route(path: str) -> bool:
    """True when a denied route lies below ``path`` (``torch``, ``torch.utils``, ``typing``)."""
    prefix = _canonical(path) + "."
    return any(route.startswith(prefix) for route in DENIED_ROUTES)


# ---------------------------------------------------------------------------------------------
# Stage 4: the rules, one check per node type
# ---------------------------------------------------------------------------------------------

class _Auditor:
    """Applies the rules to judged nodes and collects violations with their source positions."""

    def __init__(self, lines: list[str], bindings: _Bindings, class_level: frozenset[ast.stmt]) -> None:
        self._lines = lines
        self._bindings = bindings
        self._class_level = class_level  # class-body statements: their names become attributes
        self._found: dict[tuple, Violation] = {}

    def violations(self) -> list[Violation]:
        """The violations found so far, in source order, without duplicates."""
        return sorted(self._found.values(), key=lambda v: (v.line, v.col, v.rule, v.message))

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
            elif _is_dunder(alias.name):
                self._report("dunder", alias, f"importing the dunder name `{alias.name}`")
            else:
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

    def _check_attribute(self, node: ast.Attribute, parent, exempt) -> None:
        if _is_dunder(node.attr) and not _is_super_init(node):
            self._report("dunder", node, f"the dunder attribute `.{node.attr}` reaches interpreter internals "
                         "(only `super().__init__` is allowed)")
        if node.attr in INTROSPECTION_ATTRIBUTES:
            self._report("introspection", node, f"`.{node.attr}` is interpreter introspection (frames, "
                         "generators, tracebacks, code objects), which kernels never need")
        self._check_route(node)
        if not isinstance(node.ctx, ast.Load):
            self._check_assign(node, node.value, f".{node.attr}")
        else:
            self._check_alias(node, parent)

    def _check_subscript(self, node: ast.Subscript, parent, exempt) -> None:
        if not isinstance(node.ctx, ast.Load):
            self._check_assign(node, node.value, "[...]")

    def _check_call(self, node: ast.Call, parent, exempt) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and func.id not in exempt and node.args:
            self._check_assign(node, node.args[0], f" via {func.id}()")

    def _check_match_class(self, node: ast.MatchClass, parent, exempt) -> None:
        for name in node.kwd_attrs:
            if _is_dunder(name):
                self._report("dunder", node, f"the class pattern reads the dunder attribute `{name}`")

    _CHECKS = {
        ast.Import: _check_import, ast.ImportFrom: _check_import_from, ast.Name: _check_name,
        ast.Attribute: _check_attribute, ast.Subscript: _check_subscript, ast.Call: _check_call,
        ast.MatchClass: _check_match_class,
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

    def _check_route(self, node: ast.Attribute) -> None:
        """Rules ``denied-route``/``private-attribute`` for one attribute, reported at the first
        attribute of a chain that breaks them."""
        if any(_path_finding(b.path) for b in self._bindings.resolve(node.value)):
            return  # already reported at the inner attribute
        paths = sorted(b.path for b in self._bindings.resolve(node))
        finding = next(filter(None, map(_path_finding, paths)), None)
        if finding is None and node.attr in DENIED_ATTRIBUTES:
            finding = ("denied-route", f"uses `.{node.attr}`, which {DENIED_ATTRIBUTES[node.attr]}")
        if finding:
            self._report(finding[0], node, f"`{_excerpt(node)}` {finding[1]}")

    def _check_assign(self, node: ast.AST, target: ast.expr, what: str) -> None:
        """Rule ``module-assign``: ``target`` must not be an imported module (or part of one)."""
        for binding in sorted(self._bindings.resolve(target), key=lambda b: b.path):
            self._report("module-assign", node, f"changes `{binding.path}{what}`, part of an imported "
                         "module; a submission may not modify kdt, torch, numpy or the standard library")
            return

    def _check_alias(self, node: ast.expr, parent: ast.AST | None) -> None:
        """Rule ``module-alias``: a module that leads to denied routes, or any module bound by
        ``import``, may only be used as ``module.attr``, called, subscripted or aliased by ``=`` to a
        variable (a class attribute would carry it on as ``self.name``)."""
        if not _escapes(node, parent) and parent not in self._class_level:
            return
        for binding in self._bindings.resolve(node):
            if binding.is_module or _guards_route(binding.path):
                self._report("module-alias", node, f"the module `{binding.path}` is used as a value; "
                             f"use its attributes directly (`{binding.path}.name`)")
                return

    # -- reporting -------------------------------------------------------------------------

    def _report(self, rule: str, node: ast.AST, message: str) -> None:
        line, col = _position(node, self._lines)
        text = self._lines[line - 1].strip() if 0 < line <= len(self._lines) else ""
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
    """Whether a value leaves the forms the audit follows: ``x.attr``, ``x(...)``, ``x[...]`` and
    ``name = x``."""
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


# ---------------------------------------------------------------------------------------------
# The `kdt-grade audit` command
# ---------------------------------------------------------------------------------------------

@click.command("audit")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def audit_command(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Run the static audit of FILE alone (issue 5).

    Exit status: 0 when clean, 1 when there are violations, 2 when FILE cannot be read as UTF-8.
    """
    try:
        report = audit_file(file)
    except (OSError, UnicodeDecodeError) as err:
        click.echo(f"kdt-grade audit: cannot read {file}: {err}", err=True)
        ctx.exit(2)
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.format())
    ctx.exit(0 if report.ok else 1)
