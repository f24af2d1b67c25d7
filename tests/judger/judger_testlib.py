"""Paths and helpers shared by the judger tests."""
from pathlib import Path

from judger.grading import kernel_for_task, load_submission

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BASELINE = ROOT / "submissions" / "examples" / "baseline.py"


def fixture_path(name: str) -> Path:
    return FIXTURES / f"{name}.py"


def kernel(name_or_path, task_id: int):
    """``get_kernel(task_id)`` of a fixture (by name) or of a file (by path)."""
    path = name_or_path if isinstance(name_or_path, Path) else fixture_path(name_or_path)
    return kernel_for_task(load_submission(path), task_id, source_path=path)


