"""Design contracts (`module_interfaces.yaml`): loading and the validation rules.

Implements `kdt-grade design validate` of issue 6 ("Design contracts for kernels: the R0
module-partition method"). A contract describes how a kernel is split into modules (by data
dependency and by execution unit, MXM = "cube", VXM = "vector"):

    schema_version: 1
    op: scaled_matmul
    module_count: 2
    is_fusion: true
    has_cross_core: false
    primary_inputs: [{name: a, shape: [M, K], dtype: float32}, ...]   # golden parameter order
    modules:
      - id: 1
        name: scale_rows
        description: ...
        section: vector                     # cube | vector (mxm | vxm accepted)
        golden_steps: [...]
        inputs: [{name: a, source: primary}, {name: x, source: module_1}]   # phase_<j> accepted
        outputs: [{name: a_scaled, shape: [M, K], dtype: float32}]
        golden_stage_fn: scaled_matmul_stage_1
    final_outputs: [{name: out, source: module_2}]
    composition_verification:
      atol: 1.0e-4
      rtol: 1.0e-4
      seeds: [42, 123, 456]
      shapes: [{M: 16, N: 8, K: 32}]      # one mapping of dimension name -> int per shape case

Rules (each violation names its rule id):
  rule0  the file is a non-empty mapping with `op`, `module_count` and non-empty `modules`
         (validation stops here if not; unreadable or unparsable files fail here too);
  rule1  every `source: primary` input names a primary input;
  rule2  every other input source is `module_<j>`/`phase_<j>` with j < the module's id,
         naming an output of module j;
  rule3  every final output's source is `module_<j>` with j <= `module_count`, naming an
         output of module j;
  rule4  no module without outputs;
  rule5  every shape dimension is an integer or an expression of names, integers,
         `+ - * //`, unary sign and parentheses (see `shapes.py`);
  rule6  every dtype is one of `DTYPES`;
  rule7  `module_count` equals the number of modules.
Checks beyond the original validator:
  structure  field types: schema_version 1, `op` and `golden_stage_fn` are identifiers,
             entries are mappings with names (unique per list), `composition_verification`
             has numeric atol/rtol >= 0, integer seeds and shape mappings of name -> int;
  ids        module ids are 1..n in order;
  section    `section` is cube/vector/mxm/vxm;
  fusion     `is_fusion` is a bool, true exactly when both sections occur;
  dims       every name used in a shape is defined by every `composition_verification.shapes`
             entry (otherwise `design verify` could not build the tensors);
  todo       no `TODO` is left anywhere (keys or values).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grader.design.naming import parse_module_ref
from grader.design.shapes import ShapeExprError, dim_names, parse_dim

__all__ = [
    "DTYPES",
    "SECTIONS",
    "RULES",
    "MAX_CONTRACT_BYTES",
    "ContractLoadError",
    "Violation",
    "ValidationReport",
    "load_contract",
    "validate_contract",
    "validate_file",
    "canonical_section",
]

DTYPES = frozenset(
    {"float32", "float16", "bfloat16", "int32", "int64", "bool", "int", "uint8", "int8",
     "uint16", "int16", "uint32", "uint64", "float8"}
)
# MXM is PyPTO's "cube" section, VXM its "vector" section.
SECTIONS = {"cube": "cube", "vector": "vector", "mxm": "cube", "vxm": "vector"}
SCHEMA_VERSION = 1
# A contract is a few KiB; the cap keeps a hostile file from exhausting memory.
MAX_CONTRACT_BYTES = 1 << 20

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ContractLoadError(Exception):
    """The contract file cannot be read or is not valid YAML."""


@dataclass(frozen=True)
class Violation:
    """One broken rule: `rule` is a rule id (`rule0`..`rule7` or an extra check's id)."""

    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "message": self.message}


@dataclass
class ValidationReport:
    """The result of validating a contract: PASS when there is no violation."""

    violations: list[Violation] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "FAIL" if self.violations else "PASS"

    @property
    def rules(self) -> set[str]:
        """The ids of the rules that were broken."""
        return {v.rule for v in self.violations}

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by `design validate --json`."""
        return {"status": self.status, "violations": [v.to_dict() for v in self.violations]}


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


def validate_file(path: str | Path) -> ValidationReport:
    """Load and validate a contract file; load errors become a rule0 violation."""
    try:
        data = load_contract(path)
    except ContractLoadError as exc:
        return ValidationReport([Violation("rule0", str(exc))])
    return validate_contract(data)


def validate_contract(data: Any) -> ValidationReport:
    """Validate a parsed contract against rule0..rule7 and the extra checks (see module doc).

    Input: the parsed YAML document. Output: a ValidationReport; never raises for bad input.
    """
    gate = list(_rule0_shape(data))
    if gate:
        return ValidationReport([Violation("rule0", m) for m in gate])
    violations = [Violation(rule, message) for rule, check in RULES for message in check(data)]
    return ValidationReport(violations)


def canonical_section(section: object) -> str | None:
    """Map a section spelling to `cube`/`vector`; None if it is not a valid section."""
    return SECTIONS.get(section) if isinstance(section, str) else None


# --- helpers: tolerate any YAML shape, the rules report what is wrong -----------------------

def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _entries(value: object) -> Iterator[tuple[int, dict]]:
    """(index, entry) for the mapping entries of a list; other entries are `structure`'s job."""
    for index, entry in enumerate(_list(value)):
        if isinstance(entry, dict):
            yield index, entry


def _modules(data: dict) -> Iterator[tuple[int, dict]]:
    return _entries(data.get("modules"))


def _module_by_id(data: dict) -> dict[int, dict]:
    found: dict[int, dict] = {}
    for _, module in _modules(data):
        mid = module.get("id")
        if _is_int(mid):
            found.setdefault(mid, module)
    return found


def _output_names(module: dict) -> set:
    return {o.get("name") for _, o in _entries(module.get("outputs"))}


def _primary_names(data: dict) -> set:
    return {p.get("name") for _, p in _entries(data.get("primary_inputs"))}


def _shaped_entries(data: dict) -> Iterator[tuple[str, dict]]:
    """(location, entry) for every entry carrying a shape and dtype."""
    for i, entry in _entries(data.get("primary_inputs")):
        yield f"primary_inputs[{i}] {entry.get('name')!r}", entry
    for m, module in _modules(data):
        for o, entry in _entries(module.get("outputs")):
            yield f"modules[{m}].outputs[{o}] {entry.get('name')!r}", entry


def _check_ref(source: object, bound: int | None, names: dict[int, set], name: object,
               strict_less: bool) -> str | None:
    """Why `source` is not a valid reference to an output `name` of an earlier module, or None."""
    j = parse_module_ref(source)
    if j is None:
        return f"source {source!r} is not 'module_<j>' (or 'phase_<j>')"
    if bound is not None and (j >= bound if strict_less else j > bound):
        relation = "<" if strict_less else "<="
        return f"source {source!r} must refer to a module id {relation} {bound}"
    if j not in names:
        return f"source {source!r} refers to no module with id {j}"
    if name not in names[j]:
        return f"module {j} has no output named {name!r}"
    return None


# --- the rules -------------------------------------------------------------------------------

def _rule0_shape(data: Any) -> Iterator[str]:
    if not isinstance(data, dict) or not data:
        kind = "empty" if not data else type(data).__name__
        yield f"contract must be a non-empty mapping, got {kind}"
        return
    for key in ("op", "module_count"):
        if key not in data:
            yield f"missing required key {key!r}"
    if not isinstance(data.get("modules"), list) or not data["modules"]:
        yield "'modules' must be a non-empty list"


def _rule1_primary_sources(data: dict) -> Iterator[str]:
    primaries = _primary_names(data)
    for m, module in _modules(data):
        for i, inp in _entries(module.get("inputs")):
            if inp.get("source") == "primary" and inp.get("name") not in primaries:
                yield f"modules[{m}].inputs[{i}] {inp.get('name')!r} is not a primary input"


def _rule2_module_sources(data: dict) -> Iterator[str]:
    outputs = {mid: _output_names(module) for mid, module in _module_by_id(data).items()}
    for m, module in _modules(data):
        mid = module.get("id")
        bound = mid if _is_int(mid) else None  # a bad id is reported by `ids`
        for i, inp in _entries(module.get("inputs")):
            if inp.get("source") == "primary":
                continue
            problem = _check_ref(inp.get("source"), bound, outputs, inp.get("name"), strict_less=True)
            if problem:
                yield f"modules[{m}].inputs[{i}] {inp.get('name')!r}: {problem}"


def _rule3_final_sources(data: dict) -> Iterator[str]:
    outputs = {mid: _output_names(module) for mid, module in _module_by_id(data).items()}
    count = data.get("module_count")
    bound = count if _is_int(count) else None  # a bad count is reported by rule7
    for i, final in _entries(data.get("final_outputs")):
        problem = _check_ref(final.get("source"), bound, outputs, final.get("name"), strict_less=False)
        if problem:
            yield f"final_outputs[{i}] {final.get('name')!r}: {problem}"


def _rule4_outputs(data: dict) -> Iterator[str]:
    for m, module in enumerate(data["modules"]):
        if not isinstance(module, dict) or not _list(module.get("outputs")):
            yield f"modules[{m}] has no outputs"


def _rule5_shapes(data: dict) -> Iterator[str]:
    for where, entry in _shaped_entries(data):
        shape = entry.get("shape")
        if not isinstance(shape, list):
            yield f"{where}: shape {shape!r} is not a list of dimensions"
            continue
        for d, dim in enumerate(shape):
            try:
                parse_dim(dim)
            except ShapeExprError as exc:
                yield f"{where}: shape[{d}]: {exc}"


def _rule6_dtypes(data: dict) -> Iterator[str]:
    for where, entry in _shaped_entries(data):
        dtype = entry.get("dtype")
        if not isinstance(dtype, str) or dtype not in DTYPES:
            yield f"{where}: dtype {dtype!r} is not one of {', '.join(sorted(DTYPES))}"


def _rule7_module_count(data: dict) -> Iterator[str]:
    count, actual = data.get("module_count"), len(data["modules"])
    if not _is_int(count):
        yield f"module_count {count!r} is not an integer (there are {actual} modules)"
    elif count != actual:
        yield f"module_count is {count} but there are {actual} modules"


def _named_entries(value: object, where: str, extra: tuple[str, ...] = ()) -> Iterator[str]:
    """Structure of a list of `{name, ...}` mappings: names are unique strings."""
    if not isinstance(value, list):
        yield f"{where} must be a list, got {type(value).__name__}"
        return
    seen: set[str] = set()
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            yield f"{where}[{i}] must be a mapping"
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            yield f"{where}[{i}] needs a string 'name'"
        elif name in seen:
            yield f"{where}[{i}] repeats the name {name!r}"
        else:
            seen.add(name)
        for key in extra:
            if key not in entry:
                yield f"{where}[{i}] is missing {key!r}"


def _number_hint(value: object) -> str:
    # PyYAML follows YAML 1.1, where `1e-4` (no dot) is a string, a common trap.
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return " (YAML reads it as a string: write floats with a dot, e.g. 1.0e-4)" if isinstance(value, str) else ""


def _verification_structure(cv: object) -> Iterator[str]:
    where = "composition_verification"
    if not isinstance(cv, dict):
        yield f"{where} must be a mapping with atol, rtol, seeds and shapes"
        return
    for key in ("atol", "rtol"):
        value = cv.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
            yield f"{where}.{key} must be a number >= 0, got {value!r}{_number_hint(value)}"
    seeds = cv.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(_is_int(s) for s in seeds):
        yield f"{where}.seeds must be a non-empty list of integers, got {seeds!r}"
    shapes = cv.get("shapes")
    if not isinstance(shapes, list) or not shapes:
        yield f"{where}.shapes must be a non-empty list of mappings of dimension name -> int"
        return
    for i, entry in enumerate(shapes):
        if not isinstance(entry, dict) or not all(
            isinstance(k, str) and _IDENTIFIER.fullmatch(k) and _is_int(v) and v >= 0
            for k, v in entry.items()
        ):
            yield f"{where}.shapes[{i}] must map dimension names to integers >= 0, got {entry!r}"


def _module_structure(m: int, module: object) -> Iterator[str]:
    where = f"modules[{m}]"
    if not isinstance(module, dict):
        yield f"{where} must be a mapping"
        return
    if not isinstance(module.get("name"), str) or not module.get("name"):
        yield f"{where} needs a string 'name'"
    fn = module.get("golden_stage_fn")
    if not isinstance(fn, str) or not _IDENTIFIER.fullmatch(fn):
        yield f"{where}.golden_stage_fn must be a function name, got {fn!r}"
    if "golden_steps" in module and not isinstance(module["golden_steps"], list):
        yield f"{where}.golden_steps must be a list"
    yield from _named_entries(module.get("inputs"), f"{where}.inputs", extra=("source",))
    if isinstance(module.get("outputs"), list):  # a missing/empty list is rule4's
        yield from _named_entries(module["outputs"], f"{where}.outputs", extra=("shape", "dtype"))


def _structure(data: dict) -> Iterator[str]:
    if data.get("schema_version") != SCHEMA_VERSION:
        yield f"schema_version must be {SCHEMA_VERSION}, got {data.get('schema_version')!r}"
    op = data.get("op")
    if not isinstance(op, str) or not _IDENTIFIER.fullmatch(op):
        yield f"op must be an identifier (it names the golden functions), got {op!r}"
    if "has_cross_core" in data and not isinstance(data["has_cross_core"], bool):
        yield f"has_cross_core must be true or false, got {data['has_cross_core']!r}"
    yield from _named_entries(data.get("primary_inputs"), "primary_inputs", extra=("shape", "dtype"))
    for m, module in enumerate(data["modules"]):
        yield from _module_structure(m, module)
    finals = data.get("final_outputs")
    if isinstance(finals, list) and not finals:
        yield "final_outputs must not be empty"
    yield from _named_entries(finals, "final_outputs", extra=("source",))
    yield from _verification_structure(data.get("composition_verification"))


def _ids(data: dict) -> Iterator[str]:
    for m, module in enumerate(data["modules"]):
        mid = module.get("id") if isinstance(module, dict) else None
        if not _is_int(mid) or mid != m + 1:
            yield f"modules[{m}] has id {mid!r}, expected {m + 1} (ids are 1..n in order)"


def _section(data: dict) -> Iterator[str]:
    for m, module in _modules(data):
        if canonical_section(module.get("section")) is None:
            yield f"modules[{m}] section {module.get('section')!r} is not one of {', '.join(SECTIONS)}"


def _fusion(data: dict) -> Iterator[str]:
    flag = data.get("is_fusion")
    if not isinstance(flag, bool):
        yield f"is_fusion must be true or false, got {flag!r}"
        return
    sections = [canonical_section(module.get("section")) for _, module in _modules(data)]
    if None in sections:
        return  # `section` reports it; the fusion flag cannot be judged
    used = set(sections)
    if flag != (used == {"cube", "vector"}):
        yield f"is_fusion is {str(flag).lower()} but the sections used are: {', '.join(sorted(used))}"


def _dims(data: dict) -> Iterator[str]:
    cv = data.get("composition_verification")
    shapes = [s for s in _list(cv.get("shapes") if isinstance(cv, dict) else None) if isinstance(s, dict)]
    for where, entry in _shaped_entries(data):
        names: set[str] = set()
        for dim in _list(entry.get("shape")):
            try:
                names |= dim_names(dim)
            except ShapeExprError:
                pass  # rule5 reports it
        for i, case in enumerate(shapes):
            missing = sorted(names - case.keys())
            if missing:
                yield f"{where}: composition_verification.shapes[{i}] does not define {', '.join(missing)}"


def _todo_paths(value: Any, path: str, seen: set[int]) -> Iterator[str]:
    # YAML aliases can share (or even nest) containers; visit each container once.
    if isinstance(value, (dict, list)):
        if id(value) in seen:
            return
        seen.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and "TODO" in key:
                yield child
            yield from _todo_paths(item, child, seen)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _todo_paths(item, f"{path}[{i}]", seen)
    elif isinstance(value, str) and "TODO" in value:
        yield path


def _todo(data: dict) -> Iterator[str]:
    for path in _todo_paths(data, "", set()):
        yield f"{path} still contains TODO"


# The rule table, run in this order after the rule0 gate.
RULES: tuple[tuple[str, Callable[[dict], Iterable[str]]], ...] = (
    ("rule1", _rule1_primary_sources),
    ("rule2", _rule2_module_sources),
    ("rule3", _rule3_final_sources),
    ("rule4", _rule4_outputs),
    ("rule5", _rule5_shapes),
    ("rule6", _rule6_dtypes),
    ("rule7", _rule7_module_count),
    ("structure", _structure),
    ("ids", _ids),
    ("section", _section),
    ("fusion", _fusion),
    ("dims", _dims),
    ("todo", _todo),
)
