"""Composition verification: `kdt-grade design verify FILE --golden GOLDEN.py`.

The original R0 flow never executes `composition_verification`; this module does. For every
seed in `seeds` and every entry of `shapes` (one case each):

1. Primary inputs are generated in `primary_inputs` order from a `torch.Generator` seeded with
   the seed. Each shape is evaluated with the entry's dimension values, e.g. the entry
   `{M: 16, N: 8, K: 32}` turns `[M, K // 2]` into (16, 16). Values by dtype:
   float32/float16/bfloat16/float8: `randn / 10` clamped to [-1, 1], then cast (float8 means
   torch.float8_e4m3fn); signed integers (int, int8..int64; `int` is int64): uniform in
   [-8, 8); unsigned integers: uniform in [0, 8); bool: fair coin.
   Shapes come in either spelling (`"[M, K // 2]"` or a list).
2. The golden (`<op>_golden_cpu`, else `<op>_golden`) and every module's `golden_stage_fn`
   are called positionally with fresh clones of the inputs, under `torch.no_grad()` and
   `torch.manual_seed(seed)`. A function returns a tensor or a tuple/list of tensors. Stage k
   must return exactly module k's declared outputs, in order and with the declared shapes.
3. The final outputs are taken, in `final_outputs` order, from the stage whose module they
   name (for the usual contract, where every final output comes from the last module, these
   are exactly the last stage's outputs), and compared elementwise with the golden's returns,
   in order, by `torch.isclose(actual, golden, rtol, atol, equal_nan=True)`.
A case PASSes when everything ran and every element matched. Each case reports the matched
ratio (matched elements / golden elements) and the max absolute error.

The golden module is contest-setter code and is imported (never a contestant's submission).
"""
from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from grader.design.contract import ContractLoadError, load_contract, validate_contract
from grader.design.extra_checks import VERIFY_NEEDS
from grader.design.naming import golden_function_candidates, parse_module_ref
from grader.design.shapes import ShapeExprError, eval_shape

__all__ = [
    "MAX_ELEMENTS",
    "VerifyError",
    "CaseResult",
    "VerificationReport",
    "load_golden_module",
    "generate_inputs",
    "verify_contract",
    "verify_file",
]

# 64 Mi elements per tensor: far beyond a verification shape, small enough not to exhaust RAM.
MAX_ELEMENTS = 1 << 26

_FLOATS = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "float8": torch.float8_e4m3fn}
_SIGNED = {"int": torch.int64, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
           "int64": torch.int64}
_UNSIGNED = {"uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32, "uint64": torch.uint64}
_module_names = itertools.count()


class VerifyError(Exception):
    """Verification cannot start: unreadable or invalid contract, golden module not importable,
    or a golden/stage function missing from it."""


class _CaseError(Exception):
    """One case cannot be completed; the message says where and why."""


@dataclass
class CaseResult:
    """One (seed, shape) case. `error` is set when something failed before or instead of
    the comparison; `max_abs_error` is None when no comparison took place."""

    seed: int
    dims: dict[str, int]
    matched: int = 0
    total: int = 0
    max_abs_error: float | None = None
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.matched == self.total

    @property
    def matched_ratio(self) -> float:
        if self.total:
            return self.matched / self.total
        return 1.0 if self.error is None else 0.0

    def to_dict(self) -> dict[str, Any]:
        err = self.max_abs_error
        return {
            "status": "PASS" if self.passed else "FAIL",
            "seed": self.seed,
            "dims": dict(self.dims),
            "matched_ratio": self.matched_ratio,
            "max_abs_error": err if err is None or math.isfinite(err) else str(err),  # JSON has no inf/nan
            "error": self.error,
        }


@dataclass
class VerificationReport:
    """All cases of one contract; PASS when there is at least one case and all pass."""

    op: str
    cases: list[CaseResult]

    @property
    def passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)

    @property
    def status(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "op": self.op, "cases": [c.to_dict() for c in self.cases]}


def load_golden_module(path: str | Path) -> ModuleType:
    """Import a golden file by path (it is trusted contest-setter code).

    Raises VerifyError if the file is missing or raises while it is imported.
    """
    path = Path(path)
    if not path.is_file():
        raise VerifyError(f"{path}: golden file not found")
    name = f"_kdt_design_golden_{next(_module_names)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise VerifyError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # some constructs (dataclasses) look their module up while executing
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        raise VerifyError(f"{path}: importing the golden failed: {type(exc).__name__}: {exc}") from None
    finally:
        sys.modules.pop(name, None)
    return module


def _random_tensor(dtype: str, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    if dtype in _FLOATS:
        return (torch.randn(shape, generator=gen) / 10).clamp(-1, 1).to(_FLOATS[dtype])
    if dtype in _SIGNED:
        return torch.randint(-8, 8, shape, generator=gen).to(_SIGNED[dtype])
    if dtype in _UNSIGNED:
        return torch.randint(0, 8, shape, generator=gen).to(_UNSIGNED[dtype])
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).bool()
    raise _CaseError(f"no input generator for dtype {dtype!r}")


def generate_inputs(primary_inputs: Sequence[dict], dims: dict[str, int], seed: int) -> list[torch.Tensor]:
    """Make the primary inputs of one case (see the module doc for the value distributions).

    Raises _CaseError (a subclass of Exception) for a shape that cannot be evaluated or is too large.
    """
    gen = torch.Generator().manual_seed(seed)
    tensors = []
    for entry in primary_inputs:
        try:
            shape = eval_shape(entry["shape"], dims)
        except ShapeExprError as exc:
            raise _CaseError(f"primary input {entry['name']!r}: {exc}") from None
        if math.prod(shape) > MAX_ELEMENTS:
            raise _CaseError(f"primary input {entry['name']!r}: shape {shape} exceeds {MAX_ELEMENTS} elements")
        tensors.append(_random_tensor(entry["dtype"], shape, gen))
    return tensors


def _as_outputs(value: Any, where: str) -> list[torch.Tensor]:
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    outputs = []
    for item in items:
        if isinstance(item, torch.Tensor):
            outputs.append(item.detach())
        elif isinstance(item, (int, float, bool)):
            outputs.append(torch.as_tensor(item))
        else:
            raise _CaseError(f"{where} returned a {type(item).__name__}, expected tensors")
    return outputs


def _call(fn: Callable, inputs: list[torch.Tensor], seed: int, where: str) -> list[torch.Tensor]:
    torch.manual_seed(seed)  # the same RNG state for the golden and every stage
    try:
        with torch.no_grad():
            result = fn(*(t.clone() for t in inputs))
    except Exception as exc:
        raise _CaseError(f"{where} raised {type(exc).__name__}: {exc}") from None
    return _as_outputs(result, where)


def _check_stage(module: dict, outputs: list[torch.Tensor], dims: dict[str, int]) -> None:
    where, declared = module["golden_stage_fn"], module["outputs"]
    if len(outputs) != len(declared):
        raise _CaseError(f"{where} returned {len(outputs)} output(s), module {module['id']} declares {len(declared)}")
    for entry, tensor in zip(declared, outputs):
        try:
            shape = eval_shape(entry["shape"], dims)
        except ShapeExprError as exc:
            raise _CaseError(f"module {module['id']} output {entry['name']!r}: {exc}") from None
        if tuple(tensor.shape) != shape:
            raise _CaseError(f"{where} output {entry['name']!r} has shape {tuple(tensor.shape)}, declared {shape}")


def _compare(actual: list[torch.Tensor], expected: list[torch.Tensor], result: CaseResult,
             atol: float, rtol: float) -> None:
    """Fill `result` with matched/total/max_abs_error; shape mismatches become an error."""
    result.total = sum(g.numel() for g in expected)
    if len(actual) != len(expected):
        result.error = f"{len(actual)} final output(s) but the golden returns {len(expected)}"
        return
    worst = 0.0
    for i, (a, g) in enumerate(zip(actual, expected)):
        if a.shape != g.shape:
            result.error = f"final output {i} has shape {tuple(a.shape)}, the golden's {tuple(g.shape)}"
            return
        a64, g64 = a.to(torch.float64), g.to(torch.float64)
        result.matched += int(torch.isclose(a64, g64, rtol=rtol, atol=atol, equal_nan=True).sum())
        diff = (a64 - g64).abs()
        diff[(a64 == g64) | (a64.isnan() & g64.isnan())] = 0.0  # equal infinities / both NaN
        if diff.numel():
            worst = max(worst, float(diff.max()))
    result.max_abs_error = worst


@dataclass
class _Plan:
    """What a validated contract asks to run."""

    op: str
    primary_inputs: list[dict]
    modules: list[dict]
    finals: list[tuple[int, int]]  # (module id, index in that module's outputs)
    atol: float
    rtol: float
    seeds: list[int]
    shapes: list[dict[str, int]]


def _plan(contract: dict) -> _Plan:
    finals = []
    by_id = {m["id"]: m for m in contract["modules"]}
    for final in contract["final_outputs"]:
        j = parse_module_ref(final["source"])
        names = [o["name"] for o in by_id[j]["outputs"]]
        finals.append((j, names.index(final["name"])))
    cv = contract["composition_verification"]
    return _Plan(contract["op"], contract["primary_inputs"], contract["modules"], finals,
                 float(cv["atol"]), float(cv["rtol"]), cv["seeds"], cv["shapes"])


def _functions(plan: _Plan, golden: ModuleType) -> tuple[Callable, list[Callable]]:
    found = {n: getattr(golden, n, None) for n in golden_function_candidates(plan.op)}
    golden_fn = next((f for f in found.values() if callable(f)), None)
    if golden_fn is None:
        raise VerifyError(f"the golden module has no function {' or '.join(found)}")
    stages = [getattr(golden, m["golden_stage_fn"], None) for m in plan.modules]
    missing = [m["golden_stage_fn"] for m, fn in zip(plan.modules, stages) if not callable(fn)]
    if missing:
        raise VerifyError(f"the golden module has no stage function {', '.join(missing)}")
    return golden_fn, stages


def _run_case(plan: _Plan, golden_fn: Callable, stages: list[Callable], seed: int,
              dims: dict[str, int]) -> CaseResult:
    result = CaseResult(seed, dims)
    try:
        inputs = generate_inputs(plan.primary_inputs, dims, seed)
        expected = _call(golden_fn, inputs, seed, getattr(golden_fn, "__name__", "golden"))
        outputs: dict[int, list[torch.Tensor]] = {}
        for module, fn in zip(plan.modules, stages):
            outputs[module["id"]] = _call(fn, inputs, seed, module["golden_stage_fn"])
            _check_stage(module, outputs[module["id"]], dims)
    except _CaseError as exc:
        result.error = str(exc)
        return result
    actual = [outputs[j][index] for j, index in plan.finals]
    try:
        _compare(actual, expected, result, plan.atol, plan.rtol)
    except (RuntimeError, TypeError) as exc:  # e.g. outputs of a dtype torch cannot compare
        result.error = f"comparison failed: {type(exc).__name__}: {exc}"
    return result


def _require_valid(contract: Any) -> None:
    """Raise VerifyError unless rules 0-7 pass and so do the extra checks verification needs
    (`VERIFY_NEEDS`: structure, verification, ids, dims); other warnings do not stop it."""
    report = validate_contract(contract)
    blocking = report.violations + [w for w in report.warnings if w.rule in VERIFY_NEEDS]
    if blocking:
        lines = "\n".join(f"  {v}" for v in blocking)
        raise VerifyError(f"the contract does not validate for verification; fix it first:\n{lines}")


def verify_contract(contract: Any, golden: ModuleType) -> VerificationReport:
    """Run the composition verification of a parsed contract against an imported golden module.

    Output: a VerificationReport with one CaseResult per (seed, shape), seeds outermost.
    Raises VerifyError if the contract does not validate or a function is missing.
    Exceptions raised by golden or stage code are reported in the failing case, not raised.
    """
    _require_valid(contract)
    plan = _plan(contract)
    golden_fn, stages = _functions(plan, golden)
    cases = [_run_case(plan, golden_fn, stages, seed, dict(dims))
             for seed in plan.seeds for dims in plan.shapes]
    return VerificationReport(plan.op, cases)


def verify_file(contract_path: str | Path, golden_path: str | Path) -> VerificationReport:
    """`verify_contract` on files. Raises VerifyError for load, validation or import problems."""
    try:
        contract = load_contract(contract_path)
    except ContractLoadError as exc:
        raise VerifyError(str(exc)) from None
    _require_valid(contract)  # before importing anything
    return verify_contract(contract, load_golden_module(golden_path))
