"""Contract vs kernel: `kdt-grade design check FILE --kernel SUBMISSION.py --task N`.

`validate` and `verify` look at the contract and its golden only; `check` holds the contract against
a real kernel. It

1. validates the contract strictly: rules 0-7 and every extra check (a KDT kernel is judged, so the
   warnings of `design validate`, e.g. `kdt_dtype` or `fusion`, fail here); a contract that does
   not validate keeps its rule and check ids and is not checked further;
2. imports the submission (`judger.grading.load_submission`: no sandbox, the file is trusted; this is
   a tool for contest setters and for contestants on their own files, never the grading service),
   takes `get_kernel(N)` and compiles it for the task's first test point (`--point` picks another)
   with `judger.grading.compile_point`, exactly as the judge does;
3. launches it once, on trial 1's inputs (`judger.grading.trial_inputs`), with a `kdt.Profile`;
4. compares the execution units the kernel really uses with the contract's sections:

       MXM is used  iff  the traced jobs ran any matmul (MXM instructions > 0 or MXM busy cycles > 0)
       VXM is used  iff  the same for vector instructions
       section cube (mxm)   <->  MXM        section vector (vxm)  <->  VXM

   rule `unit`:   every section of the contract is a unit the kernel uses, and every unit the kernel
                  uses is the section of at least one module;
   rule `fusion`: `is_fusion` equals "the kernel uses both MXM and VXM".
   rule `task`:   the contract's primary inputs and final output fit the task (names, shapes at
                  every test point, dtypes; crosscheck.py), reported with the comparison.
   Failures before the comparison are `load` (the submission cannot be imported or `get_kernel`
   raises), `compile` and `launch`.

The report gives the kernel's cycles, each unit's busy cycles and utilisation (`kdt.Profile.summary`:
busy cycles of the traced jobs / those jobs' cycles), the instruction counts per unit, the SPM the
kernel allocates, the MXM share of the peak that the judge prints (tasks 2-4) and whether trial 1's
output matches the reference (informational: correctness is the judge's business, not the
contract's). By default every job is traced (the first test points take well under a second); with
`trace_jobs=n` only jobs 0..n-1 are, which is faster on big points but sees only those jobs' units.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.design.contract import ContractLoadError, Violation, canonical_section, load_contract, validate_contract
from grader.design.crosscheck import task_findings

__all__ = ["SECTION_UNITS", "UNITS", "CheckReport", "UnitReport", "check_contract", "check_file",
           "compare_units", "units_used"]

# The contract's canonical sections and the KDT-TPU unit each one runs on.
SECTION_UNITS = {"cube": "MXM", "vector": "VXM"}
UNIT_SECTIONS = {unit: section for section, unit in SECTION_UNITS.items()}
# Rows of the report: the two compute units, then memory and the issue unit (never a section).
UNITS = ("MXM", "VXM", "MEM", "ISU")


@dataclass
class UnitReport:
    """One unit of the KDT-TPU as the profiler saw it. `instructions` is None for the issue unit
    (every non-free instruction occupies it for one cycle; that count is its busy cycles)."""

    unit: str
    used: bool
    busy_cycles: int
    utilisation: float
    instructions: int | None
    modules: list[int] = field(default_factory=list)  # contract modules whose section is this unit

    def to_dict(self) -> dict[str, Any]:
        return {"used": self.used, "busy_cycles": self.busy_cycles, "utilisation": self.utilisation,
                "instructions": self.instructions, "modules": list(self.modules)}


@dataclass
class CheckReport:
    """The result of `design check`: PASS when there is no violation.

    Everything after `violations` is filled in as far as the check got (a contract that does not
    validate leaves it all empty; a compile failure leaves the measurements empty)."""

    contract: str
    kernel: str
    task: int
    point: int
    violations: list[Violation] = field(default_factory=list)
    op: str | None = None
    task_name: str | None = None
    task_args: dict[str, int] = field(default_factory=dict)
    is_fusion: bool | None = None
    sections: dict[str, list[int]] = field(default_factory=dict)  # canonical section -> module ids
    units: dict[str, UnitReport] = field(default_factory=dict)
    kernel_cycles: int | None = None
    jobs: int | None = None
    traced_jobs: int | None = None
    num_sms: int | None = None
    spm_bytes: int | None = None
    spm_size: int | None = None
    mxm_peak_utilisation: float | None = None
    output_correct: bool | None = None

    @property
    def status(self) -> str:
        return "FAIL" if self.violations else "PASS"

    @property
    def passed(self) -> bool:
        return not self.violations

    @property
    def rules(self) -> set[str]:
        return {v.rule for v in self.violations}

    @property
    def used_units(self) -> list[str]:
        """The compute units the kernel used, MXM first (empty before a launch)."""
        return [u for u in ("MXM", "VXM") if u in self.units and self.units[u].used]

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by `design check --json`."""
        return {
            "status": self.status,
            "violations": [v.to_dict() for v in self.violations],
            "contract": self.contract, "kernel": self.kernel, "op": self.op,
            "task": self.task, "task_name": self.task_name, "point": self.point,
            "task_args": dict(self.task_args),
            "is_fusion": self.is_fusion, "sections": {k: list(v) for k, v in self.sections.items()},
            "units_used": self.used_units,
            "units": {u: r.to_dict() for u, r in self.units.items()},
            "kernel_cycles": self.kernel_cycles, "jobs": self.jobs, "traced_jobs": self.traced_jobs,
            "num_sms": self.num_sms, "spm_bytes": self.spm_bytes, "spm_size": self.spm_size,
            "mxm_peak_utilisation": self.mxm_peak_utilisation, "output_correct": self.output_correct,
        }


# --- the comparison (pure, no simulation) ----------------------------------------------------

def units_used(summary: dict) -> set[str]:
    """The compute units a `kdt.Profile.summary()` shows in use: MXM/VXM with an instruction or a
    busy cycle in the traced jobs."""
    counts, busy = summary.get("instructions", {}), summary.get("busy_cycles", {})
    return {u for u in ("MXM", "VXM") if counts.get(u, 0) > 0 or busy.get(u, 0) > 0}


def contract_sections(contract: dict) -> dict[str, list[int]]:
    """Canonical section -> ids of the modules declaring it, for a validated contract."""
    sections: dict[str, list[int]] = {}
    for module in contract["modules"]:
        sections.setdefault(canonical_section(module["section"]), []).append(module["id"])
    return sections


def compare_units(contract: dict, used: Iterable[str]) -> list[Violation]:
    """Violations of rules `unit` and `fusion` for a validated contract and the set of units used."""
    used = set(used)
    sections = contract_sections(contract)
    violations = []
    for section, ids in sections.items():
        unit = SECTION_UNITS[section]
        if unit not in used:
            which = ", ".join(map(str, ids))
            violations.append(Violation("unit", f"module(s) {which} declare section {section}, but the kernel "
                                                f"runs no {unit} instruction"))
    for unit in sorted(used):
        if UNIT_SECTIONS[unit] not in sections:
            violations.append(Violation("unit", f"the kernel uses the {unit}, but no module declares section "
                                                f"{UNIT_SECTIONS[unit]} ({unit.lower()})"))
    both = used == {"MXM", "VXM"}
    if contract["is_fusion"] != both:
        really = "both MXM and VXM" if both else (f"only the {next(iter(used))}" if used else "neither MXM nor VXM")
        violations.append(Violation("fusion", f"is_fusion is {str(contract['is_fusion']).lower()}, but the kernel "
                                              f"uses {really}"))
    return violations


# --- the run ---------------------------------------------------------------------------------

def _spm_bytes(compiled) -> int:
    total = 0
    for storage in compiled.ir.storages:
        if storage.kind != "io":
            total += math.ceil(storage.numel / 8) if storage.dtype == "bool" else storage.numel * 4
    return total


def _measure(report: CheckReport, contract: dict, kernel_path: str | os.PathLike, trace_jobs: int | None,
             timeout: float) -> set[str] | None:
    """Compile, launch and profile; fill the report's measurements. Returns the units used, or None
    after a load/compile/launch failure (recorded as a violation)."""
    import kdt  # imports torch; only `check` needs it
    from judger import grading
    from judger.tasks import get_task

    task = get_task(report.task)
    point = task.points[report.point]
    report.task_name, report.task_args = task.name, point.args()
    report.num_sms, report.spm_size = task.num_sms, task.tpu["spm_size"]
    try:
        module = grading.load_submission(kernel_path)
        kernel_obj = grading.kernel_for_task(module, task.id, source_path=kernel_path)
    except grading.CompileFailed as exc:
        report.violations.append(Violation("load", exc.message))
        return None
    try:
        compiled = grading.compile_point(kernel_obj, task, point, source_path=kernel_path)
    except grading.CompileFailed as exc:
        report.violations.append(Violation("compile", exc.message))
        return None
    report.jobs, report.spm_bytes = compiled.num_jobs, _spm_bytes(compiled)

    io = next(grading.trial_inputs(task, point, trials=1))
    expected = task.expected(io)  # before the launch: a kernel may write into its inputs
    profile = kdt.Profile(jobs=None if trace_jobs is None else range(trace_jobs))
    try:
        cycles = kdt.launch_kernel(compiled, io, task.tpu_spec(), timeout=timeout, profile=profile,
                                   print_file=sys.stderr)
    except Exception as exc:  # TimeoutError, launch errors, SPM overflow: the kernel does not run
        report.violations.append(Violation("launch", f"{type(exc).__name__}: {exc}"))
        return None
    abs_tol, rel_tol = task.tolerances
    report.output_correct = bool(kdt.utils.check_is_allclose(task.output, io[task.output], expected, abs_tol,
                                                             rel_tol, grading.COS_DIFF_TOL, out=lambda _: None))
    summary = profile.summary()
    report.kernel_cycles, report.traced_jobs = cycles, summary["traced_jobs"]
    work = task.mxm_work(point)
    if work is not None and cycles:
        report.mxm_peak_utilisation = work / cycles / (2048 * task.num_sms)
    used = units_used(summary)
    sections = contract_sections(contract)
    for unit in UNITS:
        section = UNIT_SECTIONS.get(unit)
        report.units[unit] = UnitReport(
            unit, unit in used, summary["busy_cycles"][unit], summary["utilisation"][unit],
            summary["instructions"].get(unit) if unit != "ISU" else None,
            list(sections.get(section, [])) if section else [])
    return used


def _check_arguments(task_id: int, point: int, trace_jobs: int | None) -> None:
    from judger.tasks import TASKS  # imports torch: keep `import grader.design` light

    if task_id not in TASKS:
        raise ValueError(f"no task {task_id}; tasks are {', '.join(map(str, sorted(TASKS)))}")
    points = TASKS[task_id].points
    if not 0 <= point < len(points):
        raise ValueError(f"task {task_id} has test points 0..{len(points) - 1}, not {point}")
    if trace_jobs is not None and trace_jobs < 1:
        raise ValueError(f"trace_jobs must be at least 1, got {trace_jobs}")


def check_contract(contract: Any, kernel_path: str | os.PathLike, task_id: int, *, point: int = 0,
                   trace_jobs: int | None = None, timeout: float = 20.0,
                   contract_name: str = "<contract>") -> CheckReport:
    """Check a parsed contract against the kernel that `kernel_path`'s `get_kernel(task_id)` returns.

    Inputs: the parsed YAML, the submission file, the task id (1..4), the test point (default the
    first), how many jobs to trace (default all) and the launch's wall-clock limit in seconds.
    Output: a CheckReport (see the module doc for its rules). Raises ValueError for an unknown task
    or test point or a trace_jobs < 1 (before anything runs); everything the contract or the kernel
    does wrong is a violation in the report. Whatever the submission prints while it is imported,
    compiled or launched (`kdt.print` included) goes to stderr, so `--json` output stays clean.
    """
    _check_arguments(task_id, point, trace_jobs)
    report = CheckReport(contract_name, str(kernel_path), task_id, point)
    validation = validate_contract(contract, strict=True)
    if validation.failures:
        report.violations = list(validation.failures)
        return report
    report.op, report.is_fusion = contract["op"], contract["is_fusion"]
    report.sections = contract_sections(contract)
    with contextlib.redirect_stdout(sys.stderr):
        used = _measure(report, contract, kernel_path, trace_jobs, timeout)
    if used is not None:
        report.violations.extend(compare_units(contract, used))
    report.violations.extend(Violation("task", m) for m in dict.fromkeys(task_findings(contract, task_id)))
    return report


def check_file(contract_path: str | os.PathLike, kernel_path: str | os.PathLike, task_id: int, *,
               point: int = 0, trace_jobs: int | None = None, timeout: float = 20.0) -> CheckReport:
    """`check_contract` on a contract file; a file that cannot be loaded is a rule0 violation."""
    _check_arguments(task_id, point, trace_jobs)
    name = str(contract_path)
    try:
        contract = load_contract(contract_path)
    except ContractLoadError as exc:
        return CheckReport(name, str(kernel_path), task_id, point, [Violation("rule0", str(exc))])
    return check_contract(contract, Path(kernel_path), task_id, point=point, trace_jobs=trace_jobs,
                          timeout=timeout, contract_name=name)
