"""The rules on ``match`` blocks: a class pattern's keywords read attributes of the subject (``case
C(gi_frame=f)`` reads ``subject.gi_frame``, under the read rules), its positional sub-patterns read
what ``__match_args__`` names (refused but for the self-matching builtins), and captures store names
(``dunder``). Value patterns and a class pattern's class are ``ast.Attribute`` nodes, checked as such."""
from __future__ import annotations

import ast

from ..audit_policy import ALLOWED_DUNDER_STORES, SELF_MATCHING_CLASSES
from .bindings import pattern_subjects
from .checker import Checker, excerpt
from .reads import is_dunder


class PatternChecks(Checker):
    """Checks ``Match`` nodes, every pattern at any depth with the subject the audit can name; a keyword's
    read goes through ``_check_read`` (:class:`~.attributes.AttributeChecks`)."""

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

    def _keyword_node(self, name: str, pattern: ast.pattern) -> ast.AST:
        """A node located at the keyword of ``name=pattern`` in a class pattern (the AST keeps only
        the sub-pattern's position)."""
        line = self._lines[pattern.lineno - 1].encode() if 0 < pattern.lineno <= len(self._lines) else b""
        start = line.rfind(name.encode(), 0, pattern.col_offset)
        return ast.Name(name, lineno=pattern.lineno, col_offset=start if start >= 0 else pattern.col_offset)

    def _matches_itself(self, cls: ast.expr) -> bool:
        """Whether a class pattern's class is one of the builtins :data:`SELF_MATCHING_CLASSES`."""
        return isinstance(cls, ast.Name) and cls.id in SELF_MATCHING_CLASSES and cls.id not in self._rebound()
