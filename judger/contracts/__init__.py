"""Design contracts of the four judged tasks, next to the judger's task definitions.

One directory per task, `task<N>_<op>/`, holding
- `golden.py`              `<op>_golden_cpu` (the judger's reference, `judger.tasks.TASKS[N].reference`)
                           and the cumulative stage functions `<op>_stage_1`, `<op>_stage_12`, ...;
- `module_interfaces.yaml` the contract, in PyPTO-Gym's layout (string shapes): passes
                           `kdt-grade design validate --strict --golden golden.py --task N`, `verify --golden golden.py`
                           and `check --kernel submissions/examples/optimized.py --task N`;
- `DESIGN.md`              §0: the module table, why not fewer modules, the reduction-axis capacity
                           conclusion and a module-level dataflow sketch.
The method and the commands: docs/design-contracts.md. `tests/grader/design/test_design_contracts.py` runs
validate, verify and check on all four (that is how CI runs them).

This package imports nothing heavy; the golden modules import torch and `judger.tasks`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["CONTRACTS_DIR", "TaskContract", "CONTRACTS", "get_contract"]

CONTRACTS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class TaskContract:
    """Where task `task`'s contract lives and the op name its golden functions use."""

    task: int
    op: str

    @property
    def directory(self) -> Path:
        return CONTRACTS_DIR / f"task{self.task}_{self.op}"

    @property
    def golden(self) -> Path:
        return self.directory / "golden.py"

    @property
    def contract(self) -> Path:
        return self.directory / "module_interfaces.yaml"

    @property
    def design(self) -> Path:
        return self.directory / "DESIGN.md"


CONTRACTS: dict[int, TaskContract] = {
    1: TaskContract(1, "vector_add"),
    2: TaskContract(2, "matmul"),
    3: TaskContract(3, "scaled_matmul"),
    4: TaskContract(4, "flash_attention"),
}


def get_contract(task_id: int) -> TaskContract:
    """The contract of a judged task; raises KeyError naming the valid ids."""
    try:
        return CONTRACTS[task_id]
    except KeyError:
        raise KeyError(f"no contract for task {task_id!r}; tasks are {sorted(CONTRACTS)}") from None
