"""Built-in cases for `kdt-grade design validate --self-test` (issue 6, "What to build").

Every rule (rule0..rule7 and the extra checks) has at least one case that must PASS and one
that must FAIL naming that rule. Each case mutates a copy of `sample_contract()`, a valid
2-module fused "scaled matmul" (module 1 scales A on the VXM, module 2 multiplies on the MXM).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.design.contract import validate_contract

__all__ = ["SelfTestCase", "SelfTestResult", "sample_contract", "SELF_TEST_CASES", "run_self_test"]


def sample_contract() -> dict[str, Any]:
    """A valid contract: out = (a * scale) @ b, scale applied per column of a."""
    return {
        "schema_version": 1,
        "op": "scaled_matmul",
        "module_count": 2,
        "is_fusion": True,
        "has_cross_core": False,
        "primary_inputs": [
            {"name": "a", "shape": ["M", "K"], "dtype": "float32"},
            {"name": "b", "shape": ["K", "N"], "dtype": "float32"},
            {"name": "scale", "shape": ["K"], "dtype": "float32"},
        ],
        "modules": [
            {
                "id": 1, "name": "scale_a", "description": "a * scale on the VXM",
                "section": "vector", "golden_steps": ["a_scaled = a * scale"],
                "inputs": [{"name": "a", "source": "primary"}, {"name": "scale", "source": "primary"}],
                "outputs": [{"name": "a_scaled", "shape": ["M", "K"], "dtype": "float32"}],
                "golden_stage_fn": "scaled_matmul_stage_1",
            },
            {
                "id": 2, "name": "matmul", "description": "a_scaled @ b on the MXM",
                "section": "cube", "golden_steps": ["out = a_scaled @ b"],
                "inputs": [{"name": "a_scaled", "source": "module_1"}, {"name": "b", "source": "primary"}],
                "outputs": [{"name": "out", "shape": ["M", "N"], "dtype": "float32"}],
                "golden_stage_fn": "scaled_matmul_stage_12",
            },
        ],
        "final_outputs": [{"name": "out", "source": "module_2"}],
        "composition_verification": {
            "atol": 1e-4, "rtol": 1e-4, "seeds": [42, 123, 456],
            "shapes": [{"M": 16, "N": 8, "K": 32}, {"M": 4, "N": 4, "K": 4}],
        },
    }


@dataclass(frozen=True)
class SelfTestCase:
    """`mutate` edits the sample contract in place (or returns a replacement document);
    `expect` is the rule id that must be reported, or None when the result must be PASS."""

    name: str
    mutate: Callable[[dict], Any]
    expect: str | None


@dataclass(frozen=True)
class SelfTestResult:
    case: SelfTestCase
    status: str  # the validator's PASS/FAIL
    ok: bool  # whether the validator behaved as the case expects
    rules: frozenset[str]


def _parent(doc: dict, path: str) -> tuple[Any, Any]:
    """The container holding a dotted path's last part, and that part (integer parts index lists)."""
    *parents, last = (int(p) if p.isdigit() else p for p in path.split("."))
    target: Any = doc
    for part in parents:
        target = target[part]
    return target, last


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def mutate(doc: dict) -> None:
        target, last = _parent(doc, path)
        target[last] = value
    return mutate


def _drop(path: str) -> Callable[[dict], None]:
    def mutate(doc: dict) -> None:
        target, last = _parent(doc, path)
        del target[last]
    return mutate


def _all_vector(doc: dict) -> None:
    doc["modules"][1]["section"] = "vector"
    doc["is_fusion"] = False


def _phase_source(doc: dict) -> None:
    doc["modules"][1]["inputs"][0]["source"] = "phase_1"


def _unit_aliases(doc: dict) -> None:
    doc["modules"][0]["section"] = "vxm"
    doc["modules"][1]["section"] = "mxm"


def _swap_modules(doc: dict) -> None:
    doc["modules"].reverse()


SELF_TEST_CASES: tuple[SelfTestCase, ...] = (
    SelfTestCase("sample contract passes", lambda d: None, None),
    SelfTestCase("rule0: empty document", lambda d: {}, "rule0"),
    SelfTestCase("rule0: not a mapping", lambda d: ["op"], "rule0"),
    SelfTestCase("rule0: no modules", _set("modules", []), "rule0"),
    SelfTestCase("rule0: missing module_count", _drop("module_count"), "rule0"),
    SelfTestCase("rule1: unknown primary input", _set("modules.0.inputs.0.name", "x"), "rule1"),
    SelfTestCase("rule2: phase_<j> source accepted", _phase_source, None),
    SelfTestCase("rule2: source from a later module", _set("modules.0.inputs.0.source", "module_2"), "rule2"),
    SelfTestCase("rule2: name not an output of j", _set("modules.1.inputs.0.name", "zz"), "rule2"),
    SelfTestCase("rule2: malformed source", _set("modules.1.inputs.0.source", "mod1"), "rule2"),
    SelfTestCase("rule3: final source beyond module_count", _set("final_outputs.0.source", "module_3"), "rule3"),
    SelfTestCase("rule3: final name not an output", _set("final_outputs.0.name", "a_scaled"), "rule3"),
    SelfTestCase("rule4: module without outputs", _set("modules.1.outputs", []), "rule4"),
    SelfTestCase("rule5: expression dims accepted", _set("modules.0.outputs.0.shape", ["(M + 1) // 2", "-(-K)"]), None),
    SelfTestCase("rule5: power operator", _set("modules.0.outputs.0.shape", ["M ** 2", "K"]), "rule5"),
    SelfTestCase("rule5: function call", _set("primary_inputs.0.shape", ["len(M)", "K"]), "rule5"),
    SelfTestCase("rule5: float dim", _set("primary_inputs.2.shape", [1.5]), "rule5"),
    SelfTestCase("rule6: unknown dtype", _set("primary_inputs.0.dtype", "float64"), "rule6"),
    SelfTestCase("rule7: module_count mismatch", _set("module_count", 3), "rule7"),
    SelfTestCase("ids: ids out of order", _swap_modules, "ids"),
    SelfTestCase("section: mxm/vxm accepted", _unit_aliases, None),
    SelfTestCase("section: unknown section", _set("modules.0.section", "scalar"), "section"),
    SelfTestCase("fusion: single-unit kernel, is_fusion false", _all_vector, None),
    SelfTestCase("fusion: is_fusion false with both sections", _set("is_fusion", False), "fusion"),
    SelfTestCase("structure: wrong schema_version", _set("schema_version", 2), "structure"),
    SelfTestCase("structure: atol written 1e-4 is a YAML string",
                 _set("composition_verification.atol", "1e-4"), "structure"),
    SelfTestCase("dims: shape case lacks a dimension",
                 _set("composition_verification.shapes", [{"M": 4, "K": 4}]), "dims"),
    SelfTestCase("todo: TODO left in a description", _set("modules.0.description", "TODO"), "todo"),
    SelfTestCase("todo: TODO module_count does not crash", _set("module_count", "TODO"), "todo"),
)


def run_self_test(cases: tuple[SelfTestCase, ...] = SELF_TEST_CASES) -> list[SelfTestResult]:
    """Validate every case's contract. Output: one result per case, `ok` False on misbehaviour."""
    results = []
    for case in cases:
        doc = sample_contract()
        replaced = case.mutate(doc)
        report = validate_contract(doc if replaced is None else replaced)
        ok = report.status == "PASS" if case.expect is None else case.expect in report.rules
        results.append(SelfTestResult(case, report.status, ok, frozenset(report.rules)))
    return results
