"""What the audit hands back: :class:`AuditReport`, the violations of one file in source order, as JSON
data (``to_dict``) or text for people (``format``). Re-exported by ``grader.judging.audit``."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..audit_policy import MAX_VIOLATIONS


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
