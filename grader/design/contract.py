"""Design contracts (`module_interfaces.yaml`): loading, and validation as PyPTO-Gym judges it.

Implements `kdt-grade design validate`. A contract is written in PyPTO-Gym's layout
(`gen_module_interfaces.py` emits it):

    schema_version: 1
    op: scaled_matmul
    module_count: 2
    is_fusion: true
    has_cross_core: false
    primary_inputs:                                   # golden parameter order
      - {name: a, shape: "[M, K]", dtype: float32}    # or shape: [M, K]
    modules:
      - id: 1
        name: scale_rows
        description: ...
        section: vector                               # cube | vector (mxm | vxm accepted)
        golden_steps: [...]
        inputs: [{name: a, source: primary}]          # or module_<j> / legacy phase_<j>, j < id
        outputs: [{name: a_scaled, shape: "[M, K]", dtype: float32}]
        golden_stage_fn: scaled_matmul_stage_1
    final_outputs: [{name: out, source: module_2}]
    composition_verification:                         # ours needs it to run `design verify`
      atol: 1.0e-4
      rtol: 1.0e-4
      seeds: [42, 123, 456]
      shapes: [{M: 16, N: 8, K: 32}]

Validation has two sets of findings:
- violations of PyPTO-Gym's rules rule0..rule7 (`rules.py`, with the readings taken): they alone
  decide PASS/FAIL, so the verdict and the rules named are PyPTO-Gym's;
- warnings of our extra checks (`extra_checks.py`: structure, verification, ids, section, fusion,
  dims, kdt_dtype, todo; `crosscheck.py`: golden, task): reported beside, failing the file only
  when validation is strict (`--strict`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grader.design.extra_checks import CHECKS, SECTIONS, canonical_section
from grader.design.rules import DTYPES, RULES, rule0_gate

__all__ = [
    "DTYPES",
    "SECTIONS",
    "MAX_CONTRACT_BYTES",
    "ContractLoadError",
    "Violation",
    "ValidationReport",
    "load_contract",
    "validate_contract",
    "validate_file",
    "canonical_section",
]

# A contract is a few KiB; the cap keeps a hostile file from exhausting memory.
MAX_CONTRACT_BYTES = 1 << 20


class ContractLoadError(Exception):
    """The contract file cannot be read or is not valid YAML."""


@dataclass(frozen=True)
class Violation:
    """One finding: `rule` is a rule id (`rule0`..`rule7`) or an extra check's id (a warning)."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "message": self.message}


@dataclass
class ValidationReport:
    """The result of validating a contract.

    `violations` break PyPTO-Gym's rules 0-7; `warnings` are our extra checks. The status is FAIL
    when there is a violation, or, when `strict`, a warning.
    """

    violations: list[Violation] = field(default_factory=list)
    warnings: list[Violation] = field(default_factory=list)
    strict: bool = False

    @property
    def failures(self) -> list[Violation]:
        """What makes the status FAIL: the violations, and the warnings when strict."""
        return self.violations + (self.warnings if self.strict else [])

    @property
    def status(self) -> str:
        return "FAIL" if self.failures else "PASS"

    @property
    def rules(self) -> set[str]:
        """The ids of the rules 0-7 that were broken."""
        return {v.rule for v in self.violations}

    @property
    def warning_ids(self) -> set[str]:
        """The ids of the extra checks that warned."""
        return {w.rule for w in self.warnings}

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by `design validate --json`."""
        return {"status": self.status, "strict": self.strict,
                "violations": [v.to_dict() for v in self.violations],
                "warnings": [w.to_dict() for w in self.warnings]}


def load_contract(path: str | Path) -> Any:
    """Read and parse a contract file with `yaml.safe_load`.

    Output: the parsed document (any YAML value). Raises ContractLoadError when the file is
    missing, unreadable, too large, not UTF-8 or not valid YAML.
    """
    path = Path(path)
    try:
        if path.stat().st_size > MAX_CONTRACT_BYTES:
            raise ContractLoadError(f"{path}: larger than {MAX_CONTRACT_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ContractLoadError(f"{path}: cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ContractLoadError(f"{path}: not UTF-8 text") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise ContractLoadError(f"{path}: invalid YAML{at}: {problem}") from None
    except RecursionError:
        raise ContractLoadError(f"{path}: YAML nested too deeply") from None


def validate_contract(data: Any, *, strict: bool = False, golden: str | Path | None = None,
                      task: int | None = None) -> ValidationReport:
    """Validate a parsed contract: rules 0-7 (violations) and the extra checks (warnings).

    Inputs: the parsed YAML document; `strict` makes warnings fail; `golden` (a golden file, read
    with `ast`, never imported) adds the `golden` check, `task` (a judged task id) the `task` check
    (imports the judger, hence torch). Output: a ValidationReport; never raises for a bad contract
    (a bad task id is a `task` warning). When rule0 fails nothing else is judged.
    """
    gate = list(rule0_gate(data))
    if gate:
        return ValidationReport([Violation("rule0", m) for m in gate], strict=strict)
    violations = [Violation(rule, message) for rule, check in RULES for message in check(data)]
    warnings = [Violation(name, message) for name, check in CHECKS for message in check(data)]
    if golden is not None or task is not None:
        from grader.design.crosscheck import crosscheck  # the task check imports torch

        warnings += [Violation(name, message) for name, message in crosscheck(data, golden=golden, task=task)]
    return ValidationReport(violations, warnings, strict)


def validate_file(path: str | Path, *, strict: bool = False, golden: str | Path | None = None,
                  task: int | None = None) -> ValidationReport:
    """Load and validate a contract file (see `validate_contract`); load errors are rule0."""
    try:
        data = load_contract(path)
    except ContractLoadError as exc:
        return ValidationReport([Violation("rule0", str(exc))], strict=strict)
    return validate_contract(data, strict=strict, golden=golden, task=task)
