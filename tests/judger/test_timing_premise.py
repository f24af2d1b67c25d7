"""The premise of timing once (issue 14): every example submission's cycles on every test point are the
same for every trial's data and for data of another kind (zeros), so the judge times trial 1 only."""
import pytest
import torch

import kdt
from judger.grading import compile_point, kernel_for_task, launch_trial, load_submission, trial_inputs
from judger.tasks import all_points

from test_examples import BASELINE, BASELINE_CYCLES, OPTIMIZED, OPTIMIZED_CYCLES


@pytest.mark.slow
@pytest.mark.parametrize("path, cycles", [(BASELINE, BASELINE_CYCLES), (OPTIMIZED, OPTIMIZED_CYCLES)],
                         ids=["baseline", "optimized"])
def test_example_cycles_do_not_depend_on_the_data(path, cycles):
    module = load_submission(path)
    for task, point in all_points():
        compiled = compile_point(kernel_for_task(module, task.id), task, point)
        *_, last = trial_inputs(task, point)
        zeros = {k: torch.zeros_like(v) for k, v in last.items()}
        for label, io in (("trial 3", last), ("zeros", zeros)):
            got = kdt.launch_kernel(compiled, io, task.tpu_spec())
            assert got == cycles[(task.id, point.index)], (path.name, task.id, point.index, label)


@pytest.mark.slow
@pytest.mark.parametrize("path", [BASELINE, OPTIMIZED], ids=["baseline", "optimized"])
def test_trials_2_and_3_replayed_from_trial_1_equal_the_functional_model_bit_for_bit(path):
    """What ``judge_compiled`` does (``launch_trial`` with one Recording for the point): trial 1 timed and
    recorded, trials 2 and 3 replayed; every trial's output equals the functional model's on the same data."""
    module = load_submission(path)
    for task, point in all_points():
        compiled = compile_point(kernel_for_task(module, task.id), task, point)
        spec = task.tpu_spec()
        recording = kdt.simulator.Recording()
        for trial, io in enumerate(trial_inputs(task, point), 1):
            plain = {k: v.clone() for k, v in io.items()}
            kdt.launch_kernel(compiled, plain, spec, timing=False)
            c = launch_trial(compiled, io, spec, trial, recording=recording)
            assert (c is not None) == (trial == 1) and recording.complete
            out = task.output
            assert torch.equal(io[out].view(torch.int32), plain[out].view(torch.int32)), (path.name, task.id,
                                                                                        point.index, trial)


def test_an_incomplete_recording_leaves_the_functional_model():
    module = load_submission(OPTIMIZED)
    task, point = next((t, p) for t, p in all_points() if (t.id, p.index) == (4, 0))
    compiled = compile_point(kernel_for_task(module, task.id), task, point)
    spec = task.tpu_spec()
    recording = kdt.simulator.Recording(max_steps=3)
    for trial, io in enumerate(trial_inputs(task, point), 1):
        plain = {k: v.clone() for k, v in io.items()}
        kdt.launch_kernel(compiled, plain, spec, timing=False)
        c = launch_trial(compiled, io, spec, trial, recording=recording)
        assert c == (OPTIMIZED_CYCLES[(4, 0)] if trial == 1 else None) and not recording.complete
        assert torch.equal(io["O"].view(torch.int32), plain["O"].view(torch.int32)), trial
