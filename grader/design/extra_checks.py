"""Our checks beyond PyPTO-Gym's rules 0-7: each is a named warning.

PyPTO-Gym's validator leaves these unchecked, so they never turn its PASS into our FAIL:
`design validate` reports them beside the violations and fails on them only with `--strict`.
`design verify` needs the ones that make a contract runnable (`VERIFY_NEEDS`); `design check`
judges a KDT kernel and fails on every one (see check.py).

  structure     field types: `schema_version` 1, `op` and `golden_stage_fn` identifiers,
                `has_cross_core` a bool, list entries are mappings with string names (unique per
                list), inputs have a `source`, outputs a shape and dtype, `golden_steps` a list,
                `final_outputs` a non-empty list;
  verification  `composition_verification` is present and complete: numeric atol/rtol >= 0,
                a non-empty list of integer seeds, a non-empty list of shape cases mapping
                dimension names to integers >= 0 (without it `design verify` cannot run);
  ids           module ids are 1..n in order;
  section       `section` is cube or vector (our KDT names mxm, vxm accepted);
  fusion        `is_fusion` is a bool, true exactly when both sections occur (PyPTO-Gym lets a
                contract with only vector modules say true);
  dims          every dimension evaluates, for every (well-formed) verification shape case, to an
                integer >= 0 (names defined, no division by zero, nothing negative);
  kdt_dtype     every dtype is one KDT has: float32 or bool (kdt-semantics.md §1);
  todo          no `TODO` is left anywhere (keys or values).
Two more, when `design validate` is given the files (crosscheck.py): `golden` (--golden) and
`task` (--task).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from grader.design.document import as_list, is_int, modules, shaped_entries
from grader.design.rules import DTYPES
from grader.design.shapes import ShapeExprError, eval_dim, parse_dim, parse_shape

__all__ = ["SECTIONS", "KDT_DTYPES", "SCHEMA_VERSION", "CHECKS", "CHECK_IDS", "VERIFY_NEEDS",
           "canonical_section"]

# MXM is PyPTO's "cube" section, VXM its "vector" section.
SECTIONS = {"cube": "cube", "vector": "vector", "mxm": "cube", "vxm": "vector"}
KDT_DTYPES = frozenset({"float32", "bool"})
SCHEMA_VERSION = 1

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def canonical_section(section: object) -> str | None:
    """Map a section spelling to `cube`/`vector`; None if it is not a valid section."""
    return SECTIONS.get(section) if isinstance(section, str) else None


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


def _number_hint(value: object) -> str:
    # PyYAML follows YAML 1.1, where `1e-4` (no dot) is a string, a common trap.
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""
    return " (YAML reads it as a string: write floats with a dot, e.g. 1.0e-4)" if isinstance(value, str) else ""


def _valid_case(case: object) -> bool:
    """A verification shape case: a mapping of dimension names to integers >= 0."""
    return isinstance(case, dict) and all(
        isinstance(k, str) and _IDENTIFIER.fullmatch(k) and is_int(v) and v >= 0 for k, v in case.items())


def _verification(data: dict) -> Iterator[str]:
    where = "composition_verification"
    cv = data.get(where)
    if cv is None:
        yield f"no {where} (atol, rtol, seeds, shapes): `design verify` has nothing to run"
        return
    if not isinstance(cv, dict):
        yield f"{where} must be a mapping with atol, rtol, seeds and shapes"
        return
    for key in ("atol", "rtol"):
        value = cv.get(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
            yield f"{where}.{key} must be a number >= 0, got {value!r}{_number_hint(value)}"
    seeds = cv.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(is_int(s) for s in seeds):
        yield f"{where}.seeds must be a non-empty list of integers, got {seeds!r}"
    shapes = cv.get("shapes")
    if not isinstance(shapes, list) or not shapes:
        yield f"{where}.shapes must be a non-empty list of mappings of dimension name -> int"
        return
    for i, case in enumerate(shapes):
        if not _valid_case(case):
            yield f"{where}.shapes[{i}] must map dimension names to integers >= 0, got {case!r}"


def _ids(data: dict) -> Iterator[str]:
    for m, module in enumerate(data["modules"]):
        mid = module.get("id") if isinstance(module, dict) else None
        if not is_int(mid) or mid != m + 1:
            yield f"modules[{m}] has id {mid!r}, expected {m + 1} (ids are 1..n in order)"


def _section(data: dict) -> Iterator[str]:
    for m, module in modules(data):
        if canonical_section(module.get("section")) is None:
            yield f"modules[{m}] section {module.get('section')!r} is not one of {', '.join(SECTIONS)}"


def _fusion(data: dict) -> Iterator[str]:
    flag = data.get("is_fusion")
    if not isinstance(flag, bool):
        yield f"is_fusion must be true or false, got {flag!r}"
        return
    sections = [canonical_section(module.get("section")) for _, module in modules(data)]
    if None in sections:
        return  # `section` reports it; the fusion flag cannot be judged
    used = set(sections)
    if flag != (used == {"cube", "vector"}):
        yield (f"is_fusion is {str(flag).lower()} but the sections used are: {', '.join(sorted(used))} "
               "(true exactly when both cube and vector occur)")


def _dims(data: dict) -> Iterator[str]:
    cv = data.get("composition_verification")
    cases = [c for c in as_list(cv.get("shapes") if isinstance(cv, dict) else None) if _valid_case(c)]
    for where, entry in shaped_entries(data):
        try:
            dims = parse_shape(entry.get("shape"))
        except ShapeExprError:
            continue  # rule5 reports it
        for i, case in enumerate(cases):
            for d, dim in enumerate(dims):
                try:
                    parse_dim(dim)
                except ShapeExprError:
                    continue  # rule5 reports it
                try:
                    eval_dim(dim, case)
                except ShapeExprError as exc:
                    yield f"{where}: dimension {d} with composition_verification.shapes[{i}]: {exc}"


def _kdt_dtype(data: dict) -> Iterator[str]:
    for where, entry in shaped_entries(data):
        dtype = entry.get("dtype")
        if isinstance(dtype, str) and dtype in DTYPES and dtype not in KDT_DTYPES:  # others are rule6's
            yield f"{where}: dtype {dtype!r}: KDT tensors are float32 or bool"


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


# The extra checks, run in this order after rules 1-7 (only when rule0 passes).
CHECKS: tuple[tuple[str, Callable[[dict], Iterable[str]]], ...] = (
    ("structure", _structure),
    ("verification", _verification),
    ("ids", _ids),
    ("section", _section),
    ("fusion", _fusion),
    ("dims", _dims),
    ("kdt_dtype", _kdt_dtype),
    ("todo", _todo),
)
CHECK_IDS = tuple(check for check, _ in CHECKS) + ("golden", "task")
# What `design verify` needs of a contract besides rules 0-7.
VERIFY_NEEDS = frozenset({"structure", "verification", "ids", "dims"})
