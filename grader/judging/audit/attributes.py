"""The rules on attributes and on modules used as values: every attribute read, whatever spells it
(``x.attr``, and strings that name attributes for getattr-like helpers), goes to
:func:`~.reads.read_finding`; stores into an imported module are ``module-assign``; a module handed around
as a plain value, out of the audit's sight, is ``module-alias``."""
from __future__ import annotations

import _string
import ast
import string
from collections.abc import Callable

from ..audit_policy import ATTRIBUTE_STRING
from .bindings import alias_assignment
from .checker import Checker, excerpt
from .reads import guards_route, names_module, path_finding, read_finding


class AttributeChecks(Checker):
    """Checks ``Attribute``, ``Subscript`` and ``Constant`` nodes, and gives the other checks
    ``_check_read``, ``_check_assign`` and ``_check_alias``. A loaded attribute may also be a fixed-form
    helper: ``_check_called`` (:class:`~.calls.CallChecks`)."""

    def _check_attribute(self, node: ast.Attribute, parent, exempt) -> None:
        """``x.attr``: the read of ``attr`` from ``x``; a store or deletion into a module; a module as a value."""
        self._check_read(node, lambda: f"`{excerpt(node)}`", node.attr, node.value, super_init=_is_super_init(node))
        if not isinstance(node.ctx, ast.Load):
            self._check_assign(node, node.value, f".{node.attr}")
        else:
            self._check_alias(node, parent)
            self._check_called(node, parent)

    def _check_subscript(self, node: ast.Subscript, parent, exempt) -> None:
        """``x[i] = ...`` or ``del x[i]`` into a module."""
        if not isinstance(node.ctx, ast.Load):
            self._check_assign(node, node.value, "[...]")

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

    def _check_assign(self, node: ast.AST, target: ast.expr, what: str) -> None:
        """Rule ``module-assign``: ``target`` must not be an imported module (or part of one)."""
        for binding in sorted(self._bindings.resolve(target), key=lambda b: b.path):
            self._report("module-assign", node, f"changes `{binding.path}{what}`, part of an imported "
                         "module; a submission may not modify kdt, torch, numpy or the standard library")
            return

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
