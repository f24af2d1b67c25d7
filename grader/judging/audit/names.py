"""The rules on imports and bare names: what a file may import (``import``, ``import-star``, and the
read rules for every segment of an imported path: ``import torch.utils`` reads ``utils``), which
builtins it may name (``banned-name``) and which dunder names it may store (``dunder``)."""
from __future__ import annotations

import ast

from ..audit_policy import ALLOWED_DUNDER_STORES, ALLOWED_MODULES, BANNED_NAMES
from .checker import Checker
from .reads import is_dunder, path_finding


class NameChecks(Checker):
    """Checks ``Import``, ``ImportFrom`` and ``Name`` nodes. A loaded name is also a value: its use is
    checked by ``_check_alias`` (:class:`~.attributes.AttributeChecks`) and ``_check_called``
    (:class:`~.calls.CallChecks`)."""

    def _check_import(self, node: ast.Import, parent, exempt) -> None:
        """``import a.b.c``: an allowed package, and no refused read along the path."""
        for alias in node.names:
            if self._check_module(alias, alias.name):
                self._check_path(alias, alias.name)

    def _check_import_from(self, node: ast.ImportFrom, parent, exempt) -> None:
        """``from m import name``: absolute, an allowed package, no ``*``; ``name`` is read from ``m``."""
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
        """A banned builtin loaded where no local name of the same name hides it; a dunder name, but for
        the stores of :data:`ALLOWED_DUNDER_STORES`."""
        loads = isinstance(node.ctx, ast.Load)
        if node.id in BANNED_NAMES:
            if loads and node.id not in exempt:
                self._report("banned-name", node, f"`{node.id}` {BANNED_NAMES[node.id]}")
        elif is_dunder(node.id) and (not isinstance(node.ctx, ast.Store) or node.id not in ALLOWED_DUNDER_STORES):
            self._report("dunder", node, f"the dunder name `{node.id}` reaches interpreter internals")
        if loads:
            self._check_alias(node, parent)
            self._check_called(node, parent)

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
