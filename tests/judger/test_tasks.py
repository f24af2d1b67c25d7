"""The contest's data (judging.md, "The tasks") and the inputs' exact generation order."""
import json

import pytest
import torch

import kdt
from judger.grading import seed_rngs, trial_inputs
from judger.tasks import TASKS, TRIALS, get_point, get_task

KiB = 1024


def test_task_table():
    rows = {t.id: (t.name, t.weight, dict(t.tpu), t.tolerances, t.inputs, t.output) for t in TASKS.values()}
    assert rows == {
        1: ("vector add", 10, dict(num_sms=1, load_store_latency=50, spm_size=128 * KiB), (1e-5, 1e-5),
            ("a", "b", "c"), "c"),
        2: ("matmul", 20, dict(num_sms=32, load_store_latency=1000, spm_size=384 * KiB), (1e-5, 2e-3),
            ("A", "B", "C"), "C"),
        3: ("matmul w/ fine grain scale", 30, dict(num_sms=32, load_store_latency=1000, spm_size=528 * KiB),
            (1e-5, 2e-3), ("Ab", "As", "Bb", "Bs", "C"), "C"),
        4: ("flash attention", 40, dict(num_sms=8, load_store_latency=1000, spm_size=640 * KiB), (1e-5, 2e-3),
            ("Q", "K", "V", "O"), "O"),
    }
    assert TASKS[3].tpu_spec() == kdt.TPUSpec(num_sms=32, load_store_latency=1000, spm_size=540672)


def test_test_point_table():
    points = [(p.task_id, p.index, p.task_args, p.threshold) for t in TASKS.values() for p in t.points]
    assert points == [
        (1, 0, {"N": 16384}, 1919810),
        (1, 1, {"N": 1048576}, 11000),
        (2, 0, {"M": 512, "N": 1024, "K": 2560}, 23272),
        (2, 1, {"M": 2048, "N": 512, "K": 3072}, 54613),
        (3, 0, {"M": 512, "N": 1024, "K": 2560}, 23272),
        (3, 1, {"M": 2048, "N": 512, "K": 3072}, 54613),
        (4, 0, {"S_qo": 1024, "S_kv": 128, "D": 128}, 8000),
        (4, 1, {"S_qo": 1024, "S_kv": 2048, "D": 128}, 36408),
        (4, 2, {"S_qo": 1024, "S_kv": 4096, "D": 128}, 71234),
        (4, 3, {"S_qo": 2048, "S_kv": 4096, "D": 128}, 142469),
    ]
    json.dumps([p.task_args for t in TASKS.values() for p in t.points])  # plain data


def test_lookup_errors():
    assert get_point(4, 3).threshold == 142469
    with pytest.raises(KeyError, match="no task 5"):
        get_task(5)
    with pytest.raises(KeyError, match="test points 0..1"):
        get_point(2, 2)


def test_args_is_a_copy():
    point = get_point(1, 0)
    args = point.args()
    args["N"] = 1
    assert point.task_args == {"N": 16384}


def _clip(t):
    return t.clamp(-1, 1)


def _spec_inputs(task_id, a):
    """judging.md's generation order, written out literally."""
    randn = lambda *s: torch.randn(*s, dtype=torch.float32)  # noqa: E731
    if task_id == 1:
        return {"a": randn(a["N"]), "b": randn(a["N"]), "c": torch.zeros(a["N"])}
    if task_id == 2:
        M, N, K = a["M"], a["N"], a["K"]
        A = _clip(randn(M, K) / 10)
        B = _clip(randn(K, N) / 10)
        return {"A": A, "B": B, "C": torch.zeros(M, N)}
    if task_id == 3:
        M, N, K = a["M"], a["N"], a["K"]
        Ab = _clip(randn(M, K) / 10)
        As = _clip(randn(M, K // 64) / 10)
        Bb = _clip(randn(K, N) / 10)
        Bs = _clip(randn(K // 64, N) / 10)
        return {"Ab": Ab, "As": As, "Bb": Bb, "Bs": Bs, "C": torch.zeros(M, N)}
    S_qo, S_kv, D = a["S_qo"], a["S_kv"], a["D"]
    Q = _clip(randn(S_qo, D) / 10)
    K = _clip(randn(S_kv, D) / 10)
    V = _clip(randn(S_kv, D) / 10)
    return {"Q": Q, "K": K, "V": V, "O": torch.full_like(Q, float("nan"))}


def _same(x: dict, y: dict) -> bool:
    return list(x) == list(y) and all(
        x[k].dtype == y[k].dtype and x[k].shape == y[k].shape and torch.equal(x[k].isnan(), y[k].isnan())
        and torch.equal(x[k].nan_to_num(), y[k].nan_to_num()) for k in x)


@pytest.mark.parametrize("task_id,index", [(1, 0), (2, 0), (3, 0), (4, 0), (4, 1)])
def test_inputs_follow_the_spec_order_for_all_three_trials(task_id, index):
    task, point = get_task(task_id), get_point(task_id, index)
    ours = list(trial_inputs(task, point))
    assert len(ours) == TRIALS
    torch.manual_seed(0)
    for trial in ours:
        assert _same(trial, _spec_inputs(task_id, point.task_args))
    # consecutive trials differ (the RNG is not re-seeded between them)
    assert not torch.equal(ours[0][task.inputs[0]], ours[1][task.inputs[0]])


def test_inputs_are_cpu_float32_contiguous_and_outputs_are_initialised():
    for task in TASKS.values():
        io = next(trial_inputs(task, task.points[0]))
        for name, t in io.items():
            assert t.dtype == torch.float32 and t.device.type == "cpu" and t.is_contiguous(), name
        out = io[task.output]
        if task.id == 4:
            assert out.isnan().all()
        else:
            assert (out == 0).all()
        for name in task.inputs:
            if name != task.output and task.id != 1:
                assert float(io[name].abs().max()) <= 1.0  # clipped


def test_seeding_resets_every_rng():
    import random

    import numpy
    seed_rngs()
    first = (random.random(), numpy.random.rand(), torch.rand(1).item())
    seed_rngs()
    assert (random.random(), numpy.random.rand(), torch.rand(1).item()) == first


def test_references():
    io = next(trial_inputs(TASKS[3], get_point(3, 0)))
    ref = TASKS[3].expected(io)
    # block (i, k) of A scaled by As[i, k // 64]; block (k, j) of B by Bs[k // 64, j]
    a = io["Ab"].clone()
    b = io["Bb"].clone()
    for kb in range(2560 // 64):
        a[:, kb * 64:(kb + 1) * 64] *= io["As"][:, kb:kb + 1]
        b[kb * 64:(kb + 1) * 64, :] *= io["Bs"][kb:kb + 1, :]
    torch.testing.assert_close(ref, a @ b, rtol=1e-5, atol=1e-7)
    io4 = next(trial_inputs(TASKS[4], get_point(4, 0)))
    s = io4["Q"] @ io4["K"].T
    p = torch.exp(s - s.max(dim=1, keepdim=True).values)
    torch.testing.assert_close(TASKS[4].expected(io4), (p / p.sum(dim=1, keepdim=True)) @ io4["V"])


def test_judging_work_sizes_points_by_their_multiply_adds_else_their_elements():
    from judger.tasks import judging_work

    assert judging_work(2, 1) == judging_work(3, 1) == 2048 * 512 * 3072
    assert judging_work(4, 3) == 2048 * 4096 * 2 * 128
    assert judging_work(1, 1) == 1048576 and judging_work(1, 0) == 16384
    with pytest.raises(KeyError):
        judging_work(5, 0)
