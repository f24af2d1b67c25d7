"""Issue 9: accept exactly what the contest's handout accepts, with its meaning, and refuse what it refuses
with its class and stage (spec kdt-semantics.md §2, §3). Each rule has a kernel that runs (its cycles
computed by hand from §4 and its outputs asserted) or fails (class, stage and message asserted). Unless a
test says otherwise the machine is one SM with L_mem = 10."""
import contextlib
import io as _io
import json

import numpy as np
import pytest
import torch

import kdt
from kdt_testlib import line_of
from kdt.ir import nodes as irn
from kdt.ir.ops import OPS, SPACE_OF_KIND, STAGES
from kdt.language import errors as E
from kdt.simulator import errors as L

SPEC = kdt.TPUSpec(num_sms=1, load_store_latency=10)


def one_job(task_args):
    return 1


def two_jobs(task_args):
    return 2


def run(kernel, io, task_args=None, profile=None):
    """Compile, launch (also after a JSON round trip: same cycles) and return (cycles, stdout)."""
    compiled = kernel.compile(dict(task_args or {}), io)
    copy = {k: v.clone() for k, v in io.items()}
    out = _io.StringIO()
    with contextlib.redirect_stdout(out):
        cycles = kdt.launch_kernel(compiled, io, SPEC, profile=profile)
    with contextlib.redirect_stdout(_io.StringIO()):
        again = kdt.launch_kernel(kdt.CompiledKernel.from_json(compiled.to_json()), copy, SPEC)
    assert again == cycles and all(torch.equal(io[k], copy[k]) for k in io)
    return cycles, out.getvalue()


def launch_error(kernel, io, task_args=None):
    """The launch error of a kernel that compiles (stage: launch) and what it printed before failing."""
    compiled = kernel.compile(dict(task_args or {}), io)
    out = _io.StringIO()
    with pytest.raises(L.LaunchError) as ei, contextlib.redirect_stdout(out):
        kdt.launch_kernel(compiled, io, SPEC)
    return ei.value, out.getvalue()


def compile_error(kernel, io, task_args=None):
    with pytest.raises(E.CompilationError) as ei:
        kernel.compile(dict(task_args or {}), io)
    return ei.value


# ---- 1. memory spaces (spec §3) ---------------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=one_job)
def vadd_on_globals(task_args, io_tensors):
    kdt.add(io_tensors['a'], io_tensors['b'], io_tensors['c'])


@kdt.kernel(num_jobs_calculator=one_job)
def copy_instead_of_load(task_args, io_tensors):
    t = kdt.alloc_spm((4,))
    kdt.copy(io_tensors['a'], t)


@kdt.kernel(num_jobs_calculator=one_job)
def where_instead_of_store(task_args, io_tensors):
    t = kdt.alloc_spm((4,))
    m = kdt.alloc_spm((4,), dtype='bool')
    kdt.where(m, t, t, io_tensors['c'])


@kdt.kernel(num_jobs_calculator=one_job)
def matmul_on_globals(task_args, io_tensors):
    o = kdt.alloc_spm((2, 2))
    kdt.matmul(io_tensors['m'], io_tensors['m'], o)


VEC = {'a': torch.ones(4), 'b': torch.ones(4), 'c': torch.zeros(4), 'm': torch.ones(2, 2)}


@pytest.mark.parametrize("kernel, needle, operand, label, fix", [
    (vadd_on_globals, "io_tensors['a']", "a", "io_tensors['a']", "load it into an SPM tile first (kdt.load)"),
    (copy_instead_of_load, "io_tensors['a']", "src", "io_tensors['a']", "load it into an SPM tile first (kdt.load)"),
    (where_instead_of_store, "io_tensors['c']", "out", "io_tensors['c']",
     "write into an SPM tile first, then kdt.store that tile into the global tensor"),
    (matmul_on_globals, "io_tensors['m']", "a", "io_tensors['m']", "load it into an SPM tile first (kdt.load)"),
])
def test_a_tile_in_the_wrong_memory_space_is_a_located_compile_error_matching_key_error(kernel, needle, operand,
                                                                                         label, fix):
    exc = compile_error(kernel, dict(VEC))
    assert isinstance(exc, E.MemorySpaceError) and isinstance(exc, KeyError) and isinstance(exc, E.KeyError)
    line = line_of(kernel, needle)
    assert exc.line == line
    text = str(exc)  # KeyError would quote its message: ours is plain
    assert text.startswith(f"Line {line}, Col {exc.col}, kdt.") and not text.startswith("'")
    assert f"operand '{operand}' of kdt." in text and f"is {label}, in global memory" in text and text.endswith(fix)


@pytest.mark.parametrize("op, param, kind", [(op, p.name, kind) for op, spec in sorted(OPS.items())
                                             for p in spec.params if p.space for kind in ("io", "spm")])
def test_the_loader_and_the_simulator_apply_the_same_table(op, param, kind):
    """For every tile operand of every instruction and both storage kinds: a hand-made IR with that
    operand in that space loads exactly when the table allows it; one built in Python (no loader) is
    refused by the simulator before job 0 (MemorySpaceError, a KeyError)."""
    allowed = SPACE_OF_KIND[kind] == OPS[op].param(param).space
    doc = _one_instruction(op, {param: kind})
    if allowed:
        kdt.CompiledKernel.from_json(json.dumps(doc))
        return
    with pytest.raises(kdt.IRFormatError) as ei:
        kdt.CompiledKernel.from_json(json.dumps(doc))
    assert isinstance(ei.value, KeyError)
    assert f"$.body[0].args.{param}: operand '{param}' of kdt.{op} is " in str(ei.value)
    # the same instruction built as Python IR, skipping the loader
    ok = _one_instruction(op, {})
    kernel = kdt.ir.serialize.kernel_from_dict(ok)
    inst = kernel.body[0]
    bad_view = irn.View(0 if kind == "io" else 1, irn.Const(0), (irn.Const(4),), (1,))
    args = dict(inst.args, **{param: bad_view})
    hand = irn.Kernel(kernel.name, 1, kernel.io, kernel.storages, kernel.num_slots, (irn.Inst(op, args, 3),))
    with pytest.raises(L.MemorySpaceError, match=f"^Line 3, kdt.{op}: operand '{param}'") as ei:
        kdt.launch_kernel(kdt.CompiledKernel(hand), {'g': torch.zeros(4)}, SPEC)
    assert isinstance(ei.value, KeyError)


def _one_instruction(op, kinds):
    """An IR document with one global (id 0) and one SPM (id 1) storage of 4 float32 and one instruction
    ``op``; operand ``p`` lives in storage kind ``kinds.get(p)`` (default: the table's space)."""
    args = {}
    for p in OPS[op].params:
        if p.is_tile:
            kind = kinds.get(p.name) or ("io" if p.space == "global" else "spm")
            args[p.name] = {"s": 0 if kind == "io" else 1, "off": ["c", 0], "sizes": [["c", 4]], "strides": [1]}
        elif p.kind == "scalar":
            args[p.name] = ["c", False if p.name == "accumulate" else 2.0]
        elif p.name == "dim":
            args[p.name] = 0
        elif p.name == "op":
            args[p.name] = "sum"
        elif p.name == "value":
            args[p.name] = 1.0
        elif p.name == "msg":
            args[p.name] = ""
        else:
            args[p.name] = False
    if op == "reduce":
        args["out"]["sizes"], args["out"]["strides"] = [], []
    return {"format": "kdt-ir", "version": 1, "name": "k", "num_jobs": 1, "num_slots": 1,
            "storages": [{"kind": "io", "name": "g", "shape": [4], "dtype": "float32"},
                         {"kind": "spm", "name": "t", "shape": [4], "dtype": "float32"}],
            "body": [{"t": "inst", "op": op, "args": args, "line": 3, "col": 1, "alloc": False}]}


def test_the_table_says_when_each_rule_is_checked():
    assert STAGES["space"] == ("compile", "load", "build")
    assert OPS["load"].param("src").space == "global" and OPS["load"].param("dst").space == "spm"
    assert OPS["store"].param("src").space == "spm" and OPS["store"].param("dst").space == "global"
    others = {p.space for name, spec in OPS.items() if name not in ("load", "store") for p in spec.params
              if p.is_tile}
    assert others == {"spm"}


# ---- 2. what the handout accepts, with its meaning ----------------------------------------------------


@kdt.kernel(num_jobs_calculator=one_job)
def lazy_names(task_args, io_tensors):
    t = kdt.alloc_spm((4,))
    unused = 1 // 0
    for i in range(3):
        z = 12 // i
        if i != 0:
            kdt.load(io_tensors['x'][z], t)
            kdt.store(t, io_tensors['y'][i])


def test_scalar_names_are_evaluated_where_they_are_used():
    """'z = 12 // i' is only used under 'if i != 0:' and the unused '1 // 0' is never evaluated.
    fill 1; i=1: load 1->11, store 11->21; i=2: load waits for t's read (21) 21->31, store 31->41."""
    x = torch.arange(52.0).reshape(13, 4)
    io = {'x': x, 'y': torch.zeros(3, 4)}
    prof = kdt.Profile()
    assert run(lazy_names, io, profile=prof)[0] == 41
    assert prof.trace(0) == [["fill", 1, 1], ["load", 1, 11], ["store", 11, 21], ["load", 21, 31],
                             ["store", 31, 41]]
    assert torch.equal(io['y'], torch.stack([torch.zeros(4), x[12], x[6]]))
    assert not any(type(s) is irn.Assign for s in lazy_names.compile({}, io).ir.body)


@kdt.kernel(num_jobs_calculator=one_job)
def lazy_name_fails_where_used(task_args, io_tensors):
    t = kdt.alloc_spm((4,))
    z = 1 // 0
    kdt.load(io_tensors['x'][z], t)


def test_a_failing_scalar_name_fails_at_its_use():
    exc, _ = launch_error(lazy_name_fails_where_used, {'x': torch.zeros(2, 4)})
    assert isinstance(exc, ValueError)
    assert str(exc).startswith(f"Line {line_of(lazy_name_fails_where_used, 'kdt.load')}, kdt.load: "
                               "ZeroDivisionError")


@kdt.kernel(num_jobs_calculator=one_job)
def squeeze_any_size(task_args, io_tensors):
    a = kdt.alloc_spm((4, 8))
    kdt.load(io_tensors['x'], a)
    kdt.store(kdt.squeeze(a, 0), io_tensors['row'])
    kdt.store(kdt.squeeze(a, 1), io_tensors['col'])


def test_squeeze_of_a_dimension_whose_size_is_not_1_keeps_index_0():
    """fill 1, load 1->11, store 11->21, store 12->22."""
    x = torch.randn(4, 8)
    io = {'x': x, 'row': torch.zeros(8), 'col': torch.zeros(4)}
    assert run(squeeze_any_size, io)[0] == 22
    assert torch.equal(io['row'], x[0]) and torch.equal(io['col'], x[:, 0])


@kdt.kernel(num_jobs_calculator=two_jobs)
def broadcast_dynamic(task_args, io_tensors):
    j = kdt.get_job_id()
    t = kdt.alloc_spm((4,))
    r = kdt.alloc_spm((4,))
    kdt.load(io_tensors['x'], t)
    kdt.copy(kdt.broadcast_to(t[0:j + 1], 0, 4), r)
    kdt.store(r, io_tensors['y'][j])


def test_broadcast_to_a_dimension_of_run_time_size_is_accepted_whatever_the_size():
    """Job 1 broadcasts a dimension of size 2 (stride 0: element 0 everywhere). Per job: fills 1, load
    1->11, copy (free) 11->11, store 11->21; two jobs on one SM: 42."""
    x = torch.tensor([3.0, 5.0, 7.0, 9.0])
    io = {'x': x, 'y': torch.zeros(2, 4)}
    assert run(broadcast_dynamic, io)[0] == 42
    assert torch.equal(io['y'], torch.full((2, 4), 3.0))


@kdt.kernel(num_jobs_calculator=one_job)
def ignored_statements(task_args, io_tensors):
    t = kdt.alloc_spm((4,))
    j = kdt.get_job_id()
    j + 1
    j
    t
    t[0:2]
    1 // 0
    kdt.get_job_id()
    kdt.slice(t, 0, 0, 2)
    for i in range(2):
        kdt.load(io_tensors['x'], t)
    else:
        kdt.store(t, io_tensors['y'])


def test_expression_statements_and_for_else_blocks_are_ignored():
    """fill 1, load 1->11, load (waits for t's write) 11->21; the else block (a store) never runs."""
    io = {'x': torch.ones(4), 'y': torch.zeros(4)}
    prof = kdt.Profile()
    assert run(ignored_statements, io, profile=prof)[0] == 21
    assert prof.trace(0) == [["fill", 1, 1], ["load", 1, 11], ["load", 11, 21]]
    assert torch.equal(io['y'], torch.zeros(4))


@kdt.kernel(num_jobs_calculator=two_jobs)
def loose_constants(task_args, io_tensors):
    a = kdt.alloc_spm((2, 4))
    s = kdt.alloc_spm((2,))
    b = kdt.alloc_spm((4, 2))
    m = kdt.alloc_spm((2, 2))
    kdt.load(io_tensors['x'], a)
    kdt.reduce(a, 1.0, 'sum', s)
    kdt.copy(kdt.transpose(a, 0.0, True), b)
    kdt.matmul(a, b, m)
    kdt.matmul(a, b, m, 0.5)
    kdt.print(s, "s", print_only_if_job0=1)
    kdt.store(s, io_tensors['s'])
    kdt.store(m, io_tensors['m'])


def test_float_and_bool_constants_are_converted_as_in_the_handout():
    """dim 1.0 -> 1, (0.0, True) -> (0, 1), print_only_if_job0=1 -> True, accumulate=0.5 accumulates.
    Per job: 4 fills 1, load 1->11, reduce 11->12, copy 12->12, matmul (128 cycles) 12->140, matmul
    140->268, print (job 0 only, free) 141->141, store s 141->151, store m 268->278; 2 jobs: 556."""
    x = torch.arange(8.0).reshape(2, 4)
    io = {'x': x, 's': torch.zeros(2), 'm': torch.zeros(2, 2)}
    prof = kdt.Profile(jobs=range(2))
    cycles, out = run(loose_constants, io, profile=prof)
    assert cycles == 556
    assert prof.trace(0)[4:] == [["load", 1, 11], ["reduce", 11, 12], ["copy", 12, 12], ["matmul", 12, 140],
                                 ["matmul", 140, 268], ["print", 141, 141], ["store", 141, 151],
                                 ["store", 268, 278]]
    assert ["print", 141, 141] not in prof.trace(1)
    assert torch.equal(io['s'], x.sum(1)) and torch.equal(io['m'], 2 * (x @ x.T))
    assert out == "[Job 0] s: [ 6. 22.]\n"


@kdt.kernel(num_jobs_calculator=one_job)
def loose_signature(task_args, io_tensors, extra=1, *args, key=2, **kwargs):
    n = task_args['n']
    task_args = 3
    io = task_args + 1
    t = kdt.alloc_spm((4,))
    kdt.load(io_tensors['x'][n], t)
    kdt.store(t, io_tensors['y'])


def test_a_signature_with_more_parameters_and_top_level_assignments_to_the_parameters():
    """fill 1, load 1->11, store 11->21; 'task_args = 3' binds a new name in the body's scope."""
    x = torch.randn(3, 4)
    io = {'x': x, 'y': torch.zeros(4)}
    assert run(loose_signature, io, {'n': 2})[0] == 21
    assert torch.equal(io['y'], x[2])


@kdt.kernel(num_jobs_calculator=lambda task_args: True)
def bool_arguments(task_args, io_tensors):
    flag = task_args['flag']
    t = kdt.alloc_spm((4,))
    if flag:
        kdt.load(io_tensors['x'], t)
        kdt.store(t, io_tensors['y'])


def test_num_jobs_true_is_one_job_and_task_args_may_be_bools():
    """One job: fill 1, load 1->11, store 11->21."""
    io = {'x': torch.ones(4), 'y': torch.zeros(4)}
    assert run(bool_arguments, io, {'flag': True})[0] == 21 and torch.equal(io['y'], torch.ones(4))
    io = {'x': torch.ones(4), 'y': torch.zeros(4)}
    assert run(bool_arguments, io, {'flag': False})[0] == 1 and torch.equal(io['y'], torch.zeros(4))


@kdt.kernel(num_jobs_calculator=two_jobs)
def run_time_only_errors(task_args, io_tensors):
    j = kdt.get_job_id()
    bad = task_args['bad']
    t = kdt.alloc_spm((4,))
    s = kdt.alloc_spm((1,))
    kdt.load(io_tensors['x'], t)
    if j == bad:
        kdt.reduce(t, 0, 'mean', s[0])
    if j == bad + 10:
        kdt.reduce(t, 3, 'sum', s[0])
    if j == bad + 20:
        if t:
            kdt.fill(t, 1.0)
    kdt.store(t, io_tensors['y'])


def test_errors_the_handout_raises_only_when_the_code_runs_are_launch_errors_there():
    """Never reached (bad = 5): per job fills 1, load 1->11, store 11->21; two jobs 42."""
    io = {'x': torch.ones(4), 'y': torch.zeros(4)}
    assert run(run_time_only_errors, io, {'bad': 5})[0] == 42


@pytest.mark.parametrize("bad, cls, needle, text", [
    (1, "InternalError", "'mean'", "reduce op must be one of sum, max, min, got 'mean'"),
    (-9, "ValueError", "kdt.reduce(t, 3", "reduce dim 3 is out of range for a 1-D tile"),
    (-19, "TypeError", "if t:", "an if condition must be a bool scalar, got a tile"),
])
def test_and_they_fail_at_launch_when_the_statement_executes(bad, cls, needle, text):
    io = {'x': torch.ones(4), 'y': torch.zeros(4)}
    exc, _ = launch_error(run_time_only_errors, io, {'bad': bad})
    assert cls in {c.__name__ for c in type(exc).__mro__}
    assert str(exc).startswith(f"Line {line_of(run_time_only_errors, needle)}: {text}")
    assert torch.equal(io['y'], torch.ones(4))  # job 0 ran to its end: only job 1 reaches the statement


# ---- 3. what the handout refuses ------------------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=one_job)
def bare_alloc(task_args, io_tensors):
    kdt.alloc_spm((4,))


@kdt.kernel(num_jobs_calculator=one_job)
def alloc_of_a_name(task_args, io_tensors):
    n = 4
    t = kdt.alloc_spm(n)


@kdt.kernel(num_jobs_calculator=one_job)
def task_args_in_a_range(task_args, io_tensors):
    for i in range(task_args['n']):
        kdt.get_job_id()


def test_compile_refusals_with_the_handouts_class():
    exc = compile_error(bare_alloc, {})
    assert type(exc) is E.SemanticError and exc.line == line_of(bare_alloc, "kdt.alloc_spm")
    assert "the result of kdt.alloc_spm must be assigned to a name" in str(exc)
    exc = compile_error(alloc_of_a_name, {})
    assert type(exc) is E.TypeError and isinstance(exc, TypeError)
    assert str(exc).endswith("alloc_spm shape must be a tuple such as (64, 128) or an int literal, got 'n'")
    exc = compile_error(task_args_in_a_range, {}, {'n': 2})
    assert type(exc) is E.UnsupportedFeatureError
    assert str(exc) == (f"Line {line_of(task_args_in_a_range, 'for i')}, Col 20, a bare task_args[...] cannot be "
                        "a range bound: bind it to a name first (n = task_args['n']) or write it inside an expression")


@kdt.kernel(num_jobs_calculator=one_job)
def an_alias_of_task_args_in_a_range(task_args, io_tensors):
    ta = task_args
    for i in range(ta['n']):
        kdt.get_job_id()


@kdt.kernel(num_jobs_calculator=one_job)
def an_alias_of_task_args_in_a_shape(task_args, io_tensors):
    ta = task_args
    t = kdt.alloc_spm((ta['n'], 8))


@kdt.kernel(num_jobs_calculator=one_job)
def an_alias_inside_an_operator(task_args, io_tensors):
    ta = task_args
    t = kdt.alloc_spm((ta['n'] * 4,))
    for i in range(ta['n'] + 0):
        kdt.fill(t[i:i + 1], 1.0)


@kdt.kernel(num_jobs_calculator=one_job)
def the_same_with_literals(task_args, io_tensors):
    t = kdt.alloc_spm((2 * 4,))
    for i in range(2 + 0):
        kdt.fill(t[i:i + 1], 1.0)


def test_a_bare_subscript_of_an_alias_of_task_args_is_refused_like_task_args_itself():
    """The handout's reader of the resolved positions knows no subscript at all, whatever its base: a name
    bound to task_args (``ta = task_args``) is refused in those positions like ``task_args`` itself, and
    is an ordinary scalar inside an operator."""
    for kernel, what, fix in ((an_alias_of_task_args_in_a_range, "a range bound", "ta['n']"),
                              (an_alias_of_task_args_in_a_shape, "an alloc_spm shape item", "ta['n']")):
        exc = compile_error(kernel, {}, {'n': 2})
        assert type(exc) is E.UnsupportedFeatureError, (kernel, exc)
        assert f"a bare task_args[...] cannot be {what}: bind it to a name first (n = {fix})" in str(exc)
    assert run(an_alias_inside_an_operator, {}, {'n': 2}) == run(the_same_with_literals, {}) == (1, "")


@kdt.kernel(num_jobs_calculator=two_jobs)
def task_args_inside_operators(task_args, io_tensors):
    t = kdt.alloc_spm((task_args['N'] * 2,))
    u = kdt.alloc_spm((4,), init_value=task_args['K'] + 0.5)
    for i in range(task_args['N'] // 4):
        kdt.load(io_tensors['x'][kdt.get_job_id() * task_args['N'] + i * 4:kdt.get_job_id() * task_args['N'] + i * 4 + 4],
                 t[i * 4:i * 4 + 4])
    for i in range(-task_args['K'] + 3):
        kdt.add(t[task_args['N'] - 4:task_args['N'] - 0], u, t[task_args['N'] - 4:task_args['N'] - 0])
    r = kdt.alloc_spm((1,))
    kdt.reduce(kdt.unsqueeze(t[0:task_args['N'] + 0], task_args['K'] - 2), task_args['K'] - 1, 'sum', r)
    kdt.fill(u, task_args['K'] * 2)
    kdt.store(t[0:task_args['N'] * 1], io_tensors['y'][kdt.get_job_id()])
    kdt.store(r, io_tensors['r'][kdt.get_job_id()])
    kdt.store(u, io_tensors['u'][kdt.get_job_id()])
    if task_args['K'] == 2:
        kdt.print(u, "u", task_args['K'] == 2)


def test_task_args_inside_an_operator_is_an_ordinary_scalar_in_every_position(capsys):
    """Spec §2: only a bare task_args[...] is refused in the resolved positions. N=8, K=2 (2 jobs):
    t (16,), u = 2.5 until filled with 4; each job loads its 8 elements in two loads of 4, adds u once
    (range(1)) to the last 4 of them, reduces them into r (unsqueeze dim 0, reduce dim 1). Per job: fills
    of t and u 1, loads 1->11 2->12, add 12->13, fill of r 13 (free, at the next issue), reduce 13->14,
    fill of u 14, stores 14->24 (y), 15->25 (r), 16->26 (u), print 17 (free): 26 cycles, 2 jobs on 1 SM."""
    x = torch.arange(16.0)
    io = {'x': x, 'y': torch.zeros(2, 8), 'r': torch.zeros(2, 1), 'u': torch.zeros(2, 4)}
    cycles, out = run(task_args_inside_operators, io, {'N': 8, 'K': 2})
    expected_y = x.reshape(2, 8).clone()
    expected_y[:, 4:] += 2.5
    assert io['y'].tolist() == expected_y.tolist()
    assert io['r'].tolist() == [[float(expected_y[0].sum())], [float(expected_y[1].sum())]]
    assert io['u'].tolist() == [[4.0] * 4] * 2
    assert out == "[Job 0] u: [4. 4. 4. 4.]\n"
    assert cycles == 52


@kdt.kernel(num_jobs_calculator=one_job)
def missing_keys(task_args, io_tensors):
    n = task_args['nope']


def test_a_missing_key_is_a_compile_error_matching_key_error_with_a_plain_message():
    exc = compile_error(missing_keys, {'x': torch.zeros(1)}, {'n': 1})
    assert isinstance(exc, KeyError) and isinstance(exc, E.KeyError)
    assert str(exc) == (f"Line {line_of(missing_keys, 'nope')}, Col 9, task_args has no entry 'nope' "
                        "(its keys: 'n')")


@kdt.kernel(num_jobs_calculator=one_job)
def empty_views(task_args, io_tensors):
    off = task_args['off']
    t = kdt.alloc_spm((4,))
    kdt.load(io_tensors['x'][off:off], t[0:0])


@kdt.kernel(num_jobs_calculator=one_job)
def empty_columns(task_args, io_tensors):
    off = task_args['off']
    t = kdt.alloc_spm((4, 1))
    kdt.load(io_tensors['x'][0:0, off:off + 1], t[0:0, 0:1])


def test_an_empty_view_past_the_end_of_its_storage_is_an_index_error_or_a_value_error():
    """Spec §3's check counts a size-0 dimension as -stride: an empty view at the end (offset 4 of 4
    elements) is fine (fill 1, load 1->11); at offset 5 it fails the check (5 - 1 >= 4: IndexError, as the
    handout's 'Start index 12 with shape [0]' of recorded program s101/940). A view that passes the check
    but starts past the end (x (2, 4): sizes (0, 1), strides (4, 1), offset 9: 9 - 4 + 0 < 8)
    is the ValueError of the handout's numpy ('strides is incompatible with ... size of buffer')."""
    assert run(empty_views, {'x': torch.zeros(4)}, {'off': 4})[0] == 11
    exc, _ = launch_error(empty_views, {'x': torch.zeros(4)}, {'off': 5})
    assert type(exc) is L.OutOfBoundsError and isinstance(exc, IndexError)
    assert str(exc) == (f"Line {line_of(empty_views, 'kdt.load')}, kdt.load: view of 'x' (offset 5, sizes (0,), "
                        "strides (1,)) reaches element 4, outside its 4 elements")
    exc, _ = launch_error(empty_columns, {'x': torch.zeros(2, 4)}, {'off': 9})
    assert type(exc) is L.ValueError
    assert str(exc) == (f"Line {line_of(empty_columns, 'kdt.load')}, kdt.load: an empty view of 'x' starts at "
                        "element 9, past the end of its 8 elements")


@kdt.kernel(num_jobs_calculator=one_job)
def bool_operands(task_args, io_tensors):
    acc = task_args['acc']
    mode = task_args['mode']
    a = kdt.alloc_spm((2, 2))
    b = kdt.alloc_spm((2, 2), dtype='bool')
    if mode == 0:
        kdt.matmul(a, a, b, acc)
    else:
        kdt.log(b, a, 2.0)


def test_matmul_accumulating_into_a_bool_tile_and_log_of_a_bool_tile_are_launch_type_errors():
    assert run(bool_operands, {}, {'acc': False, 'mode': 0})[0] == 129  # fills 1, matmul 1->129
    exc, _ = launch_error(bool_operands, {}, {'acc': True, 'mode': 0})
    assert type(exc) is L.UFuncTypeError and str(exc).endswith(
        "kdt.matmul: 'out' is a bool tile, kdt.matmul needs float32 there when accumulate is true")
    exc, _ = launch_error(bool_operands, {}, {'acc': False, 'mode': 1})
    assert type(exc) is L.UFuncTypeError and str(exc).endswith("kdt.log: 'x' is a bool tile, kdt.log needs float32 there")


@kdt.kernel(num_jobs_calculator=one_job)
def bool_product(task_args, io_tensors):
    a = kdt.alloc_spm((2, 2), dtype='bool')
    b = kdt.alloc_spm((2, 2), dtype='bool')
    o = kdt.alloc_spm((2, 2), dtype='bool')
    kdt.load(io_tensors['a'], a)
    kdt.load(io_tensors['b'], b)
    kdt.load(io_tensors['o'], o)
    kdt.matmul(a, b, o, True)
    kdt.store(o, io_tensors['o'])


def test_a_bool_product_accumulates_into_a_bool_tile():
    """numpy accumulates a bool @ bool product into a bool tile (a logical or), as the handout does (recorded
    program s103/677); only a float product cannot be. fills 1, loads 1->11 2->12 3->13, matmul 13->141,
    store 141->151."""
    a, b = torch.tensor([[True, False], [False, False]]), torch.tensor([[False, True], [False, False]])
    o = torch.tensor([[False, False], [False, True]])
    io = {'a': a, 'b': b, 'o': o}
    assert run(bool_product, io)[0] == 151
    assert io['o'].tolist() == [[False, True], [False, True]]


@kdt.kernel(num_jobs_calculator=one_job)
def negative_alloc(task_args, io_tensors):
    s = kdt.alloc_spm((1,))
    kdt.print(s, "job started")
    t = kdt.alloc_spm((4, -1))


def test_a_negative_alloc_spm_dimension_is_a_launch_value_error_before_job_0():
    exc, out = launch_error(negative_alloc, {})
    assert type(exc) is L.ValueError and out == ""
    assert str(exc) == "alloc_spm of t with shape (4, -1): negative dimensions are not allowed"


# ---- 4. outputs ------------------------------------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=one_job)
def powers(task_args, io_tensors):
    xb = kdt.alloc_spm((4,), dtype='bool')
    x = kdt.alloc_spm((4,))
    o = kdt.alloc_spm((4,))
    kdt.load(io_tensors['xb'], xb)
    kdt.load(io_tensors['x'], x)
    kdt.exp(xb, o, 2.0)
    kdt.store(o, io_tensors['exp_b'])
    kdt.pow(xb, o, 0.5)
    kdt.store(o, io_tensors['pow_b'])
    kdt.pow(x, o, 0.5)
    kdt.store(o, io_tensors['pow_x'])
    kdt.print(xb, "xb")


def test_exp_and_pow_are_the_handouts_elementwise_float32_powers():
    """pow(-inf, 0.5) = inf and pow(-0.0, 0.5) = +0.0 (numpy's sqrt fast path would give nan and -0.0);
    a bool x counts as 0/1. fills 1, loads 1->11 2->12, exp 11->12, store 12->22, pow 22->23 (waits for
    the store's read of o), store 23->33, pow 33->34, store 34->44, print (free) 35."""
    io = {'xb': torch.tensor([True, False, True, False]), 'x': torch.tensor([-float('inf'), -0.0, 4.0, 0.0]),
          'exp_b': torch.zeros(4), 'pow_b': torch.zeros(4), 'pow_x': torch.zeros(4)}
    cycles, out = run(powers, io)
    assert cycles == 44
    assert io['exp_b'].tolist() == [2.0, 1.0, 2.0, 1.0]
    assert io['pow_b'].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert io['pow_x'].tolist() == [float('inf'), 0.0, 2.0, 0.0]
    assert not torch.signbit(io['pow_x'][1])
    assert out == "[Job 0] xb: [ True False  True False]\n"


# ---- 6. exp/log bases --------------------------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=two_jobs)
def bases(task_args, io_tensors):
    j = kdt.get_job_id()
    op = task_args['op']
    y = task_args['y0'] + j * task_args['dy']
    t = kdt.alloc_spm((4,))
    kdt.load(io_tensors['x'], t)
    if op == 0:
        kdt.exp(t, t, y)
    else:
        kdt.log(t, t, y)
    kdt.store(t, io_tensors['y'][j])


@pytest.mark.parametrize("op, y0, dy, bad", [(0, 1, -1, 0), (0, 2, -3, -1), (1, 2, -1, 1), (1, 1, -1, 1),
                                             (1, 2, -2, 0), (1, 3, -5, -2)])
def test_exp_and_log_bases_are_checked_per_job_when_they_execute(op, y0, dy, bad):
    """Job 0 runs with base y0 (fine unless y0 itself is bad); job 1's base is y0 + dy."""
    io = {'x': torch.ones(4) * 2, 'y': torch.zeros(2, 4)}
    exc, _ = launch_error(bases, io, {'op': op, 'y0': y0, 'dy': dy})
    name = "exp" if op == 0 else "log"
    assert type(exc) is L.ValueError
    rule = "a base y > 0" if op == 0 else "a base y > 0 and y != 1"
    assert str(exc).endswith(f"kdt.{name}: ValueError: kdt.{name} needs {rule}, got {float(bad)}")
    job0_ran = (op == 0 and y0 > 0) or (op == 1 and y0 > 0 and y0 != 1)
    assert torch.equal(io['y'][0], torch.full((4,), float(y0) ** 2 if op == 0 else np.log(2) / np.log(y0))
                       if job0_ran else torch.zeros(4))


def test_a_kernel_defined_inside_a_function_is_the_handouts_compile_indentation_error():
    def make():
        @kdt.kernel(num_jobs_calculator=one_job)
        def inner(task_args, io_tensors):
            t = kdt.alloc_spm((4,))
        return inner

    exc = compile_error(make(), {})
    assert isinstance(exc, IndentationError) and isinstance(exc, E.CompilationError)
    assert str(exc).endswith("kernel 'inner' is indented (defined inside a function, class or block): define it "
                             "at the top level of the file")


def test_raise_statements_cross_the_json_boundary_and_are_checked_by_the_loader():
    compiled = run_time_only_errors.compile({'bad': 1}, {'x': torch.ones(4), 'y': torch.zeros(4)})
    raises = [s for b in compiled.ir.body if type(b) is irn.If for s in b.then if type(s) is irn.Raise]
    assert [r.error for r in raises] == ["InternalError", "ValueError", "TypeError"]
    assert kdt.CompiledKernel.from_json(compiled.to_json()) == compiled
    assert "raise InternalError('reduce op must be one of sum, max, min, got ''mean''')" in compiled.ir_text() \
        or "raise InternalError(\"reduce op must be one of sum, max, min, got 'mean'\")" in compiled.ir_text()
    doc = json.loads(compiled.to_json())
    stmt = next(s for b in doc["body"] if b["t"] == "if" for s in b["then"] if s["t"] == "raise")
    for key, value, problem in [("error", "SystemExit", "is not one of"), ("msg", "x" * (2 ** 20 + 1), "longer than 1048576"),
                                ("line", True, "expected an integer")]:
        saved, stmt[key] = stmt[key], value
        with pytest.raises(kdt.IRFormatError, match=problem):
            kdt.CompiledKernel.from_json(json.dumps(doc))
        stmt[key] = saved


@kdt.kernel(num_jobs_calculator=one_job)
def bare_task_args_outside_resolved_positions(task_args, io_tensors):
    t = kdt.alloc_spm((4, 1))
    o = kdt.alloc_spm((4, 4))
    n = task_args['n']
    if task_args['n'] == 4:
        kdt.exp(kdt.broadcast_to(kdt.slice(t, 0, task_args['z'], task_args['n']), 1, task_args['n']), o, task_args['n'])
        kdt.matmul(o, o, o, task_args['z'])
    kdt.store(o, io_tensors['y'][0:n])


def test_a_bare_task_args_outside_the_resolved_positions_is_accepted():
    """Spec §2: a scalar assignment, an if condition, exp's y, matmul's accumulate, kdt.slice's start/end and
    broadcast_to's new_size take a bare task_args['k']: o = 4 ** 0 = 1, then o @ o = 4 (not accumulated).
    fills 1 1, exp 1->2, matmul 2->130 (128 cycles), store 130->140."""
    io = {'y': torch.zeros(4, 4)}
    cycles, _ = run(bare_task_args_outside_resolved_positions, io, {'n': 4, 'z': 0})
    assert cycles == 140 and io['y'].tolist() == [[4.0] * 4] * 4
