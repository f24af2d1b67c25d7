"""Tolerant access to a parsed contract, shared by the rules and the extra checks.

A contract comes from an untrusted YAML file, so any key may be missing or of any type. These
helpers walk only what has the expected shape (mappings in lists) and leave reporting the rest to
the rule or check that owns it (see `rules.py`, `extra_checks.py`).
"""
from __future__ import annotations

from collections.abc import Iterator

__all__ = ["is_int", "as_list", "entries", "name_of", "modules", "module_ids", "outputs_by_id", "primary_names",
           "shaped_entries"]


def is_int(value: object) -> bool:
    """An int that is not a bool (YAML `true` is no count or id)."""
    return isinstance(value, int) and not isinstance(value, bool)


def as_list(value: object) -> list:
    return value if isinstance(value, list) else []


def entries(value: object) -> Iterator[tuple[int, dict]]:
    """(index, entry) for the mapping entries of a list; other entries are skipped."""
    for index, entry in enumerate(as_list(value)):
        if isinstance(entry, dict):
            yield index, entry


def name_of(entry: dict) -> object:
    """An entry's `name`, safe to put in a set: a YAML scalar as is; a list or mapping (which can
    equal no declared name) becomes a fresh object that matches nothing."""
    name = entry.get("name")
    return name if name is None or isinstance(name, (str, int, float)) else object()


def modules(data: dict) -> Iterator[tuple[int, dict]]:
    """(index, module) for the mapping entries of `modules`."""
    return entries(data.get("modules"))


def module_ids(data: dict) -> Iterator[tuple[int, dict, int]]:
    """(index, module, id) where id is the module's integer `id`, else its 1-based position.

    The fallback is our reading of rules 2-3 for a module without an integer id (PyPTO-Gym's
    documentation assumes every module has one); the `ids` check warns about it.
    """
    for index, module in modules(data):
        mid = module.get("id")
        yield index, module, mid if is_int(mid) else index + 1


def outputs_by_id(data: dict) -> dict[int, set]:
    """Module id -> the names of its outputs (the first module with an id wins)."""
    found: dict[int, set] = {}
    for _, module, mid in module_ids(data):
        found.setdefault(mid, {name_of(o) for _, o in entries(module.get("outputs"))})
    return found


def primary_names(data: dict) -> set:
    return {name_of(p) for _, p in entries(data.get("primary_inputs"))}


def shaped_entries(data: dict) -> Iterator[tuple[str, dict]]:
    """(location, entry) for every entry that must carry a shape and a dtype: the primary inputs
    and the module outputs (module inputs and final outputs name tensors declared there)."""
    for i, entry in entries(data.get("primary_inputs")):
        yield f"primary_inputs[{i}] {entry.get('name')!r}", entry
    for m, module in modules(data):
        for o, entry in entries(module.get("outputs")):
            yield f"modules[{m}].outputs[{o}] {entry.get('name')!r}", entry
