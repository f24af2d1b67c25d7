"""The rule on calls of the helpers that read and write attributes named by strings
(:data:`FIXED_FORM_HELPERS`, ``functools.wraps``): only their fixed form ``@wraps(f)`` passes; and
``setattr``/``delattr`` on an imported module (``module-assign``)."""
from __future__ import annotations

import ast

from ..audit_policy import FIXED_FORM_HELPERS
from .checker import Checker, excerpt
from .reads import canonical_path
from .scopes import DEFINITIONS


class CallChecks(Checker):
    """Checks ``Call`` nodes, and gives the other checks ``_check_called`` for a helper named anywhere
    but in a call. ``setattr``/``delattr`` go to ``_check_assign`` (:class:`~.attributes.AttributeChecks`)."""

    def _check_call(self, node: ast.Call, parent, exempt) -> None:
        """``setattr(m, ...)``/``delattr(m, ...)`` of a module; a fixed-form helper called with more or
        other than one plain argument, or whose result is not applied at once."""
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and func.id not in exempt and node.args:
            self._check_assign(node, node.args[0], f" via {func.id}()")
        if self._fixed_form_helper(func):
            applied = (isinstance(parent, ast.Call) and parent.func is node) or (
                isinstance(parent, DEFINITIONS) and node in parent.decorator_list)
            plain = len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
            if not (applied and plain):
                self._report_fixed_form(node, func)

    def _fixed_form_helper(self, expr: ast.expr) -> str | None:
        """The one of :data:`FIXED_FORM_HELPERS` that ``expr`` may be, if any."""
        paths = {canonical_path(b.path) for b in self._bindings.resolve(expr)} & FIXED_FORM_HELPERS
        return min(paths) if paths else None

    def _check_called(self, node: ast.expr, parent: ast.AST | None) -> None:
        """A fixed-form helper may only be called (the call itself is checked by ``_check_call``)."""
        if not (isinstance(parent, ast.Call) and parent.func is node) and self._fixed_form_helper(node):
            self._report_fixed_form(node, node)

    def _report_fixed_form(self, node: ast.AST, helper: ast.expr) -> None:
        """Rule ``denied-route`` at ``node`` for the fixed-form helper ``helper`` names."""
        path = self._fixed_form_helper(helper)
        self._report("denied-route", node, f"`{excerpt(node)}`: `{path}` reads and writes the attributes its "
                     f"`assigned` and `updated` strings name; only its fixed form `@{path}(f)` (one argument, "
                     "applied at once) is allowed")
