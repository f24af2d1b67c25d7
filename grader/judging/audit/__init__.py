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
4. the rules, ``_Auditor`` below, one check per node type; every attribute read is decided in ``reads``.

This module is the driver: :func:`audit_source` and :func:`audit_file`, the refusals of the whole file
(encoding, syntax, size) and the :class:`AuditReport` of ``report``.
"""
from __future__ import annotations

import _string
import ast
import functools
import itertools
import re
import string
from collections.abc import Callable, Iterable
from pathlib import Path

from ..audit_policy import (ALLOWED_DUNDER_STORES, ALLOWED_MODULES, ATTRIBUTE_STRING, BANNED_NAMES, DENIED_ATTRIBUTES,
                            DENIED_ROUTES, ENTRY_POINTS, FIXED_FORM_HELPERS, INTROSPECTION_ATTRIBUTES, MAX_AST_NODES,
                            MAX_QUOTED_CHARS, MAX_VIOLATIONS, RULES, SELF_MATCHING_CLASSES, TOP_LEVEL_STATEMENTS)
from ..pyparse import parse, source_encoding
from .bindings import Bindings, alias_assignment, pattern_subjects
from .plan import make_plan
from .reads import canonical_path, guards_route, is_dunder, names_module, path_finding, read_finding
from .report import AuditReport, Violation
from .scopes import DEFINITIONS, bound_anywhere, is_string_statement
from .walk import walk

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

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


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


# ---------------------------------------------------------------------------------------------
# The rules, one check per node type
# ---------------------------------------------------------------------------------------------

class _Auditor:
    """Applies the rules to judged nodes and collects violations with their source positions."""

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
        elif is_dunder(node.id) and (not isinstance(node.ctx, ast.Store) or node.id not in ALLOWED_DUNDER_STORES):
            self._report("dunder", node, f"the dunder name `{node.id}` reaches interpreter internals")
        if loads:
            self._check_alias(node, parent)
            self._check_called(node, parent)

    def _check_attribute(self, node: ast.Attribute, parent, exempt) -> None:
        self._check_read(node, lambda: f"`{excerpt(node)}`", node.attr, node.value, super_init=_is_super_init(node))
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
                isinstance(parent, DEFINITIONS) and node in parent.decorator_list)
            plain = len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
            if not (applied and plain):
                self._report_fixed_form(node, func)

    def _check_match(self, node: ast.Match, parent, exempt) -> None:
        """Class patterns read attributes of their subject (value patterns and a class pattern's class
        are ``ast.Attribute`` nodes, checked as such); captures bind names."""
        for case in node.cases:
            for pattern, subject in pattern_subjects(case.pattern, node.subject):
                if isinstance(pattern, ast.MatchClass):
                    self._check_class_pattern(pattern, subject)
                self._check_capture(pattern)

    def _check_class_pattern(self, node: ast.MatchClass, subject: ast.expr | None) -> None:
        """``C(attr=p)`` reads ``subject.attr`` (the subject an attribute chain the audit may know);
        ``C(p)`` reads the attribute ``C.__match_args__`` names, which the audit cannot see, unless ``C``
        is a builtin that matches the subject itself (``int(n)``)."""
        for name, sub in zip(node.kwd_attrs, node.kwd_patterns):
            self._check_read(self._keyword_node(name, sub), lambda: f"`{excerpt(node)}`", name, subject)
        if node.patterns and not self._matches_itself(node.cls):
            self._report("denied-route", node.patterns[0], f"`{excerpt(node)}`: a positional sub-pattern reads "
                         "the attribute the class's `__match_args__` names, a string the audit cannot check; "
                         "name the attribute instead (`C(x=p)`)")

    def _check_capture(self, node: ast.pattern) -> None:
        """A capture stores a name, under the rule of ``ast.Name`` stores."""
        name = node.rest if isinstance(node, ast.MatchMapping) else getattr(node, "name", None)
        if name and is_dunder(name) and name not in ALLOWED_DUNDER_STORES:
            self._report("dunder", node, f"the pattern binds the dunder name `{name}`")

    def _check_constant(self, node: ast.Constant, parent, exempt) -> None:
        """A string spelling attribute names (``'gi_frame'``, ``'{0.f_globals}'``) is what getattr-like
        helpers read by (``functools.update_wrapper(assigned=...)``, ``cached_property.attrname``,
        ``__match_args__``, ``str.format``): refused names are refused there too. The pieces of an
        f-string are not names."""
        if not isinstance(node.value, str) or isinstance(parent, ast.JoinedStr):
            return
        for name in dict.fromkeys(_attribute_names(node.value)):
            self._check_read(node, lambda: f"the string {excerpt(node)} names an attribute for getattr-like "
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
        if finding := path_finding(path):
            self._report(finding[0], node, f"`{path}` {finding[1]}")

    def _check_read(self, where: ast.AST, code: Callable[[], str], name: str, receiver: ast.expr | None,
                    super_init: bool = False) -> None:
        """Every attribute rule for one read of ``name`` from ``receiver`` (None: an object the audit
        cannot name), decided by :func:`read_finding`; ``code()`` is the message's subject (made only
        for a violation: unparsing every node of a long chain would be quadratic)."""
        if finding := read_finding(name, self._receivers(receiver), super_init=super_init):
            self._report(finding[0], where, f"{code()} {finding[1]}")

    def _receivers(self, expr: ast.expr | None) -> list[str]:
        """The imported paths ``expr`` may be; none when one of them is already refused (reported at
        the inner read: ``torch._C.x`` only at ``_C``)."""
        paths = sorted(b.path for b in self._bindings.resolve(expr)) if expr is not None else []
        return [] if any(map(path_finding, paths)) else paths

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
        paths = {canonical_path(b.path) for b in self._bindings.resolve(expr)} & FIXED_FORM_HELPERS
        return min(paths) if paths else None

    def _check_called(self, node: ast.expr, parent: ast.AST | None) -> None:
        """A fixed-form helper may only be called (the call itself is checked by ``_check_call``)."""
        if not (isinstance(parent, ast.Call) and parent.func is node) and self._fixed_form_helper(node):
            self._report_fixed_form(node, node)

    def _report_fixed_form(self, node: ast.AST, helper: ast.expr) -> None:
        path = self._fixed_form_helper(helper)
        self._report("denied-route", node, f"`{excerpt(node)}`: `{path}` reads and writes the attributes its "
                     f"`assigned` and `updated` strings name; only its fixed form `@{path}(f)` (one argument, "
                     "applied at once) is allowed")

    def _check_alias(self, node: ast.expr, parent: ast.AST | None) -> None:
        """Rule ``module-alias``: a module that leads to denied routes, any module bound by ``import``,
        and any module reached as an attribute (``torch.nn``: ``names_module``) may only be used as
        ``module.attr``, called, subscripted or aliased by ``=`` to a variable (a class attribute would
        carry it on as ``self.name``). Laundered through a container or a call (``[torch.nn][0]``), a
        module is out of the audit's sight, and with it the private and denied names below it
        (``.modules.module.torch._C``)."""
        if not _escapes(node, parent) and parent not in self._class_level:
            return
        for binding in self._bindings.resolve(node):
            if binding.is_module or guards_route(binding.path) or names_module(binding.path):
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


def excerpt(node: ast.AST, limit: int = 60) -> str:
    """The code of a node, shortened for a message."""
    code = ast.unparse(node)
    return code if len(code) <= limit else code[:limit - 3] + "..."


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
        return alias_assignment(parent) is None
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
