"""Paths and helpers shared by the judger tests."""
import os
import shutil
import subprocess
import sys
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


def python_without_torch() -> str:
    """The system ``python3`` (PATH without this virtual environment's bin), which has no torch."""
    venv_bin = os.path.dirname(sys.executable)
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and os.path.abspath(d) != os.path.abspath(venv_bin))
    python = shutil.which("python3", path=path)
    assert python, "no python3 on PATH outside the virtual environment"
    probe = subprocess.run([python, "-c", "import sys, importlib.util; print(sys.executable); "
                                          "print(importlib.util.find_spec('torch') is None)"],
                           capture_output=True, text=True, timeout=60)
    executable, no_torch = probe.stdout.split()
    assert no_torch == "True", f"{executable} has torch: this test needs a Python without it"
    return executable
