"""Timing once (issue 14): the premise that cycles never depend on the data, on every shared conformance
case and every example submission's test point, and ``launch_kernel(..., timing=False)`` doing exactly
what the timing model does to outputs, prints and errors."""
import contextlib
import io as _io

import pytest
import torch

import kdt
from conformance import CASES, EXPECTED, load_case
from kdt.language.errors import CompilationError
from kdt.simulator.errors import LaunchError

SUCCESS = [c for c in CASES if EXPECTED[c]["error"] is None]


def variants(module) -> dict:
    """Input data of many kinds for one case: other seeds, zeros, NaN, huge values, all-true masks."""
    base = module.make_io(torch.Generator().manual_seed(1234))
    out = {f"seed{s}": module.make_io(torch.Generator().manual_seed(s)) for s in (1234, 0, 7)}

    def filled(value, flag):
        return {k: (torch.full_like(t, flag) if t.dtype == torch.bool else torch.full_like(t, value))
                for k, t in base.items()}
    out["zeros"] = filled(0.0, False)
    out["nan"] = filled(float("nan"), True)
    out["huge"] = filled(3e38, True)
    out["negative"] = filled(-1.5, False)
    return out


def compiled_case(name):
    m = load_case(name)
    try:
        return m, m.kernel.compile(dict(m.TASK_ARGS), m.make_io(torch.Generator().manual_seed(1234)))
    except CompilationError:
        return m, None


def launch(compiled, io, tpu, **kw):
    """(cycles or None, exception or None, stdout, outputs after the launch)."""
    out = _io.StringIO()
    cycles, exc = None, None
    with contextlib.redirect_stdout(out):
        try:
            cycles = kdt.launch_kernel(compiled, io, kdt.TPUSpec(**tpu), **kw)
        except Exception as e:  # noqa: BLE001 - compared below
            exc = e
    return cycles, exc, out.getvalue(), io


def bits(t):
    return t.view(torch.int32) if t.dtype == torch.float32 else t


@pytest.mark.parametrize("name", SUCCESS)
def test_cycles_and_traces_do_not_depend_on_the_data(name):
    m, compiled = compiled_case(name)
    want = EXPECTED[name]
    for label, io in variants(m).items():
        prof = kdt.Profile(jobs=range(4))
        cycles, exc, _, _ = launch(compiled, io, m.TPU, profile=prof)
        assert exc is None, (label, exc)
        assert cycles == want["cycles"], label
        for job, trace in want["trace"].items():
            assert prof.trace(int(job)) == trace, (label, job)


@pytest.mark.parametrize("name", [c for c in CASES if EXPECTED[c]["stage"] == "launch"])
def test_launch_errors_do_not_depend_on_the_data(name):
    m, compiled = compiled_case(name)
    assert compiled is not None
    seen = set()
    for label, io in variants(m).items():
        _, exc, _, _ = launch(compiled, io, m.TPU)
        assert exc is not None and EXPECTED[name]["error"] in {c.__name__ for c in type(exc).__mro__}, label
        seen.add((type(exc), str(exc)))
    assert len(seen) == 1, seen


@pytest.mark.parametrize("name", CASES)
def test_the_functional_model_gives_the_same_outputs_prints_and_errors(name):
    m, compiled = compiled_case(name)
    if compiled is None:
        return  # a compile error: nothing is launched
    for label, io in variants(m).items():
        timed = launch(compiled, {k: v.clone() for k, v in io.items()}, m.TPU)
        plain = launch(compiled, {k: v.clone() for k, v in io.items()}, m.TPU, timing=False)
        assert plain[0] is None
        assert (type(plain[1]), str(plain[1])) == (type(timed[1]), str(timed[1])), label
        assert plain[2] == timed[2], label
        for k in io:
            assert torch.equal(bits(plain[3][k]), bits(timed[3][k])), (label, k)
        if timed[1] is None and not EXPECTED[name].get("may_accept"):
            assert timed[0] == EXPECTED[name]["cycles"]


def test_functional_model_refuses_a_profile():
    m, compiled = compiled_case("c01_statement_example")
    with pytest.raises(kdt.simulator.errors.ValueError, match="a profile needs the timing model"):
        kdt.launch_kernel(compiled, m.make_io(torch.Generator().manual_seed(1)), kdt.TPUSpec(**m.TPU),
                          profile=kdt.Profile(), timing=False)


def test_functional_model_keeps_the_time_limit():
    m, compiled = compiled_case("c19_flash_attention_small")
    with pytest.raises(TimeoutError) as info:
        kdt.launch_kernel(compiled, m.make_io(torch.Generator().manual_seed(1)), kdt.TPUSpec(**m.TPU),
                          timeout=0.0, timing=False)
    assert isinstance(info.value, LaunchError) and "wall-clock limit" in str(info.value)
