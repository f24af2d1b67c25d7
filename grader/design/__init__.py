"""Kernel design contracts (the R0 module-partition method of PyPTO-Gym, for KDT,
read and judged as PyPTO-Gym's own `module_interfaces.yaml`).

A design contract (`module_interfaces.yaml`) records how a kernel is split into modules by data
dependency and by execution unit (MXM = "cube", VXM = "vector"). Modules:
- `contract`      loading, the report, validation (rules decide, extra checks warn);
- `rules`         PyPTO-Gym's rule0..rule7, with the readings taken where its documentation is open;
- `extra_checks`  our checks beyond them, each a named warning (`--strict` fails on them);
- `crosscheck`    the `golden` (golden file read with `ast`) and `task` (judged task) checks;
- `document`      tolerant accessors over a parsed, untrusted contract;
- `shapes`        shapes in both spellings (`"[M, N]"` and lists), dimension expressions checked and
                  evaluated without `eval`;
- `naming`        golden / stage function and `module_<j>` naming conventions;
- `generate`      the skeleton generator (`design gen`, PyPTO-Gym's layout), reading the golden with `ast`;
- `verify`        the composition verification (`design verify`); imports torch, so it is not
                  re-exported here;
- `check`         contract vs kernel (`design check`): compiles and profiles a submission's kernel for a
                  task (through `judger.grading`, imported lazily) and compares the MXM/VXM units it
                  uses with the sections and `is_fusion`; not re-exported here;
- `selftest`      the built-in cases of `design validate --self-test`;
- `cli`           the click group `design`.
The contracts of the four judged tasks live in `judger/contracts/`; the guide is
docs/design-contracts.md.
"""
from grader.design.contract import (
    ContractLoadError,
    ValidationReport,
    Violation,
    load_contract,
    validate_contract,
    validate_file,
)
from grader.design.generate import GenerateError, Skeleton, generate_from_file, generate_skeleton

__all__ = [
    "ContractLoadError",
    "ValidationReport",
    "Violation",
    "load_contract",
    "validate_contract",
    "validate_file",
    "GenerateError",
    "Skeleton",
    "generate_from_file",
    "generate_skeleton",
]
