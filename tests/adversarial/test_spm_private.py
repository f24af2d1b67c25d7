"""Issue 20: SPM is private per job and starts zeroed (spec §3) whatever IR arrives. A hand-made IR
without the front end's alloc fills must not let job 1 read what job 0 left in SPM, in the timed launch,
the functional model (timing=False) and a replayed launch (kdt.simulator.replay) alike; the front end's
own kernels keep their cycles (the fills already zero SPM: nothing is added to them)."""
import dataclasses

import torch

import kdt
from kdt.ir.nodes import Inst
from kdt.simulator import Recording, replay_kernel
from kdt.simulator.program import spm_to_zero

SPEC = kdt.TPUSpec(num_sms=2, load_store_latency=10)


@kdt.kernel(num_jobs_calculator=lambda task_args: 2)
def relay(task_args, io_tensors):
    j = kdt.get_job_id()
    t = kdt.alloc_spm((4,))
    if j == 0:
        kdt.load(io_tensors['x'], t)
        kdt.add(t, t, t)
    kdt.store(t, io_tensors['y'][j])


def _io(scale=1.0):
    return {'x': torch.full((4,), scale), 'y': torch.full((2, 4), -1.0)}


def _without_fills():
    ir = relay.compile({}, _io()).ir
    return kdt.CompiledKernel(dataclasses.replace(ir, body=tuple(s for s in ir.body
                                                                 if not (isinstance(s, Inst) and s.alloc))))


def test_the_front_ends_kernels_need_no_zeroing():
    assert spm_to_zero(relay.compile({}, _io()).ir) == ()
    assert spm_to_zero(_without_fills().ir) == (2,)


def test_job_1_does_not_see_job_0s_spm_in_a_timed_launch():
    io = _io()
    assert kdt.launch_kernel(_without_fills(), io, SPEC) == 22  # job 0: load 1->11, add 11->12, store 12->22
    assert io['y'].tolist() == [[2.0] * 4, [0.0] * 4]


def test_nor_in_the_functional_model_nor_in_a_replayed_launch():
    io = _io()
    assert kdt.launch_kernel(_without_fills(), io, SPEC, timing=False) is None
    assert io['y'].tolist() == [[2.0] * 4, [0.0] * 4]
    rec = Recording()
    kdt.launch_kernel(_without_fills(), _io(), SPEC, record=rec)
    again = _io(3.0)
    replay_kernel(rec, again)
    assert again['y'].tolist() == [[6.0] * 4, [0.0] * 4]


def test_the_front_ends_relay_is_zeroed_by_its_own_fill():
    io = _io()
    assert kdt.launch_kernel(relay.compile({}, io), io, SPEC) == 22  # fill 1, load 1->11, add, store 12->22
    assert io['y'].tolist() == [[2.0] * 4, [0.0] * 4]
