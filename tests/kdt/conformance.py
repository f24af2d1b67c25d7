"""Loading and running the shared conformance cases (see ../shared/conformance/README.md)."""
import atexit
import contextlib
import importlib.util
import io as _io
import json
import os
import shutil
import tempfile
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
# Cases whose kernel prints a scalar, with that line. Spec §2 (the print line, made exact in issue 19 from
# the handout's recorded behaviour) refuses a scalar in kdt.print at compile time (TypeError), as the
# handout does; c23's expected cycles and trace "come from an equivalent kernel run on the handout"
# (its README), i.e. one without that print. Such a case is run as that equivalent kernel, and
# test_conformance checks separately that the case as written is refused at that line.
SCALAR_PRINTS = {"c23_conditional_expression": '    kdt.print(count, msg="rows of this job")\n'}
_EQUIVALENTS = Path(tempfile.mkdtemp(prefix="kdt-conformance-"))
atexit.register(shutil.rmtree, _EQUIVALENTS, True)


def case_path(name: str, as_written: bool = False) -> Path:
    """``cases/<name>.py``, or for a case of ``SCALAR_PRINTS`` (unless ``as_written``) a copy without its
    scalar print, the kernel the expected values were recorded with."""
    path = CONFORMANCE / "cases" / f"{name}.py"
    if as_written or name not in SCALAR_PRINTS:
        return path
    text = path.read_text()
    assert text.count(SCALAR_PRINTS[name]) == 1, f"{name} no longer has the scalar print this file expects"
    copy = _EQUIVALENTS / path.name
    copy.write_text(text.replace(SCALAR_PRINTS[name], ""))
    return copy


def load_case(name: str, as_written: bool = False):
    """Import ``cases/<name>.py`` (see ``case_path``) as a fresh module."""
    path = case_path(name, as_written)
    spec = importlib.util.spec_from_file_location(f"conformance_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_case(name: str, roundtrip: bool = False, as_written: bool = False) -> dict:
    """Compile and launch one case (see ``case_path``) with traces for jobs 0-3.

    Returns ``stage``/``exc`` (where it failed, if it did), ``cycles``, ``profile``, ``io``, ``compiled``,
    ``module`` and ``stdout``. With ``roundtrip`` the compiled kernel goes through JSON first.
    """
    m = load_case(name, as_written)
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
