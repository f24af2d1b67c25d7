"""Replaying a recorded launch (issue 14, ``kdt.simulator.Recording`` / ``replay_kernel``): on every shared
conformance case and every kind of data, the replay writes exactly the bits and prints exactly the text of
the functional model (``launch_kernel(..., timing=False)``); recording changes neither cycles, traces,
outputs nor errors; a failed or too long launch leaves nothing to replay."""
import contextlib
import io as _io

import pytest
import torch

import kdt
from conformance import CASES, EXPECTED, load_case
from kdt.simulator import Recording, replay_kernel
from kdt.simulator.errors import LaunchError
from test_timing_once import SUCCESS, bits, compiled_case, launch, variants


def replay(rec, io, **kw):
    """(exception or None, stdout, outputs) of ``replay_kernel``."""
    out, exc = _io.StringIO(), None
    with contextlib.redirect_stdout(out):
        try:
            replay_kernel(rec, io, **kw)
        except Exception as e:  # noqa: BLE001 - compared below
            exc = e
    return exc, out.getvalue(), io


def clone(io):
    return {k: v.clone() for k, v in io.items()}


@pytest.mark.parametrize("name", SUCCESS)
def test_replay_equals_the_functional_model_on_every_kind_of_data(name):
    m, compiled = compiled_case(name)
    datas = variants(m)
    for rec_label in ("seed1234", "nan"):  # recorded on ordinary data and on NaN, replayed on every kind
        rec_io = datas[rec_label]
        rec = Recording()
        prof = kdt.Profile(jobs=range(4))
        timed = launch(compiled, clone(rec_io), m.TPU, profile=prof, record=rec)
        plain_timed = launch(compiled, clone(rec_io), m.TPU)
        assert timed[1] is None and timed[0] == EXPECTED[name]["cycles"], rec_label
        assert rec.complete, rec_label
        # recording changes nothing: same prints, outputs and traces as a launch without it
        assert timed[2] == plain_timed[2], rec_label
        for k in rec_io:
            assert torch.equal(bits(timed[3][k]), bits(plain_timed[3][k])), (rec_label, k)
        for job, trace in EXPECTED[name]["trace"].items():
            assert prof.trace(int(job)) == trace, (rec_label, job)
        for label, io in datas.items():
            plain = launch(compiled, clone(io), m.TPU, timing=False)
            again = replay(rec, clone(io))
            assert again[0] is None, (rec_label, label, again[0])
            assert again[1] == plain[2], (rec_label, label)
            for k in io:
                assert torch.equal(bits(again[2][k]), bits(plain[3][k])), (rec_label, label, k)


@pytest.mark.parametrize("name", [c for c in CASES if EXPECTED[c]["stage"] == "launch"])
def test_a_failed_launch_leaves_nothing_to_replay(name):
    m, compiled = compiled_case(name)
    rec = Recording()
    cycles, exc, _, _ = launch(compiled, m.make_io(torch.Generator().manual_seed(1)), m.TPU, record=rec)
    assert exc is not None and not rec.complete and rec.steps == [] and rec.views == []
    with pytest.raises(kdt.simulator.errors.ValueError, match="complete Recording"):
        replay_kernel(rec, m.make_io(torch.Generator().manual_seed(1)))


def test_a_launch_past_max_steps_runs_on_and_leaves_nothing_to_replay():
    m, compiled = compiled_case("c19_flash_attention_small")
    io = m.make_io(torch.Generator().manual_seed(1))
    want = launch(compiled, clone(io), m.TPU)
    rec = Recording(max_steps=5)
    got = launch(compiled, clone(io), m.TPU, record=rec)
    assert got[0] == want[0] == EXPECTED["c19_flash_attention_small"]["cycles"] and got[1] is None
    for k in io:
        assert torch.equal(bits(got[3][k]), bits(want[3][k]))
    assert not rec.complete and rec.steps == []
    exact = Recording(max_steps=len(_recorded(compiled, io, m.TPU).steps))
    launch(compiled, clone(io), m.TPU, record=exact)
    assert exact.complete  # exactly max_steps instructions fit


def _recorded(compiled, io, tpu) -> Recording:
    rec = Recording()
    launch(compiled, clone(io), tpu, record=rec)
    assert rec.complete
    return rec


def test_recording_needs_the_timing_model_and_a_fresh_recording():
    m, compiled = compiled_case("c01_statement_example")
    io = m.make_io(torch.Generator().manual_seed(1))
    with pytest.raises(kdt.simulator.errors.ValueError, match="record needs"):
        kdt.launch_kernel(compiled, clone(io), kdt.TPUSpec(**m.TPU), timing=False, record=Recording())
    with pytest.raises(kdt.simulator.errors.ValueError, match="record needs"):
        kdt.launch_kernel(compiled, clone(io), kdt.TPUSpec(**m.TPU), record=[])
    rec = _recorded(compiled, io, m.TPU)
    with pytest.raises(ValueError, match="one launch"):
        kdt.launch_kernel(compiled, clone(io), kdt.TPUSpec(**m.TPU), record=rec)
    with pytest.raises(ValueError, match="max_steps"):
        Recording(max_steps=-1)


def test_replay_checks_the_tensors_and_keeps_the_time_limit():
    m, compiled = compiled_case("c19_flash_attention_small")
    io = m.make_io(torch.Generator().manual_seed(1))
    rec = _recorded(compiled, io, m.TPU)
    with pytest.raises(TimeoutError) as info:
        replay_kernel(rec, clone(io), timeout=0.0)
    assert isinstance(info.value, LaunchError) and "wall-clock limit" in str(info.value)
    bad = clone(io)
    bad.pop(next(iter(bad)))
    with pytest.raises(kdt.simulator.errors.ValueError, match="do not match the compiled kernel"):
        replay_kernel(rec, bad)


def test_replay_prints_to_print_file_and_writes_non_contiguous_tensors_back():
    m, compiled = compiled_case("c18_print_is_free")
    io = m.make_io(torch.Generator().manual_seed(1))
    rec = _recorded(compiled, io, m.TPU)
    want = _io.StringIO()
    kdt.launch_kernel(compiled, clone(io), kdt.TPUSpec(**m.TPU), print_file=want, timing=False)
    got = _io.StringIO()
    replay_kernel(rec, clone(io), print_file=got)
    assert got.getvalue() == want.getvalue() and "[Job 0]" in got.getvalue()

    m, compiled = compiled_case("c02_vector_add_small_blocks")
    io = m.make_io(torch.Generator().manual_seed(1))
    rec = _recorded(compiled, io, m.TPU)
    plain = launch(compiled, clone(io), m.TPU, timing=False)[3]
    strided = {k: torch.empty(v.shape[::-1], dtype=v.dtype).t() if v.dim() == 2 else
               torch.empty(v.numel() * 2, dtype=v.dtype)[::2] for k, v in io.items()}
    for k, v in strided.items():
        v.copy_(io[k])
        assert not v.is_contiguous()
    replay_kernel(rec, strided)
    for k in io:
        assert torch.equal(bits(strided[k].contiguous()), bits(plain[k])), k


def test_exp_and_pow_constants_are_shared_read_only_and_keyed_by_their_bits():
    """``semantics._full`` (the float64 constant array of exp's base and pow's exponent) is made once per
    shape and value for tile-sized shapes and shared, read-only; -0.0 and 0.0 are different values; a
    larger shape gets a fresh array every time (nothing large is kept)."""
    import numpy as np

    from kdt.simulator import semantics

    tile = np.zeros((128, 128), dtype=np.float32)
    a = semantics._full(tile, np.float32(2.5))
    assert a.dtype == np.float64 and a.shape == (128, 128) and (a == 2.5).all() and not a.flags.writeable
    assert semantics._full(tile, np.float32(2.5)) is a
    with pytest.raises(ValueError):
        a[0, 0] = 1.0
    neg, pos = semantics._full(tile, np.float32(-0.0)), semantics._full(tile, np.float32(0.0))
    assert neg is not pos and np.signbit(neg).all() and not np.signbit(pos).any()
    big = np.zeros(semantics._FULL_CACHED_ELEMENTS + 1, dtype=np.float32)
    first = semantics._full(big, np.float32(3.0))
    assert (first == 3.0).all() and semantics._full(big, np.float32(3.0)) is not first
