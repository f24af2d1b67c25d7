"""Naming conventions shared by `design gen` and `design verify`.

- Golden function: `<op>_golden_cpu`, or `<op>_golden` when there is no `_cpu` variant.
- Stage functions are cumulative: the stage function of module k takes the primary inputs and
  returns the composed outputs of modules 1..k. Its name is `<op>_stage_<suffix>` where the
  suffix concatenates the module ids 1..k: `_stage_1`, `_stage_12`, `_stage_123`, ...
  From module 10 on concatenation becomes ambiguous (`12345678910`), so there the suffix is
  `1_to_<k>` (`<op>_stage_1_to_10`). The contract's `golden_stage_fn` is authoritative; this
  convention only decides what `design gen` proposes.
- Module references in `source`: `module_<j>`, with the legacy spelling `phase_<j>`.
"""
from __future__ import annotations

import re

__all__ = ["golden_function_candidates", "stage_function_name", "parse_module_ref"]

_MODULE_REF = re.compile(r"^(?:module|phase)_([0-9]+)$")


def golden_function_candidates(op: str) -> tuple[str, str]:
    """Return the golden function names for `op` in order of preference."""
    return (f"{op}_golden_cpu", f"{op}_golden")


def stage_function_name(op: str, k: int) -> str:
    """Return the conventional cumulative stage function name of module `k` (k >= 1).

    Raises ValueError for k < 1.
    """
    if k < 1:
        raise ValueError(f"module id must be >= 1, got {k}")
    suffix = "".join(str(i) for i in range(1, k + 1)) if k <= 9 else f"1_to_{k}"
    return f"{op}_stage_{suffix}"


def parse_module_ref(source: object) -> int | None:
    """Return j for a `module_<j>` / `phase_<j>` source string, None for anything else."""
    if not isinstance(source, str):
        return None
    match = _MODULE_REF.match(source)
    return int(match.group(1)) if match else None
