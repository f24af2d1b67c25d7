"""Rules 0-7 of PyPTO-Gym's `validate_module_yaml.py`, judged as that validator does.

These rules alone decide PASS/FAIL of `kdt-grade design validate` (without `--strict`), so a
contract written with PyPTO-Gym's tools passes here exactly when it passes there, and a failing
file names the same set of rules. Everything else we check is a named warning (`extra_checks.py`).
Where PyPTO-Gym's documentation allows more than one reading, the one taken is written next to
the rule ("Reading:").

rule0  the document is a non-empty mapping with the keys `op` and `module_count` and a non-empty
       list `modules`; if not, validation stops here (only rule0 is reported).
       Reading: only presence is required (`op: 3` passes rule0; its type is our `structure`);
       a file that cannot be read, is not UTF-8 or is not YAML fails rule0 too.
rule1  every module input with `source: primary` names a primary input.
       Reading: `primary` is matched exactly (case-sensitive); a `Primary` source is therefore
       not primary and falls to rule2.
rule2  every other module input's source is `module_<j>` or the legacy `phase_<j>` (j decimal),
       with j < the id of the module that reads it, and module j has an output of that name.
       Reading: "module j" is the module whose `id` is j; a module without an integer id counts
       by its 1-based position (for its own bound and as a target). A missing source is rule2.
rule3  every final output's source is `module_<j>` / `phase_<j>` with j <= `module_count`, and
       module j has an output of that name.
       Reading: the legacy `phase_<j>` is accepted here as in rule2; when `module_count` is not
       an integer only the existence of module j is checked (rule7 reports the count). Missing or
       empty `final_outputs` break no rule (our `structure` warns).
rule4  every module has a non-empty `outputs` list. Reading: an entry of `modules` that is not a
       mapping has no outputs.
rule5  every shape (primary inputs, module outputs) is well formed, as a string `"[M, N]"` or a
       list; see `shapes.py` for the dimension grammar and its readings. Reading: a missing shape
       is rule5; module inputs and final outputs need no shape (they refer to declared tensors).
rule6  every dtype (primary inputs, module outputs) is one of `DTYPES`. Reading: case-sensitive,
       a missing dtype is rule6.
rule7  `module_count` equals the number of entries of `modules`. Reading: the count must be an
       integer: `2.0`, `"2"` and `true` are rule7 (Python's `2.0 == 2` is not taken as a count).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from grader.design.document import (as_list, entries, is_int, module_ids, modules, name_of, outputs_by_id,
                                    primary_names, shaped_entries)
from grader.design.naming import parse_module_ref
from grader.design.shapes import ShapeExprError, parse_dim, parse_shape

__all__ = ["DTYPES", "RULE_IDS", "RULES", "rule0_gate"]

# PyPTO-Gym's dtype vocabulary (rule6).
DTYPES = frozenset(
    {"float32", "float16", "bfloat16", "int32", "int64", "bool", "int", "uint8", "int8",
     "uint16", "int16", "uint32", "uint64", "float8"}
)


def rule0_gate(data: Any) -> Iterator[str]:
    """rule0: why the document cannot be judged further (nothing when it can)."""
    if not isinstance(data, dict) or not data:
        kind = "empty" if not data else type(data).__name__
        yield f"contract must be a non-empty mapping, got {kind}"
        return
    for key in ("op", "module_count"):
        if key not in data:
            yield f"missing required key {key!r}"
    if not isinstance(data.get("modules"), list) or not data["modules"]:
        yield "'modules' must be a non-empty list"


def _check_ref(entry: dict, bound: int | None, outputs: dict[int, set], strict_less: bool) -> str | None:
    """Why the entry's `source` is not a valid reference to an output of an earlier module that
    has the entry's name, or None."""
    source = entry.get("source")
    j = parse_module_ref(source)
    if j is None:
        return f"source {source!r} is not 'module_<j>' (or the legacy 'phase_<j>')"
    if bound is not None and (j >= bound if strict_less else j > bound):
        relation = "<" if strict_less else "<="
        return f"source {source!r} must refer to a module id {relation} {bound}"
    if j not in outputs:
        return f"source {source!r} refers to no module with id {j}"
    if name_of(entry) not in outputs[j]:
        return f"module {j} has no output named {entry.get('name')!r}"
    return None


def _rule1_primary_sources(data: dict) -> Iterator[str]:
    primaries = primary_names(data)
    for m, module in modules(data):
        for i, inp in entries(module.get("inputs")):
            if inp.get("source") == "primary" and name_of(inp) not in primaries:
                yield f"modules[{m}].inputs[{i}] {inp.get('name')!r} is not a primary input"


def _rule2_module_sources(data: dict) -> Iterator[str]:
    outputs = outputs_by_id(data)
    for m, module, mid in module_ids(data):
        for i, inp in entries(module.get("inputs")):
            if inp.get("source") == "primary":
                continue
            problem = _check_ref(inp, mid, outputs, strict_less=True)
            if problem:
                yield f"modules[{m}].inputs[{i}] {inp.get('name')!r}: {problem}"


def _rule3_final_sources(data: dict) -> Iterator[str]:
    outputs = outputs_by_id(data)
    count = data.get("module_count")
    bound = count if is_int(count) else None
    for i, final in entries(data.get("final_outputs")):
        problem = _check_ref(final, bound, outputs, strict_less=False)
        if problem:
            yield f"final_outputs[{i}] {final.get('name')!r}: {problem}"


def _rule4_outputs(data: dict) -> Iterator[str]:
    for m, module in enumerate(data["modules"]):
        if not isinstance(module, dict) or not as_list(module.get("outputs")):
            yield f"modules[{m}] has no outputs"


def _rule5_shapes(data: dict) -> Iterator[str]:
    for where, entry in shaped_entries(data):
        try:
            dims = parse_shape(entry.get("shape"))
        except ShapeExprError as exc:
            yield f"{where}: {exc}"
            continue
        for d, dim in enumerate(dims):
            try:
                parse_dim(dim)
            except ShapeExprError as exc:
                yield f"{where}: shape dimension {d}: {exc}"


def _rule6_dtypes(data: dict) -> Iterator[str]:
    for where, entry in shaped_entries(data):
        dtype = entry.get("dtype")
        if not isinstance(dtype, str) or dtype not in DTYPES:
            yield f"{where}: dtype {dtype!r} is not one of {', '.join(sorted(DTYPES))}"


def _rule7_module_count(data: dict) -> Iterator[str]:
    count, actual = data.get("module_count"), len(data["modules"])
    if not is_int(count):
        yield f"module_count {count!r} is not an integer (there are {actual} modules)"
    elif count != actual:
        yield f"module_count is {count} but there are {actual} modules"


# Rules 1-7, run in this order after the rule0 gate.
RULES: tuple[tuple[str, Callable[[dict], Iterable[str]]], ...] = (
    ("rule1", _rule1_primary_sources),
    ("rule2", _rule2_module_sources),
    ("rule3", _rule3_final_sources),
    ("rule4", _rule4_outputs),
    ("rule5", _rule5_shapes),
    ("rule6", _rule6_dtypes),
    ("rule7", _rule7_module_count),
)
RULE_IDS = ("rule0",) + tuple(rule for rule, _ in RULES)
