"""Hand-computed timing scenarios (spec §3 SPM capacity, §4 timing) beyond the conformance set."""
import pytest
import torch

import kdt
from kdt.simulator.profile import JobRun


def one_job(task_args):
    return 1


def n_jobs(task_args):
    return task_args['n']


def launch(kernel, io, spec, task_args=None):
    prof = kdt.Profile()
    cycles = kdt.launch_kernel(kernel.compile(dict(task_args or {}), io), io, spec, profile=prof)
    return cycles, prof


# ---- SPM capacity ------------------------------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=one_job)
def spm_mix(task_args, io_tensors):
    b9 = kdt.alloc_spm((9,), dtype='bool')       # ceil(9 / 8) = 2 bytes
    b8 = kdt.alloc_spm((8,), dtype='bool')       # 1 byte
    b1 = kdt.alloc_spm((1,), dtype='bool')       # 1 byte (rounded up per storage)
    b15 = kdt.alloc_spm((3, 5), dtype='bool')    # 15 elements: 2 bytes
    b0 = kdt.alloc_spm((0,), dtype='bool')       # 0 bytes
    f = kdt.alloc_spm((3,))                      # 12 bytes
    kdt.load(io_tensors['x'], f)
    kdt.store(f, io_tensors['y'])


SPM_MIX_BYTES = 2 + 1 + 1 + 2 + 0 + 12


def test_spm_exactly_at_the_limit_passes_and_one_byte_less_fails():
    x = torch.tensor([1.0, 2.0, 3.0])
    io = {'x': x, 'y': torch.zeros(3)}
    # fills at 1; load 1->11; store 11->21
    cycles, _ = launch(spm_mix, io, kdt.TPUSpec(num_sms=1, load_store_latency=10, spm_size=SPM_MIX_BYTES))
    assert cycles == 21 and torch.equal(io['y'], x)
    io['y'].zero_()
    with pytest.raises(RuntimeError, match="SPM") as ei:
        launch(spm_mix, io, kdt.TPUSpec(num_sms=1, load_store_latency=10, spm_size=SPM_MIX_BYTES - 1))
    assert str(SPM_MIX_BYTES) in str(ei.value)
    assert torch.equal(io['y'], torch.zeros(3))  # checked before job 0: nothing ran


@kdt.kernel(num_jobs_calculator=one_job)
def two_bool_storages(task_args, io_tensors):
    a = kdt.alloc_spm((9,), dtype='bool')
    b = kdt.alloc_spm((9,), dtype='bool', init_value=True)
    kdt.logical_or(a, b, a)
    kdt.store(a, io_tensors['m'])


def test_bool_bytes_are_rounded_up_per_storage_not_in_total():
    io = {'m': torch.zeros(9, dtype=torch.bool)}
    # 2 + 2 bytes (not ceil(18 / 8) = 3); logical_or 1->2 (9 elements: 1 cycle); store 2->7
    cycles, _ = launch(two_bool_storages, io, kdt.TPUSpec(num_sms=1, load_store_latency=5, spm_size=4))
    assert cycles == 7 and io['m'].all()
    with pytest.raises(RuntimeError):
        launch(two_bool_storages, io, kdt.TPUSpec(num_sms=1, load_store_latency=5, spm_size=3))


@kdt.kernel(num_jobs_calculator=one_job)
def float_block(task_args, io_tensors):
    a = kdt.alloc_spm((256, 1024))
    kdt.store(a[0], io_tensors['y'])


def test_float32_spm_exactly_one_mebibyte():
    io = {'y': torch.ones(1024)}
    cycles, _ = launch(float_block, io, kdt.TPUSpec(num_sms=1, load_store_latency=5))  # default 1 MiB
    assert cycles == 6 and torch.equal(io['y'], torch.zeros(1024))
    with pytest.raises(RuntimeError):
        launch(float_block, io, kdt.TPUSpec(num_sms=1, load_store_latency=5, spm_size=1048575))


# ---- unit throughputs and matmul padding ---------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=one_job)
def throughputs(task_args, io_tensors):
    a = kdt.alloc_spm((250,))
    b = kdt.alloc_spm((129, 17))
    w = kdt.alloc_spm((17, 5))
    c = kdt.alloc_spm((129, 5))
    s = kdt.alloc_spm((2, 150))
    r = kdt.alloc_spm((150,))
    kdt.add(a, a, a)
    kdt.matmul(b, w, c)
    kdt.exp(a, a, 2.0)
    kdt.reduce(s, 0, 'max', r)
    kdt.store(c, io_tensors['y'])


def test_other_vxm_and_mxm_throughputs():
    io = {'y': torch.ones(129, 5)}
    spec = kdt.TPUSpec(num_sms=1, load_store_latency=5, vxm_trpt=100, mxm_trpt=1000)
    cycles, prof = launch(throughputs, io, spec)
    # add: ceil(250/100) = 3: 1->4. matmul: ceil(256*32*128/1000) = ceil(1048.576) = 1049: 2->1051.
    # exp waits for the VXM (and a): 4->7. reduce (300 elements): 3 cycles: 7->10. store 1051->1056.
    assert prof.trace(0)[6:] == [["add", 1, 4], ["matmul", 2, 1051], ["exp", 4, 7], ["reduce", 7, 10],
                                 ["store", 1051, 1056]]
    assert cycles == 1056
    # the defaults: add 2, matmul 1048576/2048 = 512, exp 2, reduce ceil(300/128) = 3
    cycles, prof = launch(throughputs, io, kdt.TPUSpec(num_sms=1, load_store_latency=5))
    assert prof.trace(0)[6:] == [["add", 1, 3], ["matmul", 2, 514], ["exp", 3, 5], ["reduce", 5, 8],
                                 ["store", 514, 519]]
    assert cycles == 519


@kdt.kernel(num_jobs_calculator=one_job)
def one_matmul(task_args, io_tensors):
    m = task_args['M']
    k = task_args['K']
    n = task_args['N']
    a = kdt.alloc_spm((m, k))
    b = kdt.alloc_spm((k, n))
    c = kdt.alloc_spm((m, n))
    kdt.matmul(a, b, c)


@pytest.mark.parametrize("M, K, N, trpt, latency", [
    (128, 16, 128, 2048, 128),
    (129, 16, 128, 2048, 256),     # M padded to 256
    (1, 1, 1, 2048, 128),          # 128 * 16 * 128 / 2048
    (1, 17, 1, 2048, 256),         # K padded to 32
    (128, 16, 129, 2048, 256),     # N padded to 256
    (256, 32, 256, 2048, 1024),
    (200, 33, 5, 2048, 768),       # 256 * 48 * 128 / 2048
    (128, 16, 128, 1000, 263),     # ceil(262144 / 1000)
    (128, 16, 128, 262144, 1),
    (128, 16, 128, 262145, 1),     # still at least one cycle
    (384, 512, 384, 2048, 36864),
])
def test_matmul_latency_padding(M, K, N, trpt, latency):
    spec = kdt.TPUSpec(num_sms=1, load_store_latency=1, mxm_trpt=trpt, spm_size=1 << 24)
    cycles, prof = launch(one_matmul, {}, spec,
                          {'M': M, 'K': K, 'N': N})
    assert prof.trace(0)[3] == ["matmul", 1, 1 + latency]
    assert cycles == 1 + latency


# ---- free instructions ---------------------------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=one_job)
def free_instructions(task_args, io_tensors):
    a = kdt.alloc_spm((128,))
    b = kdt.alloc_spm((128,))
    c = kdt.alloc_spm((128,))
    d = kdt.alloc_spm((128,))
    e = kdt.alloc_spm((128,))
    m = kdt.alloc_spm((128,), dtype='bool', init_value=True)
    kdt.load(io_tensors['x'], a)
    kdt.copy(a, b)
    kdt.add(c, c, d)
    kdt.fill(b, 1.0)
    kdt.load(io_tensors['x'], c)
    kdt.store(b, io_tensors['y'])
    kdt.print(d, "d")
    kdt.where(m, a, c, e)
    kdt.store(e, io_tensors['z'])


def test_free_instructions_wait_for_operands_but_do_not_hold_up_the_issue_unit(capsys):
    x = torch.randn(128)
    io = {'x': x, 'y': torch.zeros(128), 'z': torch.zeros(128)}
    cycles, prof = launch(free_instructions, io, kdt.TPUSpec(num_sms=1, load_store_latency=10))
    assert prof.trace(0)[6:] == [
        ["load", 1, 11],
        ["copy", 11, 11],    # waits for the load of a
        ["add", 2, 3],       # not held up by the copy: next_issue is still 2
        ["fill", 11, 11],    # writes b: waits for the copy's write (w[b] = 11)
        ["load", 3, 13],     # writes c: waits for the add's read (r[c] = 3)
        ["store", 11, 21],   # reads b (w = 11)
        ["print", 12, 12],   # next_issue = 12 after the store
        ["where", 13, 13],   # waits for the load of c
        ["store", 13, 23],
    ]
    assert cycles == 23
    assert torch.equal(io['y'], torch.ones(128)) and torch.equal(io['z'], x)
    assert capsys.readouterr().out.startswith("[Job 0] d: [0. 0. 0.")


@kdt.kernel(num_jobs_calculator=one_job)
def empty_views(task_args, io_tensors):
    a = kdt.alloc_spm((4, 128))
    kdt.add(a[0:0], a[0:0], a[1:1])
    kdt.load(io_tensors['x'], a[2])
    kdt.copy(a[3][5:5], a[3][0:0])
    kdt.store(a[2], io_tensors['y'])


def test_empty_views_take_no_time_but_still_issue():
    io = {'x': torch.ones(128), 'y': torch.zeros(128)}
    cycles, prof = launch(empty_views, io, kdt.TPUSpec(num_sms=1, load_store_latency=10))
    # add of 0 elements: latency 0 at cycle 1, next_issue 2; load 2->12; copy (free) 3->3; store 12->22
    assert prof.trace(0) == [["fill", 1, 1], ["add", 1, 1], ["load", 2, 12], ["copy", 3, 3], ["store", 12, 22]]
    assert cycles == 22 and torch.equal(io['y'], torch.ones(128))


@kdt.kernel(num_jobs_calculator=one_job)
def zero_latency_memory(task_args, io_tensors):
    a = kdt.alloc_spm((16,))
    kdt.load(io_tensors['x'], a)
    kdt.store(a, io_tensors['y'])
    kdt.store(a, io_tensors['y'])


def test_zero_memory_latency_still_occupies_the_issue_unit():
    io = {'x': torch.ones(16), 'y': torch.zeros(16)}
    cycles, prof = launch(zero_latency_memory, io, kdt.TPUSpec(num_sms=1, load_store_latency=0))
    assert prof.trace(0) == [["fill", 1, 1], ["load", 1, 1], ["store", 2, 2], ["store", 3, 3]]
    assert cycles == 3


def test_tpu_spec_validation():
    for bad in (dict(num_sms=0, load_store_latency=1), dict(num_sms=1, load_store_latency=-1),
                dict(num_sms=1.0, load_store_latency=1), dict(num_sms=True, load_store_latency=1),
                dict(num_sms=1, load_store_latency=1, vxm_trpt=0), dict(num_sms=1, load_store_latency=1, mxm_trpt=0),
                dict(num_sms=1, load_store_latency=1, spm_size=-1)):
        with pytest.raises(ValueError):
            kdt.TPUSpec(**bad)


# ---- spreading jobs over SMs -------------------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=n_jobs)
def uneven_jobs(task_args, io_tensors):
    j = kdt.get_job_id()
    t = kdt.alloc_spm((32,))
    reps = 3 if j == 3 else (2 if j % 5 == 0 else 1)
    for i in range(reps):
        kdt.load(io_tensors['x'][j], t)


# reps = [2, 1, 1, 3, 1, 2]: a job of r dependent loads (each waits for the previous one's write of t)
# ends at 1 + 10 r
JOB_CYCLES = [21, 11, 11, 31, 11, 21]


def test_greedy_assignment_with_ties_goes_to_the_lowest_sm():
    io = {'x': torch.zeros(6, 32)}
    cycles, prof = launch(uneven_jobs, io, kdt.TPUSpec(num_sms=3, load_store_latency=10), {'n': 6})
    # totals [0,0,0] -> job0 SM0 (tie) [21,0,0] -> job1 SM1 (tie SM1/SM2) [21,11,0] -> job2 SM2 [21,11,11]
    # -> job3 SM1 (tie at 11) [21,42,11] -> job4 SM2 [21,42,22] -> job5 SM0 (21 < 22) [42,42,22]
    assert prof.runs == [JobRun(0, 0, 0, 21), JobRun(1, 1, 0, 11), JobRun(2, 2, 0, 11), JobRun(3, 1, 11, 31),
                         JobRun(4, 2, 11, 11), JobRun(5, 0, 21, 21)]
    assert cycles == 42
    assert [r.cycles for r in prof.runs] == JOB_CYCLES
    assert prof.trace(3) == [["fill", 1, 1], ["load", 1, 11], ["load", 11, 21], ["load", 21, 31]]


def test_one_sm_takes_the_sum_and_more_sms_than_jobs_take_the_longest(capsys):
    io = {'x': torch.zeros(6, 32)}
    cycles, prof = launch(uneven_jobs, io, kdt.TPUSpec(num_sms=1, load_store_latency=10), {'n': 6})
    assert cycles == sum(JOB_CYCLES) == 106
    starts = [0, 21, 32, 43, 74, 85]
    assert prof.runs == [JobRun(j, 0, s, c) for j, (s, c) in enumerate(zip(starts, JOB_CYCLES))]
    cycles, prof = launch(uneven_jobs, io, kdt.TPUSpec(num_sms=8, load_store_latency=10), {'n': 4})
    assert cycles == 31  # jobs 0..3 on SMs 0..3, SMs 4..7 idle
    assert prof.runs == [JobRun(j, j, 0, c) for j, c in enumerate(JOB_CYCLES[:4])]
    cycles, prof = launch(uneven_jobs, io, kdt.TPUSpec(num_sms=8, load_store_latency=10), {'n': 1})
    assert cycles == 21 and prof.runs == [JobRun(0, 0, 0, 21)]


@kdt.kernel(num_jobs_calculator=n_jobs)
def shared_global(task_args, io_tensors):
    j = kdt.get_job_id()
    t = kdt.alloc_spm((8,))
    kdt.load(io_tensors['acc'], t)
    kdt.add(t, t, t)
    kdt.store(t, io_tensors['acc'])


def test_jobs_share_data_but_not_timing_state():
    """Job j sees the data stored by job j-1, but every job's stamps start from zero: all jobs take the
    same cycles."""
    io = {'acc': torch.ones(8)}
    cycles, prof = launch(shared_global, io, kdt.TPUSpec(num_sms=2, load_store_latency=10), {'n': 5})
    assert torch.equal(io['acc'], torch.full((8,), 32.0))
    # fill 1; load 1->11; add 11->12; store 12->22 for every job; jobs on SMs 0,1,0,1,0
    assert all(prof.trace(j) == [["fill", 1, 1], ["load", 1, 11], ["add", 11, 12], ["store", 12, 22]]
               for j in range(5))
    assert [(r.sm, r.start) for r in prof.runs] == [(0, 0), (1, 0), (0, 22), (1, 22), (0, 44)]
    assert cycles == 66


# ---- differential check against a literal model of §4 ---------------------------------------------------

import itertools
import json
import random

import numpy as np

from kdt.ir.ops import OPS, SPACE_OF_KIND

_RANDOM_OPS = ["load", "store", "copy", "add", "mul", "exp", "fma", "reduce", "matmul", "fill", "where", "print",
               "max", "le"]
_STORAGES = [("io", "x", (6, 8)), ("io", "y", (24,)), ("spm", "a", (4, 6)), ("spm", "b", (30,)), ("spm", "c", (2, 3, 4))]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class _Gen:
    """Random straight-line kernels (as IR documents) with strided, transposed, broadcast, negative-stride
    and job-dependent views; most are in bounds and well shaped, some are not."""

    def __init__(self, rng):
        self.rng = rng

    def view(self, shape, op, param):
        """A view for operand ``param`` of ``op``, in the memory space the instruction table names."""
        rng = self.rng
        space = OPS[op].param(param).space
        sid = rng.choice([i for i, (kind, _, _) in enumerate(_STORAGES) if SPACE_OF_KIND[kind] == space])
        n = _numel(_STORAGES[sid][2])
        strides = [rng.choice([0, 1, 1, 2, 3, 6, 8, -1, -2]) if s > 1 else rng.choice([0, 1, 5])
                   for s in shape]
        if rng.random() < 0.25 and shape:  # a dense row-major or transposed view
            acc, strides = 1, [0] * len(shape)
            order = list(range(len(shape)))[::-1] if rng.random() < 0.6 else rng.sample(range(len(shape)), len(shape))
            for d in order:
                strides[d] = acc
                acc *= shape[d]
        lo = sum((s - 1) * st for s, st in zip(shape, strides) if st < 0 and s > 0)
        hi = sum((s - 1) * st for s, st in zip(shape, strides) if st > 0 and s > 0)
        first, last = -lo, n - 1 - hi
        step = rng.choice([0, 0, 1, 2])  # job-dependent offsets
        if last - step * 2 >= first and rng.random() < 0.95:
            base = rng.randint(first, last - step * 2)
        else:
            base = rng.randint(-2, n + 2)  # probably out of bounds
        off = ["c", base] if step == 0 else ["bin", "+", ["c", base], ["bin", "*", ["job"], ["c", step]]]
        # sometimes a size that is only known at run time (job * 0 + s): the dynamic resolver paths
        sizes = [["c", s] if rng.random() < 0.85 else ["bin", "+", ["c", s], ["bin", "*", ["job"], ["c", 0]]]
                 for s in shape]
        return {"s": sid, "off": off, "sizes": sizes, "strides": strides}

    def shape(self):
        return tuple(self.rng.choice([1, 2, 3, 4]) for _ in range(self.rng.choice([0, 1, 1, 2, 2, 3])))

    def inst(self):
        rng = self.rng
        op = rng.choice(_RANDOM_OPS)
        shp = self.shape()
        args = {}
        if op == "matmul":
            m, k, n = rng.randint(1, 3), rng.randint(1, 3), rng.randint(1, 3)
            args = {"a": self.view((m, k), op, "a"), "b": self.view((k, n), op, "b"),
                    "out": self.view((m, n), op, "out"),
                    "accumulate": ["c", rng.random() < 0.5]}
        elif op == "reduce":
            shp = shp or (3,)
            dim = rng.randrange(len(shp))
            args = {"x": self.view(shp, op, "x"), "dim": dim, "op": rng.choice(["sum", "max", "min"]),
                    "out": self.view(shp[:dim] + shp[dim + 1:], op, "out")}
        else:
            for p in OPS[op].params:
                if p.kind in ("in", "out", "any"):
                    args[p.name] = self.view(shp if rng.random() < 0.97 else self.shape(), op, p.name)
                elif p.kind == "scalar":
                    args[p.name] = ["c", 2.0]
                elif p.name == "value":
                    args[p.name] = 1.5
                elif p.name == "msg":
                    args[p.name] = ""
                elif p.name == "print_only_if_job0":
                    args[p.name] = rng.random() < 0.5
        return {"t": "inst", "op": op, "args": args, "line": 1, "col": 1, "alloc": False}

    def kernel(self):
        storages = [{"kind": k, "name": n, "shape": list(s), "dtype": "float32"} for k, n, s in _STORAGES]
        body = [{"t": "inst", "op": "fill", "alloc": True, "line": 1, "col": 1,
                 "args": {"out": {"s": i, "off": ["c", 0], "sizes": [["c", x] for x in s],
                                  "strides": [_numel(s[d + 1:]) for d in range(len(s))]}, "value": 0}}
                for i, (k, _, s) in enumerate(_STORAGES) if k == "spm"]
        body += [self.inst() for _ in range(self.rng.randint(1, 10))]
        return {"format": "kdt-ir", "version": 1, "name": "random", "num_jobs": self.rng.randint(1, 4),
                "num_slots": 1, "storages": storages, "body": body}


def _elements(view, job, n):
    """The element indices of a view for ``job`` and whether it is inside its storage (spec §3)."""
    off = view["off"][1] if view["off"][0] == "c" else view["off"][2][1] + job * view["off"][3][3][1]
    sizes = [s[1] if s[0] == "c" else s[2][1] for s in view["sizes"]]
    strides = view["strides"]
    idx = [off + sum(i * st for i, st in zip(ix, strides)) for ix in itertools.product(*[range(s) for s in sizes])]
    if not idx:  # an empty view: the spec's formula as written
        ok = off >= 0 and off + sum((s - 1) * st for s, st in zip(sizes, strides)) < n
    else:
        ok = min(idx) >= 0 and max(idx) < n
    return np.array(idx, dtype=np.int64), ok, tuple(sizes)


def _compute(op, a, vals, shapes):
    """The result of one instruction (spec §3) from its input values (arrays shaped like the views)."""
    f32 = np.float32
    if op in ("load", "store", "copy"):
        return vals["src"]
    if op == "fill":
        return np.full(shapes["out"], f32(a["value"]), f32)
    if op in ("add", "mul", "max", "le"):
        uf = {"add": np.add, "mul": np.multiply, "max": np.maximum, "le": np.less}[op]
        return uf(vals["a"], vals["b"]).astype(f32)
    if op == "exp":
        return np.power(f32(a["y"][1]), vals["x"], dtype=f32)
    if op == "fma":
        return (vals["a"] * vals["b"] + vals["c"]).astype(f32)
    if op == "reduce":
        uf = {"sum": np.add, "max": np.maximum, "min": np.minimum}[a["op"]]
        return uf.reduce(vals["x"], axis=a["dim"]).astype(f32)
    if op == "matmul":
        prod = np.matmul(vals["a"].astype(np.float64), vals["b"].astype(np.float64))
        return (prod + vals["out"] if a["accumulate"][1] else prod).astype(f32)
    if op == "where":
        return np.where(vals["cond"] != 0, vals["a"], vals["b"]).astype(f32)
    raise AssertionError(op)


def _literal_model(doc, spec, io=None):
    """Per-job traces by spec §4, element by element, and (with ``io``, a list of flat float32 arrays of
    the io storages, updated in place) the data by §3; None where the launch must fail. Each trace entry
    also says why the instruction issued when it did, ``[op, issue, finish, cause, wait, gate]``, by the
    rule of ``kdt.simulator.explain`` (first term of isu/raw/waw/war/unit; gate: the last writer or reader
    of the first gating element in storage order, the unit's occupant or the previous issuing
    instruction), from per-element writer and reader arrays."""
    ns = [_numel(s["shape"]) for s in doc["storages"]]
    traces, job_cycles = [], []
    n_io = sum(1 for s in doc["storages"] if s["kind"] == "io")
    for job in range(doc["num_jobs"]):
        data = (io or [np.zeros(n, np.float32) for n in ns[:n_io]]) + [np.zeros(n, np.float32) for n in ns[n_io:]]
        w, r = [np.zeros(n, np.int64) for n in ns], [np.zeros(n, np.int64) for n in ns]
        wid, rid = [np.full(n, -1) for n in ns], [np.full(n, -1) for n in ns]
        owner, holder = {"vector": None, "matrix": None}, None
        next_issue, free, job_end, trace = 1, {"vector": 0, "matrix": 0}, 0, []
        for inst in doc["body"]:
            op, a = inst["op"], inst["args"]
            opspec = OPS[op]
            if op == "print" and a["print_only_if_job0"] and job != 0:
                continue
            views = {}
            for p in opspec.params:
                if p.kind in ("in", "out", "any"):
                    els, ok, shape = _elements(a[p.name], job, ns[a[p.name]["s"]])
                    if not ok:
                        return None
                    views[p.name] = (a[p.name]["s"], els, shape)
            ins = [views[n] for n in opspec.tile_inputs] + ([views["x"]] if op == "print" else [])
            out = views[opspec.tile_outputs[0]] if opspec.tile_outputs else None
            shapes = [v[2] for v in views.values()]
            if op == "matmul":
                (m, k), (k2, n_), o = views["a"][2], views["b"][2], views["out"][2]
                if k != k2 or o != (m, n_):
                    return None
                lat = -(-(-(-m // 128) * 128 * -(-k // 16) * 16 * -(-n_ // 128) * 128) // spec.mxm_trpt)
            elif op == "reduce":
                x, d = views["x"][2], a["dim"]
                if views["out"][2] != x[:d] + x[d + 1:]:
                    return None
                if 0 in x and a["op"] != "sum":
                    return None  # max/min over nothing
                lat = -(-_numel(x) // spec.vxm_trpt)
            else:
                if op not in ("fill", "print") and len(set(shapes)) > 1:
                    return None
                lat = {"memory": spec.load_store_latency, "free": 0}.get(opspec.klass)
                if opspec.klass == "vector":
                    lat = -(-_numel(views[opspec.tile_inputs[0]][2]) // spec.vxm_trpt)
            issue = next_issue
            if opspec.klass in free:
                issue = max(issue, free[opspec.klass])
            for sid, els, _ in ins + ([out] if out else []):
                issue = max(issue, int(w[sid][els].max()) if els.size else 0)
            if out:
                issue = max(issue, int(r[out[0]][out[1]].max()) if out[1].size else 0)
            finish = issue + lat
            why = _why(issue, next_issue, ins, out, w, r, wid, rid, owner.get(opspec.klass), holder)
            if out:
                names = [p.name for p in opspec.params if p.kind in ("in", "out") and p.name in views]
                vals = {n: data[views[n][0]][views[n][1]].reshape(views[n][2]) for n in names}
                result = _compute(op, inst["args"], vals, {n: views[n][2] for n in names})
                data[out[0]][out[1]] = np.broadcast_to(result, out[2]).reshape(-1)  # last write wins
            for sid, els, _ in ins:
                r[sid][els] = finish
                rid[sid][els] = len(trace)
            if out:
                w[out[0]][out[1]] = finish
                wid[out[0]][out[1]] = len(trace)
            if opspec.klass in free:
                if finish >= free[opspec.klass]:
                    owner[opspec.klass] = len(trace)
                free[opspec.klass] = max(free[opspec.klass], finish)
            if opspec.klass != "free":
                next_issue = issue + 1
                holder = len(trace)
            job_end = max(job_end, finish)
            trace.append([op, issue, finish, *why])
        traces.append(trace)
        job_cycles.append(job_end)
    return traces, job_cycles


def _why(issue, next_issue, ins, out, w, r, wid, rid, owner, holder):
    """``(cause, wait, gate)`` of one instruction by the literal model (see ``_literal_model``)."""
    if issue == next_issue:
        return "isu", 0, holder

    def gate(stamps, ids, sid, els):
        hit = np.sort(els[stamps[sid][els] == issue])
        return int(ids[sid][hit[0]]) if hit.size else None
    for sid, els, _ in ins:
        if els.size and w[sid][els].max() == issue:
            return "raw", issue - next_issue, gate(w, wid, sid, els)
    if out and out[1].size:
        if w[out[0]][out[1]].max() == issue:
            return "waw", issue - next_issue, gate(w, wid, out[0], out[1])
        if r[out[0]][out[1]].max() == issue:
            return "war", issue - next_issue, gate(r, rid, out[0], out[1])
    return "unit", issue - next_issue, owner


def _overlapping_output(doc):
    """A written view whose elements repeat through non-zero strides (e.g. strides (1, 1)): the DSL cannot
    make one, and which write wins there is unspecified; stride 0 (broadcast) is fine."""
    for inst in doc["body"]:
        for name in OPS[inst["op"]].tile_outputs:
            v = inst["args"][name]
            sizes = [x[1] if x[0] == "c" else x[2][1] for x in v["sizes"]]
            dims = [(sz, st) for sz, st in zip(sizes, v["strides"]) if st != 0 and sz > 1]
            els, _, _ = _elements({**v, "off": ["c", 0], "sizes": [["c", sz] for sz, _ in dims],
                                   "strides": [st for _, st in dims]}, 0, 10 ** 9)
            if len(set(els.tolist())) != len(els):
                return True
    return False


def _greedy(job_cycles, num_sms):
    totals = [0] * num_sms
    for c in job_cycles:
        sm = totals.index(min(totals))
        totals[sm] += c
    return max(totals)


def test_random_kernels_match_a_literal_model_of_section_4():
    """300 random kernels: the simulator's traces, per-job cycles and kernel cycles equal a plain
    element-by-element implementation of §4 (no epochs, no uniform stamps, no caches); kernels the
    model rejects must fail to launch."""
    _differential(random.Random(4), 300)


def _differential(rng, n):
    gen = _Gen(rng)
    checked = failed = values = 0
    for i in range(n):
        doc = gen.kernel()
        spec = kdt.TPUSpec(num_sms=rng.randint(1, 3), load_store_latency=rng.choice([0, 3, 10]),
                           vxm_trpt=rng.choice([1, 2, 128]), mxm_trpt=rng.choice([2048, 100000]))
        x0 = torch.from_numpy(np.random.default_rng(i).uniform(-1, 1, (6, 8)).astype(np.float32))
        ref_io = [x0.numpy().reshape(-1).copy(), np.zeros(24, np.float32)]
        expected = _literal_model(doc, spec, ref_io)
        k = kdt.CompiledKernel.from_json(json.dumps(doc))
        io = {'x': x0.clone(), 'y': torch.zeros(24)}
        prof = kdt.Profile()
        try:
            cycles = kdt.launch_kernel(k, io, spec, profile=prof, print_file=__import__("io").StringIO())
        except (IndexError, ValueError) as exc:
            assert expected is None, f"kernel {i}: launch failed ({exc!r}) but the model ran it:\n{json.dumps(doc)}"
            failed += 1
            continue
        assert expected is not None, f"kernel {i}: the model rejects it, the simulator ran it:\n{json.dumps(doc)}"
        traces, job_cycles = expected
        for j, t in enumerate(traces):
            assert prof.trace(j) == [e[:3] for e in t], f"kernel {i}, job {j}:\n{json.dumps(doc)}"
            why = [[s["cause"], s["wait"], s["gate"] and s["gate"]["index"]] for s in prof.stalls(j)]
            assert why == [e[3:] for e in t], f"kernel {i}, job {j}: stall reasons\n{json.dumps(doc)}"
        assert [run.cycles for run in prof.runs] == job_cycles
        assert cycles == _greedy(job_cycles, spec.num_sms)
        if not _overlapping_output(doc):
            for name, ref in zip(("x", "y"), ref_io):
                got = io[name].reshape(-1).numpy()
                assert np.allclose(got, ref, rtol=1e-4, atol=1e-5, equal_nan=True), \
                    f"kernel {i}: output {name}\n{got}\n{ref}\n{json.dumps(doc)}"
            values += 1
        checked += 1
    assert checked > n // 4 and failed > n // 10 and values > checked // 2, (checked, failed, values)
    return checked, failed, values
