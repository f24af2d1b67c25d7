"""Edge behaviour found in review: character columns, scalar ranges, conditional-expression errors,
per-instruction work limits, aliased io tensors, numpy job counts, IR limits enforced at compile time."""
import importlib.util
import json

import numpy as np
import pytest
import torch

import kdt
from kdt.ir import serialize
from kdt.language import errors as E
from kdt.simulator import errors as L

SPEC = kdt.TPUSpec(num_sms=1, load_store_latency=10)


def load(tmp_path, body: str, jobs: str = "1"):
    src = ("import kdt\n\n\ndef jobs(task_args):\n    return " + jobs + "\n\n\n"
           "@kdt.kernel(num_jobs_calculator=jobs)\ndef k(task_args, io_tensors):\n" + body)
    path = tmp_path / "k.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"k_{abs(hash(src))}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_error_columns_count_characters_not_bytes(tmp_path):
    line = "    t = kdt.alloc_spm((1,), name='ééé'); kdt.foo(1)"
    mod = load(tmp_path, line + "\n")
    with pytest.raises(E.SyntaxError) as info:
        mod.k.compile({}, {})
    col = line.index("kdt.foo") + 1  # 42 characters, but 45 UTF-8 bytes
    assert col == 42 and str(info.value).startswith(f"Line 10, Col {col}, ")


def test_integer_literals_beyond_the_scalar_range_are_located_compile_errors(tmp_path):
    mod = load(tmp_path, "    for i in range(123456789012345678901234567890):\n        kdt.get_job_id()\n")
    with pytest.raises(E.ConstantRequiredError, match=r"^Line 10, Col 20, integer constant"):
        mod.k.compile({}, {})


def test_folding_past_the_range_is_left_to_launch(tmp_path):
    mod = load(tmp_path, "    n = (1 << 62) * 4\n    t = kdt.alloc_spm((1,))\n    kdt.exp(t, t, n)\n")
    c = mod.k.compile({}, {})  # compiles: the product is not folded into an out-of-range constant
    with pytest.raises(L.ValueError, match="Line 12, kdt.exp: OverflowError"):  # where n is used (a lazy name)
        kdt.launch_kernel(c, {}, SPEC)


def test_conditional_expression_errors_name_their_line(tmp_path):
    mod = load(tmp_path, "    t = kdt.alloc_spm((4,))\n    n = task_args['n']\n    kdt.load(io_tensors['x'][(1 if n else 2):5], t)\n")
    io = {"x": torch.zeros(8)}
    c = mod.k.compile({"n": 3}, io)
    with pytest.raises(L.TypeError, match=r"^Line 12, kdt.load: a conditional expression needs a bool"):
        kdt.launch_kernel(c, io, SPEC)


def test_a_matmul_too_large_to_interrupt_is_refused(tmp_path):
    mod = load(tmp_path, "    a = kdt.alloc_spm((1, 1))\n    c = kdt.alloc_spm((1, 1))\n"
                         "    big = kdt.broadcast_to(kdt.broadcast_to(a, 0, 8192), 1, 8192)\n"
                         "    kdt.matmul(big, big, kdt.broadcast_to(kdt.broadcast_to(c, 0, 8192), 1, 8192))\n")
    c = mod.k.compile({}, {})
    with pytest.raises(L.ValueError, match="8192x8192x8192 matmul is more than the simulator handles"):
        kdt.launch_kernel(c, {}, SPEC)


def test_expanded_io_tensors_are_refused_before_simulating(tmp_path):
    mod = load(tmp_path, "    t = kdt.alloc_spm((4,))\n    kdt.store(t, io_tensors['y'])\n")
    c = mod.k.compile({}, {"y": torch.zeros(4)})
    with pytest.raises(L.ValueError, match="repeats memory"):
        kdt.launch_kernel(c, {"y": torch.zeros(1).expand(4)}, SPEC)


def test_num_jobs_as_a_numpy_integer_is_refused_like_in_the_handout(tmp_path):
    """Issue 9: the handout's compile fails for a numpy integer job count; True counts as one job."""
    mod = load(tmp_path, "    t = kdt.alloc_spm((4,))\n", jobs="np.int64(3)")
    mod.jobs.__globals__["np"] = np
    with pytest.raises(E.CompilationError, match=r"^num_jobs_calculator must return a positive int, got int64 "
                                                 r"np.int64\(3\) \(convert it with int\(...\)\)$"):
        mod.k.compile({}, {})
    mod = load(tmp_path, "    t = kdt.alloc_spm((4,))\n", jobs="True")
    assert mod.k.compile({}, {}).num_jobs == 1


def test_kernels_beyond_the_ir_byte_limit_fail_at_compile_time(tmp_path, monkeypatch):
    mod = load(tmp_path, "    t = kdt.alloc_spm((4,))\n" + "    kdt.add(t, t, t)\n" * 50)
    monkeypatch.setattr(serialize, "MAX_BYTES", 2000)  # the worker's loader would refuse it: compile must
    with pytest.raises(E.CompilationError, match="exceeds the limits of the KDT IR"):
        mod.k.compile({}, {})


def test_an_unset_scalar_operand_in_hostile_ir_is_a_type_error():
    """A slot assigned only in an untaken branch (the front end cannot produce this) used as exp's y."""
    ir = {"format": "kdt-ir", "version": 1, "name": "k", "num_jobs": 1, "num_slots": 2,
          "storages": [{"kind": "spm", "name": "t", "shape": [4], "dtype": "float32"}],
          "body": [{"t": "if", "cond": ["c", False], "line": 1, "else": [],
                    "then": [{"t": "assign", "slot": 1, "name": "y", "value": ["c", 2.0], "line": 1}]},
                   {"t": "inst", "op": "exp", "line": 2, "col": 1, "alloc": False,
                    "args": {"x": {"s": 0, "off": ["c", 0], "sizes": [["c", 4]], "strides": [1]},
                             "out": {"s": 0, "off": ["c", 0], "sizes": [["c", 4]], "strides": [1]},
                             "y": ["v", 1, "y"]}}]}
    c = kdt.CompiledKernel.from_json(json.dumps(ir))
    with pytest.raises(L.TypeError, match="y must be a number, got NoneType"):
        kdt.launch_kernel(c, {}, SPEC)


def test_scalar_names_that_double_at_each_step_are_refused_quickly(tmp_path):
    """A lazy scalar name stands for its expression: 'v1 = v0 + v0; v2 = v1 + v1; ...' would expand to
    2**39 nodes in the IR. The expanded size is counted over the shared graph and refused at compile time
    (integer chains stay small: they are kept in affine form)."""
    body = "    v0 = kdt.get_job_id() * 0.5\n" + "".join(f"    v{i} = v{i - 1} + v{i - 1}\n" for i in range(1, 40))
    mod = load(tmp_path, body + "    t = kdt.alloc_spm((1,))\n    kdt.exp(t, t, v39)\n")
    with pytest.raises(E.CompilationError, match="more than 2000000 IR nodes once every scalar name is replaced"):
        mod.k.compile({}, {})
    ints = "    v0 = kdt.get_job_id() + 1\n" + "".join(f"    v{i} = v{i - 1} + v{i - 1}\n" for i in range(1, 40))
    mod = load(tmp_path, ints + "    t = kdt.alloc_spm((1,), init_value=1.0)\n    kdt.exp(t, t, v39)\n    kdt.print(t)\n")
    out = __import__("io").StringIO()
    assert kdt.launch_kernel(mod.k.compile({}, {}), {}, SPEC, print_file=out) == 2  # fill 1, exp 1->2
    assert out.getvalue() == f"[Job 0] : {np.array([2.0 ** 39], dtype=np.float32)}\n"


def test_a_long_straight_line_block_stops_at_the_time_limit_not_at_its_end(tmp_path):
    import time

    from kdt.simulator.program import BLOCK_CHECK_EVERY

    n = 300
    body = ("    a = kdt.alloc_spm((256, 256))\n    c = kdt.alloc_spm((256, 256))\n"
            + "    kdt.matmul(a, a, c, accumulate=True)\n" * n)  # no loop: one block of 302 statements
    compiled = load(tmp_path, body).k.compile({}, {})
    t0 = time.process_time()
    kdt.launch_kernel(compiled, {}, SPEC, timing=False)
    whole = time.process_time() - t0
    limit = whole / 5
    with pytest.raises(TimeoutError, match=r"passed its time limit \(in the block at line 10\)"):
        kdt.launch_kernel(compiled, {}, SPEC, timeout=limit, clock=time.process_time, timing=False)
    t0 = time.process_time()
    with pytest.raises(TimeoutError):
        kdt.launch_kernel(compiled, {}, SPEC, timeout=limit, clock=time.process_time, timing=False)
    assert time.process_time() - t0 < limit + whole * 2 * BLOCK_CHECK_EVERY / n + 0.05  # stopped near the limit
