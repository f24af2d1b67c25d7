"""Loading and running the shared conformance cases (see ../shared/conformance/README.md)."""
import contextlib
import importlib.util
import io as _io
import json
import os
from pathlib import Path

import torch

import kdt
from kdt.language.errors import CompilationError

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = Path(os.environ.get("KDT_SHARED_DIR", ROOT.parent / "shared")) / "conformance"
if not (CONFORMANCE / "expected.json").is_file():
    raise RuntimeError(f"the shared conformance cases are not at {CONFORMANCE}: the tests read ../shared next to "
                       "the repository (as CI does); elsewhere set KDT_SHARED_DIR=/path/to/shared")
EXPECTED = json.loads((CONFORMANCE / "expected.json").read_text())
CASES = sorted(EXPECTED)


def load_case(name: str):
    """Import ``cases/<name>.py`` as a fresh module."""
    path = CONFORMANCE / "cases" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"conformance_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_case(name: str, roundtrip: bool = False) -> dict:
    """Compile and launch one case with traces for jobs 0-3.

    Returns ``stage``/``exc`` (where it failed, if it did), ``cycles``, ``profile``, ``io``, ``compiled``,
    ``module`` and ``stdout``. With ``roundtrip`` the compiled kernel goes through JSON first.
    """
    m = load_case(name)
    io = m.make_io(torch.Generator().manual_seed(1234))
    result = dict(stage=None, exc=None, cycles=None, profile=None, io=io, compiled=None, module=m, stdout="")
    try:
        compiled = m.kernel.compile(dict(m.TASK_ARGS), io)
    except CompilationError as exc:
        result.update(stage="compile", exc=exc)
        return result
    if roundtrip:
        compiled = kdt.CompiledKernel.from_json(compiled.to_json())
    result["compiled"] = compiled
    prof = kdt.Profile(jobs=range(4))
    out = _io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            result["cycles"] = kdt.launch_kernel(compiled, io, kdt.TPUSpec(**m.TPU), profile=prof)
    except Exception as exc:  # noqa: BLE001 - the case file says which class is expected
        result.update(stage="launch", exc=exc)
    result.update(profile=prof, stdout=out.getvalue())
    return result


def mro_names(exc) -> set:
    return {c.__name__ for c in type(exc).__mro__}
