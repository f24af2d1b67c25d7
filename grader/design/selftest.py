"""Built-in cases for `kdt-grade design validate --self-test`.

Every rule of PyPTO-Gym (rule0..rule7) has cases that must PASS and cases that must FAIL naming
that rule, and every extra check has a case that must warn (PASS, and FAIL under `--strict`).
Each case mutates a copy of `sample_contract(spelling)`, a valid 2-module fused "scaled matmul"
(module 1 scales a on the VXM, module 2 multiplies on the MXM), and runs once per shape spelling:
`string` (PyPTO-Gym's `shape: "[M, K]"`) and `list` (`shape: [M, K]`); cases about one spelling
only (no brackets, nested lists) run in that one. The legacy `phase_<j>` sources have their own
cases, and so does a contract in PyPTO-Gym's usual form (float16 inputs, two vector modules with
`is_fusion: true`, no `composition_verification`): PASS with exactly those three warnings.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.design.contract import ValidationReport, validate_contract
from grader.design.extra_checks import CHECK_IDS
from grader.design.shapes import format_shape

__all__ = ["SPELLINGS", "SelfTestCase", "SelfTestResult", "sample_contract", "SELF_TEST_CASES", "run_self_test"]

SPELLINGS = ("string", "list")


def spell(dims: list, spelling: str) -> Any:
    """A shape in one spelling: `["M", "K"]` -> `"[M, K]"` (string) or the list itself (list)."""
    return format_shape(dims) if spelling == "string" else list(dims)


def sample_contract(spelling: str = "string") -> dict[str, Any]:
    """A valid contract: out = (a * scale) @ b, scale applied per column of a."""
    def tensor(name: str, dims: list) -> dict[str, Any]:
        return {"name": name, "shape": spell(dims, spelling), "dtype": "float32"}

    return {
        "schema_version": 1,
        "op": "scaled_matmul",
        "module_count": 2,
        "is_fusion": True,
        "has_cross_core": False,
        "primary_inputs": [tensor("a", ["M", "K"]), tensor("b", ["K", "N"]), tensor("scale", ["K"])],
        "modules": [
            {
                "id": 1, "name": "scale_a", "description": "a * scale on the VXM",
                "section": "vector", "golden_steps": ["a_scaled = a * scale"],
                "inputs": [{"name": "a", "source": "primary"}, {"name": "scale", "source": "primary"}],
                "outputs": [tensor("a_scaled", ["M", "K"])],
                "golden_stage_fn": "scaled_matmul_stage_1",
            },
            {
                "id": 2, "name": "matmul", "description": "a_scaled @ b on the MXM",
                "section": "cube", "golden_steps": ["out = a_scaled @ b"],
                "inputs": [{"name": "a_scaled", "source": "module_1"}, {"name": "b", "source": "primary"}],
                "outputs": [tensor("out", ["M", "N"])],
                "golden_stage_fn": "scaled_matmul_stage_12",
            },
        ],
        "final_outputs": [{"name": "out", "source": "module_2"}],
        "composition_verification": {
            "atol": 1e-4, "rtol": 1e-4, "seeds": [42, 123, 456],
            "shapes": [{"M": 16, "N": 8, "K": 32}, {"M": 4, "N": 4, "K": 4}],
        },
    }


# A golden file for the `golden` check: module 2's stage function is missing.
_GOLDEN_WITHOUT_STAGE_12 = (
    "def scaled_matmul_golden_cpu(a, b, scale):\n    return (a * scale) @ b\n\n"
    "def scaled_matmul_stage_1(a, b, scale):\n    return a * scale\n"
)


@dataclass(frozen=True)
class SelfTestCase:
    """`mutate(doc, spelling)` edits the sample contract in place (or returns a replacement
    document). `expect` names what must be reported: rule ids (the file FAILs naming each) and/or
    extra-check ids (each warns; with no rule id the file PASSes, and FAILs under --strict); an
    empty `expect` means a clean PASS, even under --strict. `spellings` are the shape spellings the
    case runs in; `golden` (source text) and `task` feed the `golden` and `task` checks."""

    name: str
    mutate: Callable[[dict, str], Any]
    expect: tuple[str, ...] = ()
    spellings: tuple[str, ...] = SPELLINGS
    golden: str | None = None
    task: int | None = None


@dataclass(frozen=True)
class SelfTestResult:
    case: SelfTestCase
    spelling: str
    status: str  # the validator's PASS/FAIL without --strict
    strict_status: str  # ... and with --strict
    ok: bool  # whether the validator behaved as the case expects
    rules: frozenset[str]  # rule ids broken
    warnings: frozenset[str]  # extra-check ids that warned

    @property
    def name(self) -> str:
        return f"[{self.spelling}] {self.case.name}"


def _parent(doc: dict, path: str) -> tuple[Any, Any]:
    """The container holding a dotted path's last part, and that part (integer parts index lists)."""
    *parents, last = (int(p) if p.isdigit() else p for p in path.split("."))
    target: Any = doc
    for part in parents:
        target = target[part]
    return target, last


def _set(path: str, value: Any) -> Callable[[dict, str], None]:
    def mutate(doc: dict, spelling: str) -> None:
        target, last = _parent(doc, path)
        target[last] = value
    return mutate


def _shape(path: str, dims: list) -> Callable[[dict, str], None]:
    """Set a shape, written in the case's spelling."""
    def mutate(doc: dict, spelling: str) -> None:
        target, last = _parent(doc, path)
        target[last] = spell(dims, spelling)
    return mutate


def _drop(path: str) -> Callable[[dict, str], None]:
    def mutate(doc: dict, spelling: str) -> None:
        target, last = _parent(doc, path)
        del target[last]
    return mutate


def _both(*mutations: Callable[[dict, str], Any]) -> Callable[[dict, str], None]:
    def mutate(doc: dict, spelling: str) -> None:
        for m in mutations:
            m(doc, spelling)
    return mutate


def _keep(doc: dict, spelling: str) -> None:
    return None


def _swap_modules(doc: dict, spelling: str) -> None:
    doc["modules"].reverse()


def _pypto_gym_form(doc: dict, spelling: str) -> None:
    """PyPTO-Gym's usual contract: float16 inputs, two vector modules, is_fusion true, no
    composition_verification."""
    for entry in doc["primary_inputs"]:
        entry["dtype"] = "float16"
    doc["modules"][1]["section"] = "vector"
    del doc["composition_verification"]


_RULE_CASES: tuple[SelfTestCase, ...] = (
    SelfTestCase("sample contract passes", _keep),
    SelfTestCase("rule0: empty document", lambda d, s: {}, ("rule0",)),
    SelfTestCase("rule0: not a mapping", lambda d, s: ["op"], ("rule0",)),
    SelfTestCase("rule0: no modules", _set("modules", []), ("rule0",)),
    SelfTestCase("rule0: missing module_count", _drop("module_count"), ("rule0",)),
    SelfTestCase("rule0: missing op", _drop("op"), ("rule0",)),
    SelfTestCase("rule1: unknown primary input", _set("modules.0.inputs.0.name", "x"), ("rule1",)),
    SelfTestCase("rule2: legacy phase_<j> source accepted", _set("modules.1.inputs.0.source", "phase_1")),
    SelfTestCase("rule2: source from a later module", _set("modules.0.inputs.0.source", "module_2"), ("rule2",)),
    SelfTestCase("rule2: source from the module itself", _set("modules.1.inputs.0.source", "module_2"), ("rule2",)),
    SelfTestCase("rule2: legacy phase_<j> from a later module", _set("modules.0.inputs.0.source", "phase_2"),
                 ("rule2",)),
    SelfTestCase("rule2: name not an output of j", _set("modules.1.inputs.0.name", "zz"), ("rule2",)),
    SelfTestCase("rule2: malformed source", _set("modules.1.inputs.0.source", "mod1"), ("rule2",)),
    SelfTestCase("rule2: missing source", _drop("modules.1.inputs.0.source"), ("rule2", "structure")),
    SelfTestCase("rule3: legacy phase_<j> final source accepted", _set("final_outputs.0.source", "phase_2")),
    SelfTestCase("rule3: final source beyond module_count", _set("final_outputs.0.source", "module_3"), ("rule3",)),
    SelfTestCase("rule3: final name not an output", _set("final_outputs.0.name", "a_scaled"), ("rule3",)),
    SelfTestCase("rule3: final source primary", _set("final_outputs.0.source", "primary"), ("rule3",)),
    SelfTestCase("rule4: module with empty outputs (rule3: the final output is gone)",
                 _set("modules.1.outputs", []), ("rule3", "rule4")),
    SelfTestCase("rule4: module without outputs (rule2: module 2's input is gone)",
                 _drop("modules.0.outputs"), ("rule2", "rule4")),
    SelfTestCase("rule5: expressions with parentheses, //, unary minus accepted",
                 _shape("modules.0.outputs.0.shape", ["((M + 1) // 2) * 2 - 1", "-(-K)"])),
    SelfTestCase("rule5: integer dimensions accepted", _shape("primary_inputs.2.shape", [32])),
    SelfTestCase("rule5: power operator", _shape("modules.0.outputs.0.shape", ["M ** 2", "K"]), ("rule5",)),
    SelfTestCase("rule5: true division", _shape("modules.0.outputs.0.shape", ["M / 2", "K"]), ("rule5",)),
    SelfTestCase("rule5: unary plus", _shape("modules.0.outputs.0.shape", ["+M", "K"]), ("rule5",)),
    SelfTestCase("rule5: function call", _shape("primary_inputs.0.shape", ["len(M)", "K"]), ("rule5",)),
    SelfTestCase("rule5: float dimension", _shape("primary_inputs.2.shape", [1.5]), ("rule5",)),
    SelfTestCase("rule5: missing shape", _drop("primary_inputs.1.shape"), ("rule5", "structure")),
    SelfTestCase("rule5: string shape without brackets", _set("primary_inputs.0.shape", "M, K"), ("rule5",),
                 spellings=("string",)),
    SelfTestCase("rule5: string shape with an empty dimension", _set("primary_inputs.0.shape", "[M, ]"),
                 ("rule5",), spellings=("string",)),
    SelfTestCase("rule5: string scalar shape [] accepted", _set("primary_inputs.2.shape", "[]"),
                 spellings=("string",)),
    SelfTestCase("rule5: nested list dimension", _set("primary_inputs.0.shape", [["M"], "K"]), ("rule5",),
                 spellings=("list",)),
    SelfTestCase("rule5: YAML bool dimension", _set("primary_inputs.0.shape", [True, "K"]), ("rule5",),
                 spellings=("list",)),
    SelfTestCase("rule6: unknown dtype", _set("primary_inputs.0.dtype", "float64"), ("rule6",)),
    SelfTestCase("rule6: dtype is case-sensitive", _set("modules.1.outputs.0.dtype", "Float32"), ("rule6",)),
    SelfTestCase("rule6: missing dtype", _drop("modules.0.outputs.0.dtype"), ("rule6", "structure")),
    SelfTestCase("rule7: module_count mismatch", _set("module_count", 3), ("rule7",)),
    SelfTestCase("rule7: module_count as a string", _set("module_count", "2"), ("rule7",)),
    SelfTestCase("rule7: TODO module_count does not crash", _set("module_count", "TODO"), ("rule7", "todo")),
)

_WARNING_CASES: tuple[SelfTestCase, ...] = (
    SelfTestCase("structure: wrong schema_version", _set("schema_version", 2), ("structure",)),
    SelfTestCase("structure: golden_stage_fn is no name", _set("modules.0.golden_stage_fn", "a b"), ("structure",)),
    SelfTestCase("verification: no composition_verification", _drop("composition_verification"), ("verification",)),
    SelfTestCase("verification: atol written 1e-4 is a YAML string",
                 _set("composition_verification.atol", "1e-4"), ("verification",)),
    SelfTestCase("ids: ids out of order", _swap_modules, ("ids",)),
    SelfTestCase("section: mxm/vxm accepted", _both(_set("modules.0.section", "vxm"), _set("modules.1.section", "mxm"))),
    SelfTestCase("section: unknown section", _set("modules.0.section", "scalar"), ("section",)),
    SelfTestCase("fusion: single-unit kernel, is_fusion false",
                 _both(_set("modules.1.section", "vector"), _set("is_fusion", False))),
    SelfTestCase("fusion: is_fusion false with both sections", _set("is_fusion", False), ("fusion",)),
    SelfTestCase("fusion: is_fusion true with two vector modules", _set("modules.1.section", "vector"), ("fusion",)),
    SelfTestCase("dims: shape case lacks a dimension",
                 _set("composition_verification.shapes", [{"M": 4, "K": 4}]), ("dims",)),
    SelfTestCase("dims: negative dimension passes rule5, warns", _shape("primary_inputs.2.shape", [-1]), ("dims",)),
    SelfTestCase("kdt_dtype: float16 is PyPTO-Gym's, not KDT's", _set("primary_inputs.0.dtype", "float16"),
                 ("kdt_dtype",)),
    SelfTestCase("todo: TODO left in a description", _set("modules.0.description", "TODO"), ("todo",)),
    SelfTestCase("golden: a stage function missing from the golden", _keep, ("golden",),
                 golden=_GOLDEN_WITHOUT_STAGE_12),
    SelfTestCase("task: the sample is not task 3's contract", _keep, ("task",), task=3),
    SelfTestCase("PyPTO-Gym form: float16, two vector modules fused, no verification", _pypto_gym_form,
                 ("fusion", "kdt_dtype", "verification")),
)

SELF_TEST_CASES: tuple[SelfTestCase, ...] = _RULE_CASES + _WARNING_CASES


def _judge(case: SelfTestCase, report: ValidationReport, strict: ValidationReport) -> bool:
    rules = {e for e in case.expect if e not in CHECK_IDS}
    checks = set(case.expect) - rules
    if report.rules != rules or not checks <= report.warning_ids:
        return False
    if not case.expect:
        return strict.status == "PASS"  # clean: no warning either
    if not rules:
        return report.status == "PASS" and strict.status == "FAIL" and report.warning_ids == checks
    return report.status == "FAIL"


def _validate(doc: Any, case: SelfTestCase, golden: Path | None, strict: bool) -> ValidationReport:
    return validate_contract(doc, strict=strict, golden=golden, task=case.task)


def run_self_test(cases: tuple[SelfTestCase, ...] = SELF_TEST_CASES) -> list[SelfTestResult]:
    """Validate every case in each of its spellings. Output: one result per (case, spelling), `ok`
    False on misbehaviour (a rule set or warning set other than expected)."""
    results = []
    with tempfile.TemporaryDirectory(prefix="kdt-design-selftest-") as tmp:
        for case in cases:
            golden = None
            if case.golden is not None:
                golden = Path(tmp) / "golden.py"
                golden.write_text(case.golden, encoding="utf-8")
            for spelling in case.spellings:
                doc = sample_contract(spelling)
                replaced = case.mutate(doc, spelling)
                doc = doc if replaced is None else replaced
                report = _validate(doc, case, golden, strict=False)
                strict = _validate(doc, case, golden, strict=True)
                results.append(SelfTestResult(case, spelling, report.status, strict.status,
                                              _judge(case, report, strict), frozenset(report.rules),
                                              frozenset(report.warning_ids)))
    return results
