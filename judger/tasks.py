"""The contest as data: the four tasks, their ten test points, input generators and references
(spec judging.md, "The tasks").

Input generators take the test point's ``task_args`` and draw from the *global* torch RNG, in exactly
the spec's order; ``judger.grading`` seeds that RNG at the start of each test point. References are
computed from the generated inputs (before the launch, so a kernel that writes into its inputs cannot
move the reference).

torch and kdt are imported where they are used (the generators, references and ``tpu_spec``), not at the
top: the contest server's HTTP processes, the CLI and the leaderboard read the tasks as data (names,
weights, points, thresholds), and importing torch costs them seconds each.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

KiB = 1024


def _randn(*shape) -> torch.Tensor:
    import torch
    return torch.randn(*shape, dtype=torch.float32)


def _clip(t: torch.Tensor) -> torch.Tensor:
    return t.clamp(-1, 1)


@dataclass(frozen=True)
class TestPoint:
    """One test point: its task, index (from 0), ``task_args`` (str -> int) and threshold in cycles.

    Treat ``task_args`` as read-only; ``args()`` gives the copy that is handed to a submission."""

    __test__ = False  # not a pytest test class

    task_id: int
    index: int
    task_args: dict = field(hash=False)
    threshold: int

    def args(self) -> dict:
        """A fresh, mutable copy of ``task_args`` (what a kernel's ``compile`` receives)."""
        return dict(self.task_args)


@dataclass(frozen=True)
class Task:
    """One task: id, name, weight (its share of the 100 points), ``TPUSpec`` keyword arguments,
    tolerances ``(abs, rel)`` for ``check_is_allclose``, test points, the input names in generation
    order, the output's name, the input generator, the reference and the MXM work (None for task 1).

    Treat ``tpu`` as read-only; ``tpu_spec()`` builds the ``kdt.TPUSpec``."""

    id: int
    name: str
    weight: int
    tpu: dict = field(hash=False)
    tolerances: tuple
    points: tuple
    inputs: tuple = ()
    output: str = ""
    generate: Callable = field(default=None, compare=False, repr=False)
    reference: Callable = field(default=None, compare=False, repr=False)
    work: Callable | None = field(default=None, compare=False, repr=False)

    def tpu_spec(self) -> kdt.TPUSpec:
        import kdt
        return kdt.TPUSpec(**self.tpu)

    @property
    def num_sms(self) -> int:
        return self.tpu["num_sms"]

    def make_inputs(self, point: TestPoint) -> dict:
        """One trial's ``io_tensors`` (inputs and the output buffer), drawn from the global torch RNG."""
        io = self.generate(point.args())
        assert tuple(io) == self.inputs, (tuple(io), self.inputs)
        return io

    def expected(self, io: dict) -> torch.Tensor:
        """The reference output for these inputs."""
        return self.reference(io)

    def mxm_work(self, point: TestPoint) -> int | None:
        """Multiply-accumulates of the task's matrix products (None for task 1)."""
        return None if self.work is None else self.work(point.args())


# ---- task 1: vector add ---------------------------------------------------------------------------

def _gen_vadd(a):
    import torch
    n = a["N"]
    x = _randn(n)
    y = _randn(n)
    return {"a": x, "b": y, "c": torch.zeros(n, dtype=torch.float32)}


def _ref_vadd(io):
    return io["a"] + io["b"]


# ---- task 2: matmul --------------------------------------------------------------------------------

def _gen_matmul(a):
    import torch
    m, n, k = a["M"], a["N"], a["K"]
    A = _clip(_randn(m, k) / 10)
    B = _clip(_randn(k, n) / 10)
    return {"A": A, "B": B, "C": torch.zeros(m, n, dtype=torch.float32)}


def _ref_matmul(io):
    return io["A"] @ io["B"]


def _work_matmul(a):
    return a["M"] * a["N"] * a["K"]


# ---- task 3: matmul with fine-grain scales ---------------------------------------------------------

SCALE_BLOCK = 64


def _gen_scaled(a):
    import torch
    m, n, k = a["M"], a["N"], a["K"]
    Ab = _clip(_randn(m, k) / 10)
    As = _clip(_randn(m, k // SCALE_BLOCK) / 10)
    Bb = _clip(_randn(k, n) / 10)
    Bs = _clip(_randn(k // SCALE_BLOCK, n) / 10)
    return {"Ab": Ab, "As": As, "Bb": Bb, "Bs": Bs, "C": torch.zeros(m, n, dtype=torch.float32)}


def _ref_scaled(io):
    return (io["Ab"] * io["As"].repeat_interleave(SCALE_BLOCK, 1)) @ \
        (io["Bb"] * io["Bs"].repeat_interleave(SCALE_BLOCK, 0))


# ---- task 4: flash attention -----------------------------------------------------------------------

def _gen_attention(a):
    import torch
    s_qo, s_kv, d = a["S_qo"], a["S_kv"], a["D"]
    Q = _clip(_randn(s_qo, d) / 10)
    K = _clip(_randn(s_kv, d) / 10)
    V = _clip(_randn(s_kv, d) / 10)
    # empty_like(Q) in the original; NaN so that an unwritten output always fails the comparison.
    return {"Q": Q, "K": K, "V": V, "O": torch.full_like(Q, float("nan"))}


def _ref_attention(io):
    import torch
    return torch.softmax(io["Q"] @ io["K"].T, dim=-1) @ io["V"]


def _work_attention(a):
    return a["S_qo"] * a["S_kv"] * 2 * a["D"]


# ---- the contest -----------------------------------------------------------------------------------

def _points(task_id, names, rows):
    return tuple(TestPoint(task_id, i, dict(zip(names, sizes)), t) for i, (sizes, t) in enumerate(rows))


TASKS: dict[int, Task] = {
    1: Task(1, "vector add", 10, dict(num_sms=1, load_store_latency=50, spm_size=128 * KiB), (1e-5, 1e-5),
            _points(1, ("N",), [((16384,), 1919810), ((1048576,), 11000)]),
            ("a", "b", "c"), "c", _gen_vadd, _ref_vadd, None),
    2: Task(2, "matmul", 20, dict(num_sms=32, load_store_latency=1000, spm_size=384 * KiB), (1e-5, 2e-3),
            _points(2, ("M", "N", "K"), [((512, 1024, 2560), 23272), ((2048, 512, 3072), 54613)]),
            ("A", "B", "C"), "C", _gen_matmul, _ref_matmul, _work_matmul),
    3: Task(3, "matmul w/ fine grain scale", 30, dict(num_sms=32, load_store_latency=1000, spm_size=528 * KiB),
            (1e-5, 2e-3),
            _points(3, ("M", "N", "K"), [((512, 1024, 2560), 23272), ((2048, 512, 3072), 54613)]),
            ("Ab", "As", "Bb", "Bs", "C"), "C", _gen_scaled, _ref_scaled, _work_matmul),
    4: Task(4, "flash attention", 40, dict(num_sms=8, load_store_latency=1000, spm_size=640 * KiB), (1e-5, 2e-3),
            _points(4, ("S_qo", "S_kv", "D"), [((1024, 128, 128), 8000), ((1024, 2048, 128), 36408),
                                               ((1024, 4096, 128), 71234), ((2048, 4096, 128), 142469)]),
            ("Q", "K", "V", "O"), "O", _gen_attention, _ref_attention, _work_attention),
}

TASK_IDS = tuple(sorted(TASKS))
WEIGHTS: dict[int, int] = {t.id: t.weight for t in TASKS.values()}
POINTS_PER_TASK: dict[int, int] = {t.id: len(t.points) for t in TASKS.values()}
TRIALS = 3
COS_DIFF_TOL = 1e-7
TIMEOUT_S = 20.0


def get_task(task_id: int) -> Task:
    """The task with this id; raises ``KeyError`` naming the valid ids."""
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(f"no task {task_id!r}; tasks are {list(TASK_IDS)}") from None


def get_point(task_id: int, index: int) -> TestPoint:
    """Test point ``index`` (from 0) of a task; raises ``KeyError``."""
    points = get_task(task_id).points
    if not 0 <= index < len(points):
        raise KeyError(f"task {task_id} has test points 0..{len(points) - 1}, not {index!r}")
    return points[index]


def judging_work(task_id: int, index: int) -> int:
    """How much judging test point ``index`` of a task costs, to order work largest first (so that parallel
    processes finish together): its MXM multiply-accumulates, else the product of its ``task_args``
    (task 1: its N elements). A relative size, not a time."""
    task, point = get_task(task_id), get_point(task_id, index)
    return task.mxm_work(point) or math.prod(point.task_args.values())


def all_points():
    """Every (task, point) of the contest in order."""
    return [(task, point) for task in TASKS.values() for point in task.points]
