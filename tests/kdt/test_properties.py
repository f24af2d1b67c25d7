"""Issue 9's property test: random small kernels generated from the instruction table (``kdt.ir.ops``).

Each example is a straight-line kernel over a pool of global and SPM tiles, written twice: as KDT-DSL
source (compiled by the front end) and as a hand-built IR document (loaded by the strict IR loader).
Some operands are in the wrong memory space, or are scalars where a tile is needed. Properties:

* the front end refuses exactly the kernels with such an operand, with ``MemorySpaceError`` (a
  ``KeyError``) or ``TypeError`` for the first one, and the loader refuses their hand-built IR too;
* otherwise the front end's IR equals the hand-built one, and survives ``to_json``/``from_json``;
* the cycles and the per-job traces do not depend on the input data (two launches on different data).
"""
import contextlib
import importlib.util
import io as _io
import itertools
import json

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kdt
from kdt.ir.ops import OPS, SPACE_OF_KIND
from kdt.language import errors as E

# name -> (kind, shape, dtype); io tensors first, in io_tensors order
POOL = {"x": ("io", (4,), "float32"), "y": ("io", (4,), "float32"), "g": ("io", (2, 2), "float32"),
        "a": ("spm", (4,), "float32"), "b": ("spm", (4,), "float32"), "m": ("spm", (4,), "bool"),
        "p": ("spm", (2, 2), "float32"), "q": ("spm", (2, 2), "float32")}
NAMES = list(POOL)
SPM = [n for n in NAMES if POOL[n][0] == "spm"]
IO = [n for n in NAMES if POOL[n][0] == "io"]
HEADER = "import kdt\n\n\ndef two_jobs(task_args):\n    return 2\n\n\n@kdt.kernel(num_jobs_calculator=two_jobs)\n" \
         "def k(task_args, io_tensors):\n"
FIRST_LINE = HEADER.count("\n") + 1  # the first body line


def _tile_names(op, param):
    """Storages of the right shape for this operand (any space)."""
    if op == "matmul":
        return ["g", "p", "q"]
    if op == "reduce":
        return ["g", "p", "q"] if param == "x" else ["x", "a", "b"]  # out: a (2,) slice of a 1-D tile
    return ["x", "y", "a", "b", "m"]


@st.composite
def instruction(draw):
    """One instruction: ``(op, {param: operand})``; a tile operand is a storage name, ``2.0`` stands for a
    scalar given where a tile is needed; constants and scalars come from the table's kinds."""
    op = draw(st.sampled_from(sorted(OPS)))
    args = {}
    for p in OPS[op].params:
        if p.is_tile:
            names = _tile_names(op, p.name)
            good = [n for n in names if SPACE_OF_KIND[POOL[n][0]] == p.space]
            choice = draw(st.sampled_from(["good"] * 8 + ["wrong", "scalar"]))
            if choice == "good" or (choice == "wrong" and len(good) == len(names)):
                args[p.name] = draw(st.sampled_from(good))
            elif choice == "wrong":
                args[p.name] = draw(st.sampled_from([n for n in names if n not in good]))
            else:
                args[p.name] = 2.0
        elif p.kind == "scalar":
            args[p.name] = draw(st.booleans()) if p.name == "accumulate" else 2.0
        elif p.name == "dim":
            args[p.name] = 0
        elif p.name == "op":
            args[p.name] = draw(st.sampled_from(["sum", "max", "min"]))
        elif p.name == "value":
            args[p.name] = 1.5
        elif p.name == "msg":
            args[p.name] = "m"
        else:
            args[p.name] = False
    return op, args


def expected_refusal(program):
    """The front end's error class for the first bad operand, or None."""
    for op, args in program:
        for p in OPS[op].params:
            v = args[p.name]
            if p.is_tile and v == 2.0 and p.kind != "any":
                return E.TypeError
            if p.is_tile and isinstance(v, str) and SPACE_OF_KIND[POOL[v][0]] != p.space:
                return E.MemorySpaceError
    return None


def _operand_source(op, p, v):
    if not (p.is_tile and isinstance(v, str)):
        return repr(v)
    param = p.name
    base = f"io_tensors[{v!r}]" if POOL[v][0] == "io" else v
    return f"{base}[0:2]" if op == "reduce" and param == "out" else base


def source(program) -> str:
    lines = [f"    {n} = kdt.alloc_spm({POOL[n][1]!r}, {POOL[n][2]!r})" for n in SPM]
    for op, args in program:
        lines.append(f"    kdt.{op}(" + ", ".join(_operand_source(op, p, args[p.name])
                                                   for p in OPS[op].params) + ")")
    return HEADER + "\n".join(lines) + "\n"


def _view(name, op=None, param=None):
    shape = POOL[name][1]
    if op == "reduce" and param == "out":
        shape = (2,)
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return {"s": NAMES.index(name), "off": ["c", 0], "sizes": [["c", s] for s in shape], "strides": strides}


def hand_built(program) -> dict:
    """The IR document the front end should produce for ``source(program)``, written by hand."""
    body = [{"t": "inst", "op": "fill", "alloc": True, "line": FIRST_LINE + i, "col": 9,
             "args": {"out": _view(n), "value": 0}} for i, n in enumerate(SPM)]
    for i, (op, args) in enumerate(program):
        enc = {}
        for p in OPS[op].params:
            v = args[p.name]
            if p.is_tile:
                enc[p.name] = _view(v, op, p.name) if isinstance(v, str) else ["c", v]
            elif p.kind == "scalar":
                enc[p.name] = ["c", v]
            else:
                enc[p.name] = v
        body.append({"t": "inst", "op": op, "args": enc, "line": FIRST_LINE + len(SPM) + i, "col": 5,
                     "alloc": False})
    return {"format": "kdt-ir", "version": 1, "name": "k", "num_jobs": 2, "num_slots": 1,
            "storages": [{"kind": POOL[n][0], "name": n, "shape": list(POOL[n][1]), "dtype": POOL[n][2]}
                         for n in NAMES],
            "body": body}


def io_tensors(seed):
    g = torch.Generator().manual_seed(seed)
    return {n: (torch.rand(POOL[n][1], generator=g) * 4 - 2) for n in IO}


_COUNTER = itertools.count()


def compile_source(src, tmp_path):
    path = tmp_path / f"prop_{next(_COUNTER)}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.k.compile({}, io_tensors(0))


def launch(compiled, seed):
    """(cycles, traces of jobs 0-1) or the launch error's class."""
    prof = kdt.Profile(jobs=range(2))
    try:
        with contextlib.redirect_stdout(_io.StringIO()):
            cycles = kdt.launch_kernel(compiled, io_tensors(seed), kdt.TPUSpec(num_sms=1, load_store_latency=7),
                                       profile=prof)
    except kdt.simulator.errors.LaunchError as exc:
        return type(exc)
    return cycles, [prof.trace(j) for j in range(2)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=st.lists(instruction(), min_size=1, max_size=6))
def test_random_kernels_from_the_instruction_table(program, tmp_path):
    src, doc = source(program), hand_built(program)
    refusal = expected_refusal(program)
    if refusal is not None:
        with pytest.raises(E.CompilationError) as ei:
            compile_source(src, tmp_path)
        assert type(ei.value) is refusal, (str(ei.value), src)
        if refusal is E.MemorySpaceError:
            assert isinstance(ei.value, KeyError) and "load it into an SPM tile first" in str(ei.value) \
                or "kdt.copy moves data between SPM tiles" in str(ei.value) \
                or "then kdt.store that tile" in str(ei.value), str(ei.value)
        with pytest.raises(kdt.IRFormatError):  # the same kernel, hand-built, cannot pass the loader
            kdt.CompiledKernel.from_json(json.dumps(doc))
        return
    compiled = compile_source(src, tmp_path)
    assert compiled.to_dict() == doc, src
    again = kdt.CompiledKernel.from_json(compiled.to_json())
    assert again == compiled and again.to_json() == compiled.to_json()
    assert kdt.CompiledKernel.from_json(json.dumps(doc)) == compiled
    first = launch(compiled, 1)
    assert launch(again, 2) == first  # cycles and traces do not depend on the data
    if not isinstance(first, type):
        assert first[0] >= 1
        assert_replay_is_functional(compiled)


def assert_replay_is_functional(compiled):
    """A launch recorded on seed 1's data, replayed on seed 2's: the functional model's bits and prints."""
    spec = kdt.TPUSpec(num_sms=1, load_store_latency=7)
    rec = kdt.simulator.Recording()
    with contextlib.redirect_stdout(_io.StringIO()):
        kdt.launch_kernel(compiled, io_tensors(1), spec, record=rec)
    assert rec.complete
    runs = []
    for how in ("functional", "replay"):
        io, out = io_tensors(2), _io.StringIO()
        with contextlib.redirect_stdout(out):
            if how == "replay":
                kdt.simulator.replay_kernel(rec, io)
            else:
                kdt.launch_kernel(compiled, io, spec, timing=False)
        runs.append((out.getvalue(), {k: v.view(torch.int32) for k, v in io.items()}))
    (want_out, want), (got_out, got) = runs
    assert got_out == want_out
    assert all(torch.equal(got[k], want[k]) for k in want)
