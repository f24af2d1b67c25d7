"""The JSON form of the IR (kdt.ir.serialize): lossless round trips, and a strict loader for untrusted
input (the sandboxed compiler child sends it to the trusted worker)."""
import contextlib
import copy
import io as _io
import json
import math
import random

import pytest
import torch

import kdt
from kdt_testlib import address_space_limit
from kdt.ir import nodes as irn
from kdt.ir import serialize as S
from kdt.ir.ops import BINARY_OPERATORS, BOOL_OPERATORS, COMPARE_OPERATORS, OPS, UNARY_OPERATORS
from kdt.language import errors as E


def one_job(task_args):
    return 1


def two_jobs(task_args):
    return 2


# ---- kernels covering the whole IR ---------------------------------------------------------------


@kdt.kernel(num_jobs_calculator=two_jobs)
def every_instruction(task_args, io_tensors):
    j = kdt.get_job_id()
    a = kdt.alloc_spm((4, 8))
    b = kdt.alloc_spm((4, 8), init_value=2)
    z = kdt.alloc_spm((4, 8), 'float32', 'zeros')
    t = kdt.alloc_spm((4, 8))
    w = kdt.alloc_spm((8, 8))
    m1 = kdt.alloc_spm((4, 8), dtype='bool')
    m2 = kdt.alloc_spm((4, 8), dtype='bool', name='mask2')
    red = kdt.alloc_spm((3, 8))
    kdt.load(io_tensors['x'][j], a)
    kdt.load(src=io_tensors['w'], dst=w)
    kdt.add(a, b, t)
    kdt.store(t, io_tensors['y'][j, 0])
    kdt.sub(a, b, t)
    kdt.store(t, io_tensors['y'][j, 1])
    kdt.mul(a, b, out=t)
    kdt.store(t, io_tensors['y'][j][2])
    kdt.div(a=a, b=b, out=t)
    kdt.store(t, io_tensors['y'][j, 3])
    kdt.max(a, b, t)
    kdt.store(t, io_tensors['y'][j, 4])
    kdt.min(a, b, t)
    kdt.store(t, io_tensors['y'][j, 5])
    kdt.exp(a, t, 2.0)
    kdt.store(t, io_tensors['y'][j, 6])
    kdt.log(t, t, 2.0)
    kdt.store(t, io_tensors['y'][j, 7])
    kdt.pow(a, t, 2)
    kdt.store(t, io_tensors['y'][j, 8])
    kdt.fma(a, b, a, t)
    kdt.store(t, io_tensors['y'][j, 9])
    kdt.matmul(a, w, t)
    kdt.store(t, io_tensors['y'][j, 10])
    kdt.matmul(a, w, t, True)
    kdt.store(t, io_tensors['y'][j, 11])
    kdt.le(a, b, m1)
    kdt.where(m1, a, z, t)
    kdt.store(t, io_tensors['y'][j, 12])
    kdt.store(m1, io_tensors['yb'][j, 0])
    kdt.leq(a, b, m2)
    kdt.store(m2, io_tensors['yb'][j, 1])
    kdt.eq(a, b, m1)
    kdt.store(m1, io_tensors['yb'][j, 2])
    kdt.neq(a, z, m2)
    kdt.store(m2, io_tensors['yb'][j, 3])
    kdt.logical_and(m1, m2, m1)
    kdt.store(m1, io_tensors['yb'][j, 4])
    kdt.le(a, z, m1)
    kdt.logical_or(m1, m2, m2)
    kdt.store(m2, io_tensors['yb'][j, 5])
    kdt.reduce(a, 0, 'sum', red[0])
    kdt.reduce(a, 0, 'max', red[1])
    kdt.reduce(x=a, dim=0, op='min', out=red[2])
    kdt.store(red, io_tensors['r'][j])
    kdt.copy(a, t)
    kdt.store(t, io_tensors['y'][j, 13])
    kdt.fill(x=t, value=1.5)
    kdt.store(t, io_tensors['y'][j, 14])
    kdt.fill(t, -2)
    kdt.store(t, io_tensors['y'][j, 15])
    kdt.print(red[0, 0:2], "red")
    kdt.print(red[1, 0:1], msg="j10", print_only_if_job0=True)


def every_instruction_io():
    g = torch.Generator().manual_seed(7)
    x = torch.randint(-6, 7, (2, 4, 8), generator=g).float() / 2  # exact halves, some equal to 0 and 2
    return {'x': x, 'w': torch.randn(8, 8, generator=g), 'y': torch.zeros(2, 16, 4, 8),
            'yb': torch.zeros(2, 6, 4, 8, dtype=torch.bool), 'r': torch.zeros(2, 3, 8)}


def every_instruction_expected(io):
    x, w = io['x'], io['w']
    y, yb, r = torch.zeros(2, 16, 4, 8), torch.zeros(2, 6, 4, 8, dtype=torch.bool), torch.zeros(2, 3, 8)
    for j in range(2):
        a, b, z = x[j], torch.full((4, 8), 2.0), torch.zeros(4, 8)
        y[j, 0], y[j, 1], y[j, 2], y[j, 3] = a + b, a - b, a * b, a / b
        y[j, 4], y[j, 5] = torch.maximum(a, b), torch.minimum(a, b)
        y[j, 6] = torch.pow(2.0, a)
        y[j, 7] = a  # log base 2 of 2**a
        y[j, 8] = a ** 2
        y[j, 9] = a * b + a
        y[j, 10] = a @ w
        y[j, 11] = 2 * (a @ w)
        y[j, 12] = torch.where(a < b, a, z)
        yb[j, 0], yb[j, 1], yb[j, 2], yb[j, 3] = a < b, a <= b, a == b, a != z
        yb[j, 4] = (a == b) & (a != z)
        yb[j, 5] = (a < z) | (a != z)
        r[j, 0], r[j, 1], r[j, 2] = a.sum(0), a.max(0).values, a.min(0).values
        y[j, 13], y[j, 14], y[j, 15] = a, 1.5, -2.0
    return {'y': y, 'yb': yb, 'r': r}


@kdt.kernel(num_jobs_calculator=two_jobs)
def scalar_operators(task_args, io_tensors):
    j = kdt.get_job_id()
    n = task_args['n']
    t = kdt.alloc_spm((4,))
    one = kdt.alloc_spm((1,), init_value=1.0)
    v = kdt.alloc_spm((22,))
    for i in range(1, n):
        for k in range(i, n + 1):
            p = i * 7 + k + j
            q = k - j + 1
            # exp(one, out, y) writes y ** 1, i.e. the scalar y as a float32; +100 keeps every base above 0
            kdt.exp(one, v[0:1], p - q + 100)
            kdt.exp(one, v[1:2], p / q + 100)
            kdt.exp(one, v[2:3], p // q + 100)
            kdt.exp(one, v[3:4], p % q + 100)
            kdt.exp(one, v[4:5], (p & q) + 100)
            kdt.exp(one, v[5:6], (p | q) + 100)
            kdt.exp(one, v[6:7], (p ^ q) + 100)
            kdt.exp(one, v[7:8], (p << q) + 100)
            kdt.exp(one, v[8:9], (p >> q) + 100)
            kdt.exp(one, v[9:10], 101 if p < q * 3 else 100)
            kdt.exp(one, v[10:11], 101 if p <= q * 4 else 100)
            kdt.exp(one, v[11:12], 101 if p > q * 3 else 100)
            kdt.exp(one, v[12:13], 101 if p >= q * 4 else 100)
            kdt.exp(one, v[13:14], 101 if p == 9 else 100)
            kdt.exp(one, v[14:15], 101 if p != 9 else 100)
            kdt.exp(one, v[15:16], -p + 100)
            kdt.exp(one, v[16:17], +q + 100)
            kdt.exp(one, v[17:18], 101 if not p > q else 100)
            kdt.exp(one, v[18:19], 101 if p > 9 and q > 1 else 100)
            kdt.exp(one, v[19:20], 101 if p > 12 or q > 2 else 100)
            kdt.exp(one, v[20:21], (p if p > q * 3 else q) + 100)
            even = p % 2 == 0
            if even:
                kdt.exp(one, v[21:22], p + 100)
            elif q > 2:
                kdt.exp(one, v[21:22], q + 200)
            else:
                kdt.exp(one, v[21:22], q + 300)
            kdt.store(v, io_tensors['s'][j, (i - 1) * n + k - 1])
            kdt.load(io_tensors['x'][(i ^ k) & 3], t)
            kdt.add(t, t, t)
            kdt.store(t, io_tensors['y'][j, i * 4 + k - 5])


def scalar_operators_expected(io, n=3):
    """Python's value of every scalar expression of ``scalar_operators``, plus 100, as a float32."""
    s = torch.zeros(2, 6, 22)
    for j in range(2):
        for i in range(1, n):
            for k in range(i, n + 1):
                p, q = i * 7 + k + j, k - j + 1
                vals = [p - q, p / q, p // q, p % q, p & q, p | q, p ^ q, p << q, p >> q,
                        p < q * 3, p <= q * 4, p > q * 3, p >= q * 4, p == 9, p != 9, -p, +q, not p > q,
                        p > 9 and q > 1, p > 12 or q > 2, p if p > q * 3 else q]
                vals.append(p if p % 2 == 0 else (q + 100 if q > 2 else q + 200))
                s[j, (i - 1) * n + k - 1] = torch.tensor([float(x) + 100 for x in vals], dtype=torch.float64).float()
    return {'s': s}


def scalar_operators_io():
    return {'x': torch.arange(16.).reshape(4, 4), 'y': torch.zeros(2, 8, 4), 's': torch.zeros(2, 6, 22)}


@kdt.kernel(num_jobs_calculator=one_job)
def views(task_args, io_tensors):
    q = kdt.alloc_spm((4, 8))
    k = kdt.alloc_spm((6, 8))
    s = kdt.alloc_spm((4, 6))
    m = kdt.alloc_spm((4,))
    row = kdt.alloc_spm((8,))
    kdt.load(io_tensors['q'], q)
    kdt.load(io_tensors['k'], k)
    kdt.matmul(q, kdt.transpose(k, 0, 1), s)
    kdt.reduce(s, 1, 'max', m)
    kdt.sub(s, kdt.broadcast_to(kdt.unsqueeze(m, 1), 1, 6), s)
    kdt.store(s, io_tensors['s'])
    kdt.store(kdt.transpose(q, dim1=0, dim2=1), io_tensors['qt'])
    kdt.copy(kdt.squeeze(kdt.slice(q, 0, 2, 3), 0), row)
    kdt.add(row, kdt.transpose(x=kdt.unsqueeze(row, 1), dim0=0, dim1=1)[0], row)
    kdt.store(row, io_tensors['row'])


def views_io():
    g = torch.Generator().manual_seed(3)
    return {'q': torch.randn(4, 8, generator=g), 'k': torch.randn(6, 8, generator=g), 's': torch.zeros(4, 6),
            'qt': torch.zeros(8, 4), 'row': torch.zeros(8)}


def views_expected(io):
    s = io['q'] @ io['k'].T
    return {'s': s - s.max(1, keepdim=True).values, 'qt': io['q'].T.contiguous(), 'row': io['q'][2] * 2}


KERNELS = {
    "every_instruction": (every_instruction, {}, every_instruction_io, every_instruction_expected, None),
    "scalar_operators": (scalar_operators, {'n': 3}, scalar_operators_io, scalar_operators_expected, None),
    "views": (views, {}, views_io, views_expected, None),
}


def compile_named(name):
    fn, args, make_io, _, _ = KERNELS[name]
    return fn.compile(dict(args), make_io())


def launch(compiled, io, spec=None, **kw):
    out = _io.StringIO()
    prof = kdt.Profile()
    with contextlib.redirect_stdout(out):
        cycles = kdt.launch_kernel(compiled, io, spec or kdt.TPUSpec(num_sms=2, load_store_latency=7),
                                   profile=prof, **kw)
    return cycles, out.getvalue(), prof


def walk_ir(kernel):
    """Every statement and expression node of a kernel."""
    found = []

    def expr(e):
        found.append(e)
        t = type(e)
        if t is irn.Unary:
            expr(e.operand)
        elif t in (irn.Binary, irn.Compare):
            expr(e.left)
            expr(e.right)
        elif t is irn.BoolOp:
            for v in e.values:
                expr(v)
        elif t is irn.IfExp:
            expr(e.cond)
            expr(e.then)
            expr(e.orelse)

    def view(v):
        expr(v.offset)
        for s in v.sizes:
            expr(s)

    def stmts(body):
        for s in body:
            found.append(s)
            t = type(s)
            if t is irn.Assign:
                expr(s.value)
            elif t is irn.For:
                expr(s.start)
                expr(s.end)
                stmts(s.body)
            elif t is irn.If:
                expr(s.cond)
                stmts(s.then)
                stmts(s.orelse)
            else:
                for v in s.args.values():
                    if isinstance(v, irn.View):
                        view(v)
                    elif isinstance(v, (irn.Const, irn.Var, irn.JobId, irn.Unary, irn.Binary, irn.Compare,
                                        irn.BoolOp, irn.IfExp)):
                        expr(v)
    stmts(kernel.body)
    return found


# ---- round trips ---------------------------------------------------------------------------------


def test_the_round_trip_kernels_cover_the_whole_ir():
    nodes = [n for name in KERNELS for n in walk_ir(compile_named(name).ir)]
    ops = {n.op for n in nodes if type(n) is irn.Inst}
    assert ops == set(OPS)
    assert {n.op for n in nodes if type(n) is irn.Binary} == set(BINARY_OPERATORS)
    assert {n.op for n in nodes if type(n) is irn.Compare} == set(COMPARE_OPERATORS)
    assert {n.op for n in nodes if type(n) is irn.Unary} == set(UNARY_OPERATORS)
    assert {n.op for n in nodes if type(n) is irn.BoolOp} == set(BOOL_OPERATORS)
    kinds = {type(n) for n in nodes}
    # (the front end emits no Assign: scalar names are lazy; BASE's hand-made one covers it)
    assert {irn.For, irn.If, irn.Inst, irn.Const, irn.Var, irn.JobId, irn.IfExp} <= kinds
    fors = [n for n in nodes if type(n) is irn.For]
    assert any(type(s) is irn.For for f in fors for s in f.body), "no nested for"
    assert any(type(n) is irn.If and n.orelse for n in nodes), "no else branch"
    views_ = [v for n in nodes if type(n) is irn.Inst for v in n.args.values() if isinstance(v, irn.View)]
    assert any(st == 0 and type(sz) is irn.Const and sz.value > 1 for v in views_
               for sz, st in zip(v.sizes, v.strides)), "no broadcast view"
    assert any(list(v.strides) != sorted(v.strides, reverse=True) for v in views_), "no transposed view"
    assert any(n.alloc for n in nodes if type(n) is irn.Inst) and \
        any(not n.alloc for n in nodes if type(n) is irn.Inst and n.op == "fill")
    prints = [n for n in nodes if type(n) is irn.Inst and n.op == "print"]
    assert prints and all(isinstance(p.args["x"], irn.View) for p in prints)
    assert any(p.args["print_only_if_job0"] for p in prints)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_round_trip_is_lossless_and_simulates_identically(name):
    fn, args, make_io, expected, stdout = KERNELS[name]
    c = compile_named(name)
    text = c.to_json()
    back = kdt.CompiledKernel.from_json(text)
    assert back == c and back.ir == c.ir
    assert back.to_json() == text
    assert kdt.CompiledKernel.from_json(text.encode("utf-8")) == c  # bytes are accepted too
    assert back.num_jobs == c.num_jobs and back.io == c.io
    io1, io2 = make_io(), make_io()
    cyc1, out1, p1 = launch(c, io1)
    cyc2, out2, p2 = launch(back, io2)
    assert cyc1 == cyc2 and cyc1 > 0
    assert out1 == out2
    assert p1.traces == p2.traces and p1.runs == p2.runs
    for key in io1:
        assert torch.equal(io1[key], io2[key]), key
    if expected is not None:
        for key, ref in expected(io1).items():
            assert io1[key].dtype == ref.dtype, key
            assert torch.allclose(io1[key], ref, rtol=1e-5, atol=1e-5) if ref.dtype != torch.bool \
                else torch.equal(io1[key], ref), key
    if stdout is not None:
        assert out1.splitlines() == stdout


def test_every_instruction_prints_as_specified():
    _, out, _ = launch(compile_named("every_instruction"), every_instruction_io())
    lines = out.splitlines()
    assert lines[0].startswith("[Job 0] red: [") and lines[1].startswith("[Job 0] j10: [")
    assert lines[2].startswith("[Job 1] red: [") and lines[2].endswith("]") and "array" not in out
    assert len(lines) == 3


def test_scalar_operator_kernel_writes_its_rows():
    io = scalar_operators_io()
    launch(compile_named("scalar_operators"), io)
    for j in range(2):
        for i in range(1, 3):
            for k in range(i, 4):
                assert torch.equal(io['y'][j, i * 4 + k - 5], io['x'][(i ^ k) & 3] * 2)


def test_round_trip_of_special_float_constants():
    """Infinity and -0.0 survive JSON (NaN too, though NaN != NaN makes the kernels compare unequal)."""
    d = compile_named("views").to_dict()
    fills = [s for s in d["body"] if s["t"] == "inst" and s["op"] == "fill"]
    fills[0]["args"]["value"] = float("inf")
    fills[1]["args"]["value"] = -0.0
    fills[2]["args"]["value"] = float("nan")
    k = S.loads(json.dumps(d))
    values = [s.args["value"] for s in k.body if type(s) is irn.Inst and s.op == "fill"]
    assert values[0] == float("inf") and str(values[1]) == "-0.0" and values[2] != values[2]
    text = S.dumps(k)
    assert "Infinity" in text and "NaN" in text and "-0.0" in text
    assert S.dumps(S.loads(text)) == text


# ---- rejection of untrusted JSON -----------------------------------------------------------------

PLAIN = compile_named("every_instruction").to_dict()
# The front end emits no assignments (a scalar name stands for its expression), but the IR still has
# them: the base document starts with one, so that its checks are covered too.
BASE = json.loads(json.dumps(PLAIN))
BASE["num_slots"] += 1
BASE["body"].insert(0, {"t": "assign", "slot": BASE["num_slots"] - 1, "name": "v",
                        "value": ["bin", "*", ["job"], ["c", 10]], "line": 9})
BASE_TEXT = json.dumps(BASE)


def base():
    return json.loads(BASE_TEXT)


def index_of(d, op, nth=0):
    hits = [i for i, s in enumerate(d["body"]) if s["t"] == "inst" and s["op"] == op]
    return hits[nth]


def rejects(data, *fragments, via_json=True):
    """``data`` (a dict, or text/bytes) must be rejected with IRFormatError naming ``fragments``; a dict
    is tried both as JSON text (unless ``via_json`` is false) and as plain data."""
    msgs = []
    if isinstance(data, (str, bytes, bytearray)) or via_json:
        text = data if isinstance(data, (str, bytes, bytearray)) else json.dumps(data)
        with pytest.raises(kdt.IRFormatError) as ei:
            kdt.CompiledKernel.from_json(text)
        msgs.append(str(ei.value))
    if not isinstance(data, (str, bytes, bytearray)):
        with pytest.raises(kdt.IRFormatError) as ei:
            S.kernel_from_dict(data)
        msgs.append(str(ei.value))
    for msg in msgs:
        for f in fragments:
            assert f in msg, f"{f!r} not in {msg!r}"
    return msgs[0]


def test_the_base_document_is_accepted():
    assert kdt.CompiledKernel.from_json(json.dumps(PLAIN)) == compile_named("every_instruction")
    assert kdt.CompiledKernel.from_json(BASE_TEXT).ir.body[1:] == compile_named("every_instruction").ir.body


def test_irformaterror_is_a_valueerror_and_exported():
    assert issubclass(kdt.IRFormatError, ValueError) and kdt.IRFormatError is S.IRFormatError


@pytest.mark.parametrize("text", ["", "{", "[1, 2", "nul", "{'format': 1}", "{} {}", "\x00", "{\"a\":}"])
def test_not_json(text):
    rejects(text, "does not parse")


@pytest.mark.parametrize("text", ["[]", "1", "null", "\"kdt-ir\"", "NaN", "true"])
def test_top_level_must_be_an_object(text):
    rejects(text, "$: expected an object")


def test_not_text():
    for bad in (None, 12, ["{}"], memoryview(b"{}")):
        with pytest.raises(kdt.IRFormatError, match="must be text"):
            S.loads(bad)


def test_bytes_that_are_not_utf8():
    rejects(b"\xff\xfe" + BASE_TEXT.encode(), "not UTF-8")
    rejects(BASE_TEXT.encode("utf-16"), "not UTF-8")
    rejects(BASE_TEXT.encode()[:-1] + b"\xc3", "not UTF-8")


def test_size_limit_is_checked_before_parsing():
    big = " " * S.MAX_BYTES + BASE_TEXT  # valid JSON, but too large: the size message (not a parse
    rejects(big, "more than the limit")    # or schema one) shows it was refused before parsing
    rejects(big.encode(), "more than the limit")
    rejects(bytearray(big.encode()), "more than the limit")
    # exactly at the limit is fine
    exact = BASE_TEXT + " " * (S.MAX_BYTES - len(BASE_TEXT))
    assert len(exact) == S.MAX_BYTES
    assert kdt.CompiledKernel.from_json(exact.encode()).ir.body[1:] == compile_named("every_instruction").ir.body


@pytest.mark.parametrize("opener, closer", [("[", "]"), ('{"a":', "}")])
def test_deeply_nested_json(opener, closer):
    n = 100_000
    rejects(opener * n + closer * n)
    d = base()
    text = json.dumps(d).replace('"body": [', '"body": [' + opener * n + closer * n + ",", 1)
    rejects(text)


def deep_unary(n):
    e = ["job"]
    for _ in range(n):
        e = ["un", "-", e]
    return e


def deep_bool(n):
    e = ["cmp", "==", ["job"], ["c", 0]]
    for _ in range(n):
        e = ["bool", "and", [e, ["c", True]]]
    return e


def deep_ifs(n, inner):
    b = inner
    for _ in range(n):
        b = [{"t": "if", "cond": ["c", True], "then": b, "else": [], "line": 1}]
    return b


def with_assign(value, nesting=0):
    """The base document with ``v = value`` (a fresh slot) first, inside ``nesting`` nested ifs."""
    d = base()
    d["num_slots"] += 1
    stmt = {"t": "assign", "slot": d["num_slots"] - 1, "name": "v", "value": value, "line": 9}
    d["body"] = deep_ifs(nesting, [stmt]) + d["body"]
    return d


def test_deep_expressions_are_rejected_beyond_max_depth():
    assert S.kernel_from_dict(with_assign(deep_unary(S.MAX_DEPTH - 5)))
    msg = rejects(with_assign(deep_unary(S.MAX_DEPTH + 5)), "$.body[0].value", "nested deeper than")
    assert "[2]" * (S.MAX_DEPTH - 5) in msg  # the path walks down the operand chain
    rejects(with_assign(deep_bool(S.MAX_DEPTH)), "$.body[0].value", "nested deeper than")
    # Python data (not JSON text) with an absurd depth is stopped just as well
    rejects(with_assign(deep_unary(50_000)), "nested deeper than", via_json=False)


def test_deep_statements_are_rejected_beyond_max_depth():
    assert S.kernel_from_dict(with_assign(["job"], S.MAX_DEPTH - 5))
    msg = rejects(with_assign(["job"], S.MAX_DEPTH + 5), "$.body[0]", "nested deeper than")
    assert ".then[0]" * (S.MAX_DEPTH - 5) in msg
    rejects(with_assign(["job"], 50_000), "nested deeper than", via_json=False)


def test_deep_statements_holding_deep_expressions():
    """Nesting of statements and expressions adds up: the loader must neither accept what the
    simulator cannot run nor die with RecursionError itself."""
    for stmt_depth, expr_depth in [(S.MAX_DEPTH - 1, S.MAX_DEPTH - 1), (150, 150), (100, 199)]:
        for mk in (deep_bool, deep_unary):
            d = with_assign(mk(expr_depth), stmt_depth)
            rejects(d, "nested deeper than")


@pytest.mark.parametrize("mk", [deep_bool, deep_unary])
def test_the_deepest_accepted_ir_also_launches(mk):
    """Whatever passes the loader's depth limits must simulate without RecursionError."""
    half = S.MAX_DEPTH // 2 - 3
    for stmt_depth, expr_depth in [(S.MAX_DEPTH - 3, 0), (half, half), (1, S.MAX_DEPTH - 4)]:
        d = with_assign(mk(expr_depth), stmt_depth)
        k = kdt.CompiledKernel.from_json(json.dumps(d))
        io = every_instruction_io()
        cycles = kdt.launch_kernel(k, io, kdt.TPUSpec(num_sms=1, load_store_latency=3), print_file=_io.StringIO())
        assert cycles > 0


def _mut(d, path, value=...):
    """Set (or delete, when ``value`` is omitted) ``d[path[0]][path[1]]...``."""
    obj = d
    for p in path[:-1]:
        obj = obj[p]
    if value is ...:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return d


LOAD = index_of(BASE, "load")          # kdt.load(io_tensors['x'][j], a)
REDUCE = index_of(BASE, "reduce")
PRINT = index_of(BASE, "print", 1)    # the second print (job 0 only)
TILE_PRINT = index_of(BASE, "print")
FILL = index_of(BASE, "fill", len([s for s in BASE["body"] if s["t"] == "inst" and s["op"] == "fill"]) - 1)
MATMUL = index_of(BASE, "matmul", 1)
ASSIGN = [i for i, s in enumerate(BASE["body"]) if s["t"] == "assign"][0]
B = f"$.body[{LOAD}]"


WRONG_TYPES = [
    # bool where an int is wanted
    (("num_jobs",), True, "$.num_jobs", "expected an integer, got bool"),
    (("num_slots",), True, "$.num_slots", "got bool"),
    (("version",), True, "$", "version"),
    (("storages", 0, "shape", 0), True, "$.storages[0].shape[0]", "got bool"),
    (("body", LOAD, "line"), True, f"{B}.line", "got bool"),
    (("body", LOAD, "col"), False, f"{B}.col", "got bool"),
    (("body", LOAD, "args", "dst", "s"), True, f"{B}.args.dst.s", "got bool"),
    (("body", LOAD, "args", "dst", "strides", 0), True, f"{B}.args.dst.strides[0]", "got bool"),
    (("body", ASSIGN, "slot"), True, f"$.body[{ASSIGN}].slot", "got bool"),
    (("body", REDUCE, "args", "dim"), False, f"$.body[{REDUCE}].args.dim", "got bool"),
    (("body", LOAD, "args", "src", "off", 0), True, f"{B}.args.src.off", "expression list"),
    # float where an int is wanted
    (("num_jobs",), 2.0, "$.num_jobs", "got float"),
    (("version",), 1.0, "$", "version"),
    (("storages", 0, "shape", 1), 4.0, "$.storages[0].shape[1]", "got float"),
    (("body", LOAD, "line"), 10.0, f"{B}.line", "got float"),
    (("body", LOAD, "args", "dst", "strides", 0), 1.0, f"{B}.args.dst.strides[0]", "got float"),
    (("body", REDUCE, "args", "dim"), 0.0, f"$.body[{REDUCE}].args.dim", "got float"),
    # string where a list is wanted
    (("storages",), "abc", "$.storages", "expected a list, got str"),
    (("body",), "abc", "$.body", "expected a list, got str"),
    (("storages", 0, "shape"), "4", "$.storages[0].shape", "expected a list"),
    (("body", LOAD, "args", "dst", "sizes"), "8", f"{B}.args.dst.sizes", "expected a list"),
    (("body", LOAD, "args", "dst", "strides"), "1", f"{B}.args.dst.strides", "expected a list"),
    # null
    (("name",), None, "$.name", "got null"),
    (("num_jobs",), None, "$.num_jobs", "got null"),
    (("body",), None, "$.body", "got null"),
    (("storages", 0), None, "$.storages[0]", "got null"),
    (("storages", 0, "dtype"), None, "$.storages[0].dtype", "got null"),
    (("body", LOAD), None, f"{B}", "statement object"),
    (("body", LOAD, "args"), None, f"{B}.args", "got null"),
    (("body", LOAD, "args", "src"), None, f"{B}.args.src", "got null"),
    (("body", LOAD, "args", "src", "off"), None, f"{B}.args.src.off", "expression list"),
    (("body", ASSIGN, "value"), None, f"$.body[{ASSIGN}].value", "expression list"),
    (("body", ASSIGN, "name"), None, f"$.body[{ASSIGN}].name", "got null"),
    (("body", LOAD, "alloc"), None, f"{B}.alloc", "alloc"),
    (("body", PRINT, "args", "msg"), None, f"$.body[{PRINT}].args.msg", "got null"),
    (("body", PRINT, "args", "print_only_if_job0"), None, f"$.body[{PRINT}].args.print_only_if_job0", "bool"),
    (("body", PRINT, "args", "print_only_if_job0"), 1, f"$.body[{PRINT}].args.print_only_if_job0", "bool"),
    (("body", REDUCE, "args", "op"), None, f"$.body[{REDUCE}].args.op", "got null"),
    # other wrong types
    (("format",), "kdt-ir-2", "$", "unsupported IR format"),
    (("version",), 2, "$", "version"),
    (("version",), "1", "$", "version"),
    (("name",), 5, "$.name", "got int"),
    (("name",), "n" * 257, "$.name", "longer than 256"),
    (("storages", 2, "name"), "s" * 257, "$.storages[2].name", "longer than 256"),
    (("storages", 0, "kind"), "gpu", "$.storages[0].kind", "'gpu' is not one of"),
    (("storages", 0, "dtype"), "float64", "$.storages[0].dtype", "'float64' is not one of"),
    (("storages", 0, "shape", 0), -1, "$.storages[0].shape[0]", "outside"),
    (("body", LOAD, "t"), "while", f"{B}", "unknown statement kind 'while'"),
    (("body", LOAD, "t"), 3, f"{B}", "unknown statement kind"),
    (("body", LOAD, "t"), ["inst"], f"{B}", "unknown statement kind"),
    (("body", LOAD, "args"), [], f"{B}.args", "expected an object, got list"),
    (("body", LOAD, "args", "src", "sizes", 0), 4, f"{B}.args.src.sizes[0]", "expression list"),
    (("body", LOAD, "args", "src", "off"), [], f"{B}.args.src.off", "expression list"),
    (("body", LOAD, "args", "src", "off"), [1], f"{B}.args.src.off", "expression list"),
    (("body", ASSIGN, "value"), ["c", "1"], f"$.body[{ASSIGN}].value[1]", "expected a number or bool"),
    (("body", ASSIGN, "value"), ["c", None], f"$.body[{ASSIGN}].value[1]", "number or bool"),
    (("body", ASSIGN, "value"), ["c", [1]], f"$.body[{ASSIGN}].value[1]", "number or bool"),
    (("body", ASSIGN, "value"), ["v", "0", "j"], f"$.body[{ASSIGN}].value[1]", "expected an integer"),
    (("body", ASSIGN, "value"), ["v", 0, 0], f"$.body[{ASSIGN}].value[2]", "expected a string"),
    (("body", ASSIGN, "value"), ["bool", "and", "ab"], f"$.body[{ASSIGN}].value[2]", "expected a list"),
    (("body", ASSIGN, "value"), ["bin", 1, ["job"], ["job"]], f"$.body[{ASSIGN}].value[1]", "string"),
    (("body", LOAD, "line"), -1, f"{B}.line", "outside"),
    (("body", LOAD, "alloc"), 0, f"{B}.alloc", "alloc must be a bool"),
]


@pytest.mark.parametrize("path, value, where, problem", WRONG_TYPES,
                         ids=[f"{'.'.join(map(str, p))}={v!r:.20}" for p, v, _, _ in WRONG_TYPES])
def test_wrong_types(path, value, where, problem):
    msg = rejects(_mut(base(), path, value), where, problem)
    assert msg.startswith(where + ":") or msg.startswith(where + "."), msg


UNKNOWN_OR_MISSING = [
    ((), "extra", 1, "$", "unknown: ['extra']"),
    (("storages", 1), "extra", 1, "$.storages[1]", "unknown: ['extra']"),
    (("body", LOAD), "extra", 1, B, "unknown: ['extra']"),
    (("body", ASSIGN), "extra", 1, f"$.body[{ASSIGN}]", "unknown: ['extra']"),
    (("body", LOAD, "args"), "dst2", {}, f"{B}.args", "unknown: ['dst2']"),
    (("body", LOAD, "args", "dst"), "dims", [], f"{B}.args.dst", "unknown: ['dims']"),
    (("body", MATMUL, "args"), "transpose", False, f"$.body[{MATMUL}].args", "unknown: ['transpose']"),
    ((), "num_jobs", ..., "$", "missing: ['num_jobs']"),
    ((), "format", ..., "$", "missing: ['format']"),
    (("storages", 0), "dtype", ..., "$.storages[0]", "missing: ['dtype']"),
    (("body", LOAD), "line", ..., B, "missing: ['line']"),
    (("body", LOAD), "alloc", ..., B, "missing: ['alloc']"),
    (("body", LOAD), "t", ..., B, "'t' field"),
    (("body", LOAD, "args"), "dst", ..., f"{B}.args", "missing: ['dst']"),
    (("body", MATMUL, "args"), "accumulate", ..., f"$.body[{MATMUL}].args", "missing: ['accumulate']"),
    (("body", PRINT, "args"), "msg", ..., f"$.body[{PRINT}].args", "missing: ['msg']"),
    (("body", LOAD, "args", "dst"), "strides", ..., f"{B}.args.dst", "missing: ['strides']"),
]


@pytest.mark.parametrize("path, key, value, where, problem", UNKNOWN_OR_MISSING,
                         ids=[f"{'.'.join(map(str, p))}.{k}{'-' if v is ... else '+'}"
                              for p, k, v, _, _ in UNKNOWN_OR_MISSING])
def test_unknown_and_missing_keys(path, key, value, where, problem):
    rejects(_mut(base(), path + (key,), value), where, problem)


def test_unknown_op():
    d = _mut(base(), ("body", LOAD, "op"), "conv2d")
    rejects(d, f"{B}.op", "unknown instruction 'conv2d'")
    rejects(_mut(base(), ("body", LOAD, "op"), "__class__"), f"{B}.op", "unknown instruction")
    rejects(_mut(base(), ("body", LOAD, "op"), 7), f"{B}.op", "expected a string")
    # a known op with another op's parameters
    rejects(_mut(base(), ("body", LOAD, "op"), "add"), f"{B}.args", "wrong keys")


P = f"$.body[{ASSIGN}].value"


@pytest.mark.parametrize("value, fragment", [
    (["zz", 1], "unknown expression tag 'zz'"),
    (["C", 1], "unknown expression tag 'C'"),
    ([], "expression list"),
    ([["c", 1]], "expression list"),
    (["c"], "'c' takes 1 operand(s), got 0"),
    (["c", 1, 2], "'c' takes 1 operand(s), got 2"),
    (["job", 1], "'job' takes 0 operand(s), got 1"),
    (["v", 0], "'v' takes 2 operand(s)"),
    (["un", "-"], "'un' takes 2 operand(s)"),
    (["bin", "+", ["c", 1]], "'bin' takes 3 operand(s), got 2"),
    (["cmp", "<", ["c", 1], ["c", 2], ["c", 3]], "'cmp' takes 3 operand(s), got 4"),
    (["ifx", ["c", True], ["c", 1]], "'ifx' takes 3 operand(s), got 2"),
    (["bool", "and", [["c", True]]], "at least two operands"),
    (["bool", "and", []], "at least two operands"),
    (["bool", "and", [["c", True], ["c", True]], 1], "'bool' takes 2 operand(s)"),
])
def test_bad_expression_shapes(value, fragment):
    rejects(_mut(base(), ("body", ASSIGN, "value"), value), P, fragment)


@pytest.mark.parametrize("value, where, fragment", [
    (["bin", "**", ["job"], ["c", 2]], "[1]", "'**' is not one of"),
    (["bin", "@", ["job"], ["c", 2]], "[1]", "is not one of"),
    (["bin", "<", ["job"], ["c", 2]], "[1]", "is not one of"),
    (["bin", "and", ["job"], ["c", 2]], "[1]", "is not one of"),
    (["cmp", "is", ["job"], ["c", 2]], "[1]", "'is' is not one of"),
    (["cmp", "in", ["job"], ["c", 2]], "[1]", "is not one of"),
    (["cmp", "+", ["job"], ["c", 2]], "[1]", "is not one of"),
    (["cmp", "=", ["job"], ["c", 2]], "[1]", "is not one of"),
    (["un", "~", ["job"]], "[1]", "'~' is not one of"),
    (["un", "!", ["job"]], "[1]", "is not one of"),
    (["bool", "xor", [["c", True], ["c", False]]], "[1]", "'xor' is not one of"),
    (["bool", "&&", [["c", True], ["c", False]]], "[1]", "is not one of"),
])
def test_unknown_operator_strings(value, where, fragment):
    rejects(_mut(base(), ("body", ASSIGN, "value"), value), P + where, fragment)


@pytest.mark.parametrize("entry, where, fragment", [
    (["c", "1"], "[2][1][1]", "expected a number or bool"),
    (["c", 2 ** 63], "[2][1][1]", "outside"),
    (["job", 0], "[2][1]", "'job' takes 0 operand(s)"),
    ("job", "[2][1]", "expression list"),
    (["v", 99, "x"], "[2][1][1]", "outside"),
    (["un", "~", ["job"]], "[2][1][1]", "is not one of"),
    (["un", "-", ["c", None]], "[2][1][2][1]", "number or bool"),
])
def test_paths_into_list_entries(entry, where, fragment):
    """Errors inside the operands of ``bool`` and the sizes of a view name the entry's index."""
    value = ["bool", "or", [["c", True], entry, ["c", False]]]
    rejects(_mut(base(), ("body", ASSIGN, "value"), value), P + where + ":", fragment)
    d = _mut(base(), ("body", LOAD, "args", "dst", "sizes", 1), entry)
    rejects(d, f"{B}.args.dst.sizes" + where.replace("[2]", "", 1) + ":", fragment)


def test_storage_id_out_of_range():
    n = len(BASE["storages"])
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "s"), n), f"{B}.args.dst.s", f"outside [0, {n - 1}]")
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "s"), -1), f"{B}.args.dst.s", "outside")
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "s"), 2 ** 70), f"{B}.args.dst.s", "outside")
    d = base()
    d["storages"] = []
    rejects(d, "outside [0, -1]")


def test_slot_out_of_range():
    d = base()
    ns = d["num_slots"]
    rejects(_mut(base(), ("body", ASSIGN, "value"), ["v", ns, "x"]), P + "[1]", f"outside [0, {ns - 1}]")
    rejects(_mut(base(), ("body", ASSIGN, "value"), ["v", -1, "x"]), P + "[1]", "outside")
    rejects(_mut(base(), ("body", ASSIGN, "slot"), ns), f"$.body[{ASSIGN}].slot", "outside")
    rejects(_mut(base(), ("body", ASSIGN, "slot"), 0), f"$.body[{ASSIGN}].slot", f"outside [1, {ns - 1}]")
    rejects(_mut(base(), ("num_slots",), 0), "$.num_slots", "outside")
    rejects(_mut(base(), ("num_slots",), S.MAX_NODES + 1), "$.num_slots", "outside")


def test_slot_assigned_twice():
    d = base()
    again = copy.deepcopy(d["body"][ASSIGN])
    d["body"].append(again)
    rejects(d, f"$.body[{len(d['body']) - 1}].slot", "assigned more than once")
    d = base()
    loop = {"t": "for", "slot": d["body"][ASSIGN]["slot"], "name": "i", "start": ["c", 0], "end": ["c", 2],
            "body": [], "line": 3}
    d["body"].append(loop)
    rejects(d, f"$.body[{len(d['body']) - 1}].slot", "assigned more than once")
    d = base()
    d["num_slots"] += 1
    inner = {"t": "for", "slot": d["num_slots"] - 1, "name": "i", "start": ["c", 0], "end": ["c", 2],
             "body": [], "line": 3}
    d["body"].append({"t": "if", "cond": ["c", True], "then": [inner], "else": [copy.deepcopy(inner)],
                      "line": 3})
    rejects(d, f"$.body[{len(d['body']) - 1}].else[0].slot", "assigned more than once")


def test_slot_read_but_never_assigned():
    d = base()
    d["num_slots"] += 1
    never = d["num_slots"] - 1
    _mut(d, ("body", LOAD, "args", "dst", "off"), ["bin", "+", ["c", 0], ["v", never, "ghost"]])
    rejects(d, f"{B}.args.dst.off[3]", f"slot {never} is read but never assigned")
    # slot 0 (the job id) needs no assignment
    d = base()
    _mut(d, ("body", ASSIGN, "value"), ["v", 0, "job"])
    assert S.kernel_from_dict(d)


def test_huge_shapes_and_too_many_dims():
    rejects(_mut(base(), ("storages", 2, "shape"), [2 ** 21, 2 ** 20]), "$.storages[2]", "elements is more than")
    rejects(_mut(base(), ("storages", 2, "shape"), [2 ** 41]), "$.storages[2].shape[0]", "outside")
    rejects(_mut(base(), ("storages", 2, "shape"), [2] * (S.MAX_DIMS + 1)), "$.storages[2].shape",
            f"more than {S.MAX_DIMS} entries")
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "sizes"), [["c", 1]] * 9), f"{B}.args.dst.sizes",
            "more than 8 entries")
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "strides"), [1] * 9), f"{B}.args.dst.strides",
            "more than 8 entries")
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "strides"), [8, 1, 1]), f"{B}.args.dst",
            "sizes and strides differ in length")
    d = base()
    d["storages"] = d["storages"] + [{"kind": "spm", "name": "", "shape": [1], "dtype": "bool"}] * S.MAX_STORAGES
    rejects(d, "$.storages", f"more than {S.MAX_STORAGES} entries")


def test_huge_ints():
    big = 2 ** 62 + 1
    assert S.kernel_from_dict(_mut(base(), ("body", ASSIGN, "value"), ["c", 2 ** 62]))
    assert S.kernel_from_dict(_mut(base(), ("body", ASSIGN, "value"), ["c", -2 ** 62]))
    rejects(_mut(base(), ("body", ASSIGN, "value"), ["c", big]), P + "[1]", "outside")
    rejects(_mut(base(), ("body", ASSIGN, "value"), ["c", -big]), P + "[1]", "outside")
    rejects(_mut(base(), ("body", ASSIGN, "value"), ["c", 10 ** 4000]), P + "[1]", "outside")
    rejects(_mut(base(), ("body", FILL, "args", "value"), 2 ** 63), f"$.body[{FILL}].args.value", "outside")
    rejects(_mut(base(), ("body", LOAD, "line"), 2 ** 63), f"{B}.line", "outside")
    rejects(_mut(base(), ("body", LOAD, "col"), 2 ** 63), f"{B}.col", "outside")
    # more digits than Python's int parser accepts: still an IRFormatError
    rejects(BASE_TEXT.replace('"num_jobs": 2', '"num_jobs": ' + "9" * 5000), "does not parse")


def test_huge_strides():
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "strides", 1), 2 ** 40 + 1),
            f"{B}.args.dst.strides[1]", "outside")
    rejects(_mut(base(), ("body", LOAD, "args", "dst", "strides", 1), -2 ** 40 - 1),
            f"{B}.args.dst.strides[1]", "outside")
    assert S.kernel_from_dict(_mut(base(), ("body", LOAD, "args", "dst", "strides", 1), -5))


@pytest.mark.parametrize("n", [0, -1, -2 ** 31, 2 ** 31 + 1, 10 ** 30])
def test_bad_num_jobs(n):
    rejects(_mut(base(), ("num_jobs",), n), "$.num_jobs", "outside")


def test_io_storage_after_spm_and_duplicate_io_names():
    d = base()
    d["storages"].append({"kind": "io", "name": "late", "shape": [1], "dtype": "float32"})
    rejects(d, f"$.storages[{len(d['storages']) - 1}]", "io storages must come before spm storages")
    d = base()
    d["storages"][1]["name"] = d["storages"][0]["name"]
    rejects(d, "$.storages[1]", "duplicate io tensor name 'x'")
    d = base()  # two SPM storages may share a label
    d["storages"][-1]["name"] = d["storages"][-2]["name"] = "same"
    assert S.kernel_from_dict(d)


def test_reduce_dim_and_op():
    R = f"$.body[{REDUCE}].args"
    rejects(_mut(base(), ("body", REDUCE, "args", "dim"), 2), R + ".dim", "outside [0, 1]")
    rejects(_mut(base(), ("body", REDUCE, "args", "dim"), -1), R + ".dim", "outside")
    rejects(_mut(base(), ("body", REDUCE, "args", "op"), "mean"), R + ".op", "'mean' is not one of")
    rejects(_mut(base(), ("body", REDUCE, "args", "op"), "SUM"), R + ".op", "is not one of")
    rejects(_mut(base(), ("body", REDUCE, "args", "op"), ["sum"]), R + ".op", "expected a string")
    d = _mut(base(), ("body", REDUCE, "args", "x", "sizes"), [])
    _mut(d, ("body", REDUCE, "args", "x", "strides"), [])
    _mut(d, ("body", REDUCE, "args", "dim"), 0)
    rejects(d, R, "at least one dimension")


def test_fill_value_and_print_msg():
    Fp = f"$.body[{FILL}].args.value"
    for bad in ("1.0", None, [1.0], {"v": 1}):
        rejects(_mut(base(), ("body", FILL, "args", "value"), bad), Fp, "expected a number or bool")
    for good in (True, 3, -2.5, 1e300):
        assert S.kernel_from_dict(_mut(base(), ("body", FILL, "args", "value"), good))
    Pm = f"$.body[{PRINT}].args.msg"
    rejects(_mut(base(), ("body", PRINT, "args", "msg"), "m" * (S.MAX_MSG + 1)), Pm, f"longer than {S.MAX_MSG}")
    assert S.kernel_from_dict(_mut(base(), ("body", PRINT, "args", "msg"), "m" * S.MAX_MSG))
    rejects(_mut(base(), ("body", PRINT, "args", "msg"), 5), Pm, "expected a string")
    # print's x: a view (an object) only, as in the front end (spec §2: a tile only)
    rejects(_mut(base(), ("body", PRINT, "args", "x"), 5), f"$.body[{PRINT}].args.x", "expected an object")
    rejects(_mut(base(), ("body", PRINT, "args", "x"), ["c", 5]), f"$.body[{PRINT}].args.x", "expected an object")
    rejects(_mut(base(), ("body", TILE_PRINT, "args", "x"), {"s": 2}), f"$.body[{TILE_PRINT}].args.x",
            "missing")


def test_alloc_only_on_fill():
    rejects(_mut(base(), ("body", LOAD, "alloc"), True), f"{B}.alloc", "true only for fill")
    rejects(_mut(base(), ("body", FILL, "alloc"), "yes"), f"$.body[{FILL}].alloc", "must be a bool")
    assert S.kernel_from_dict(_mut(base(), ("body", FILL, "alloc"), True))
    assert S.kernel_from_dict(_mut(base(), ("body", index_of(BASE, "fill"), "alloc"), False))


def test_more_nodes_than_max_nodes():
    """A list holding one small expression more than MAX_NODES times costs nothing to build and must
    cost nothing to reject either (every entry is at least one node)."""
    d = base()
    d["body"][ASSIGN]["value"] = ["bool", "and", [["job"]] * (S.MAX_NODES + 10)]
    rejects(d, f"$.body[{ASSIGN}].value[2]: more than {S.MAX_NODES} IR nodes", via_json=False)
    stmt = {"t": "if", "cond": ["c", True], "then": [], "else": [], "line": 1}
    d = base()
    d["body"] = [stmt] * (S.MAX_NODES + 1)
    rejects(d, f"$.body: more than {S.MAX_NODES} IR nodes", via_json=False)


def count_nodes(kernel):
    """Statements, views and expressions: what the loader's node budget counts."""
    nodes = walk_ir(kernel)
    views_ = sum(isinstance(v, irn.View) for n in nodes if type(n) is irn.Inst for v in n.args.values())
    return len(nodes) + views_


def test_node_budget_counts_every_statement_view_and_expression(monkeypatch):
    """The budget is exact: with MAX_NODES lowered to the document's node count it loads, one less and
    it is rejected (spreading the nodes over many statements does not help)."""
    n = count_nodes(S.loads(BASE_TEXT))
    assert n > 300
    monkeypatch.setattr(S, "MAX_NODES", n)
    assert S.loads(BASE_TEXT).body[1:] == compile_named("every_instruction").ir.body
    monkeypatch.setattr(S, "MAX_NODES", n - 1)
    rejects(BASE_TEXT, f"more than {n - 1} IR nodes")


def test_messages_stay_short_for_huge_junk():
    junk = "x" * 1_000_000
    for path, value in [(("format",), junk), (("version",), [junk]), (("body", LOAD, "t"), junk)]:
        msg = rejects(_mut(base(), path, value))
        assert len(msg) < 2000, len(msg)
    d = base()
    for i in range(10_000):
        d[f"k{i:05d}" + "y" * 50] = 1
    assert len(rejects(d, "$", "unknown")) < 2000
    e = _mut(base(), ("body", ASSIGN, "value"), [junk, 1])
    assert len(rejects(e, "unknown expression tag")) < 2000


def test_plain_data_oddities_are_format_errors():
    """``kernel_from_dict`` takes Python data, not only parsed JSON: odd keys and values, integers too long
    to print, cycles and foreign number types are all IRFormatErrors."""
    import numpy as np
    d = base()
    d[1] = 2
    d[(1, 2)] = 3
    rejects(d, "$: wrong keys", via_json=False)
    for path, value in [(("num_jobs",), 10 ** 5000), (("version",), -10 ** 5000),
                        (("body", ASSIGN, "value"), ["c", 10 ** 5000]), (("num_jobs",), np.int64(2)),
                        (("body", ASSIGN, "value"), ["c", np.float32(1.5)]), (("storages",), ()),
                        (("storages", 0, "shape"), (6, 4)), (("name",), b"name"), (("body",), {1, 2}),
                        (("body", ASSIGN, "value"), ("job",)), (("body", LOAD, "args", "dst"), object())]:
        msg = rejects(_mut(base(), path, value), via_json=False)
        assert len(msg) < 300, msg
    cyclic = base()
    cyclic["body"].append({"t": "if", "cond": ["c", True], "then": cyclic["body"], "else": [], "line": 1})
    rejects(cyclic, via_json=False)  # (caught as a slot assigned twice, or as too deep)
    loop = ["un", "-"]
    loop.append(loop)
    rejects(_mut(base(), ("body", ASSIGN, "value"), loop), "nested deeper than", via_json=False)


# ---- fuzzing ------------------------------------------------------------------------------------

REPLACEMENTS = [None, True, False, 0, 1, -1, 2, 3, 7, 2 ** 31, 2 ** 62, 2 ** 63, -2 ** 63, 0.5, -0.0, 1e308,
                float("inf"), "", "x", "sum", "float32", "bool", "io", "spm", "fill", "c", "v", "job", [], {},
                ["c", 1], ["c", True], ["c", 2.5], ["job"], ["v", 0, "j"], ["v", 1, "j"], ["un", "-", ["job"]],
                ["bin", "//", ["job"], ["c", 0]], ["bin", "<<", ["c", 1], ["c", 80]],
                ["bin", "*", ["c", 2 ** 62], ["c", 2 ** 62]], ["cmp", "<", ["job"], ["c", 1]],
                ["ifx", ["job"], ["c", 1], ["c", 2]], ["bool", "or", [["c", 0], ["c", 3]]],
                {"s": 0, "off": ["c", 0], "sizes": [], "strides": []},
                {"s": 2, "off": ["c", 0], "sizes": [["c", 2 ** 40]], "strides": [0]},
                {"s": 2, "off": ["c", -1], "sizes": [["c", 4]], "strides": [1]},
                {"t": "if", "cond": ["job"], "then": [], "else": [], "line": 1}]


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _mutate(d, rng):
    paths = list(_paths(d))[1:]
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        path = rng.choice(paths)
        parent = d
        try:
            for p in path[:-1]:
                parent = parent[p]
            last = path[-1]
            kind = rng.random()
            if kind < 0.55:
                parent[last] = copy.deepcopy(rng.choice(REPLACEMENTS))
            elif kind < 0.65:
                del parent[last]
            elif kind < 0.75 and isinstance(parent, dict):
                parent[rng.choice(("extra", "t", "line", "args", "body"))] = copy.deepcopy(rng.choice(REPLACEMENTS))
            elif kind < 0.85 and isinstance(parent, list):
                parent.insert(last, copy.deepcopy(parent[last]))
            elif isinstance(parent[last], int) and not isinstance(parent[last], bool):
                parent[last] = parent[last] + rng.choice((-2, -1, 1, 2, 1000, 2 ** 40))
            elif isinstance(parent[last], str):
                parent[last] = parent[last][:-1] or "?"
            else:
                parent[last] = copy.deepcopy(rng.choice(REPLACEMENTS))
        except (KeyError, IndexError, TypeError):
            continue
    return d


LAUNCH_ERRORS = (kdt.simulator.errors.LaunchError,)


@kdt.kernel(num_jobs_calculator=two_jobs)
def compact(task_args, io_tensors):
    j = kdt.get_job_id()
    a = kdt.alloc_spm((2, 4))
    m = kdt.alloc_spm((2, 4), dtype='bool')
    r = kdt.alloc_spm((2,))
    kdt.load(io_tensors['x'][j], a)
    for i in range(j, 2):
        if i % 2 == 0 and j < 1:
            kdt.matmul(kdt.transpose(a[0:2, 0:2], 0, 1), a[:, 2:4], a[:, 0:2], i > 0)
        else:
            kdt.exp(a, a, 2.0 if j == 0 else 3.0)
    kdt.le(a, kdt.broadcast_to(kdt.unsqueeze(r, 1), 1, 4), m)
    kdt.where(m, a, a, a)
    kdt.reduce(a, 1, 'max', r)
    kdt.fill(a, 1.5)
    kdt.print(r, "r")
    kdt.print(r[j:j + 1], "j", True)
    kdt.store(a, io_tensors['y'][j])


COMPACT_TEXT = compact.compile({}, {'x': torch.zeros(2, 2, 4), 'y': torch.zeros(2, 2, 4)}).to_json()


def test_fuzzed_documents_load_or_fail_cleanly_and_accepted_ones_launch_cleanly():
    """2000 random mutations of a valid document: ``loads`` returns a kernel or raises IRFormatError,
    nothing else; whatever it accepts simulates or fails with one of the documented launch errors."""
    rng = random.Random(20240531)
    accepted = rejected = 0
    for i in range(2000):
        d = _mutate(json.loads(COMPACT_TEXT), rng)
        text = json.dumps(d)
        try:
            k = S.loads(text)
        except kdt.IRFormatError:
            rejected += 1
            continue
        except Exception as exc:  # pragma: no cover - a failure report
            pytest.fail(f"mutation {i}: loads raised {type(exc).__name__}: {exc}\n{text[:3000]}")
        accepted += 1
        assert S.loads(S.dumps(k)) == k or "nan" in S.dumps(k).lower()
        if any(math.prod(m.shape) > 10 ** 6 for m in k.io):
            continue  # the caller's tensors would be huge: nothing to simulate
        io = {m.name: torch.zeros(m.shape, dtype=torch.float32 if m.dtype == "float32" else torch.bool)
              for m in k.io}
        try:
            kdt.launch_kernel(kdt.CompiledKernel(k), io, kdt.TPUSpec(num_sms=2, load_store_latency=3),
                              timeout=0.3, print_file=_io.StringIO())
        except LAUNCH_ERRORS:
            pass
        except Exception as exc:  # pragma: no cover - a failure report
            pytest.fail(f"mutation {i}: launch raised {type(exc).__name__}: {exc}\n{text[:3000]}")
    assert accepted > 100 and rejected > 1000, (accepted, rejected)


# ---- malicious but valid IR ---------------------------------------------------------------------


def tiny_kernel(num_jobs=1, loop_end=None, spm_shape=(4,)):
    d = {"format": "kdt-ir", "version": 1, "name": "evil", "num_jobs": num_jobs, "num_slots": 2,
         "storages": [{"kind": "io", "name": "x", "shape": [4], "dtype": "float32"},
                      {"kind": "spm", "name": "t", "shape": list(spm_shape), "dtype": "float32"}],
         "body": []}
    view = {"s": 1, "off": ["c", 0], "sizes": [["c", 4]], "strides": [1]}
    io_view = {"s": 0, "off": ["c", 0], "sizes": [["c", 4]], "strides": [1]}
    load = {"t": "inst", "op": "load", "args": {"src": io_view, "dst": view}, "line": 1, "col": 1, "alloc": False}
    if loop_end is None:
        d["body"] = [load]
        d["num_slots"] = 1
    else:
        d["body"] = [{"t": "for", "slot": 1, "name": "i", "start": ["c", 0], "end": ["c", loop_end],
                      "body": [load], "line": 1}]
    return kdt.CompiledKernel.from_json(json.dumps(d))


@pytest.mark.parametrize("kw", [dict(num_jobs=10 ** 9), dict(num_jobs=S.MAX_JOBS), dict(loop_end=10 ** 12),
                                dict(loop_end=2 ** 62)])
def test_endless_but_valid_ir_is_stopped_by_the_timeout(kw):
    k = tiny_kernel(**kw)
    with pytest.raises(TimeoutError):
        kdt.launch_kernel(k, {'x': torch.zeros(4)}, kdt.TPUSpec(num_sms=1, load_store_latency=1), timeout=0.5)


def test_endless_empty_loop_is_stopped_by_the_timeout():
    d = json.loads(S.dumps(tiny_kernel(loop_end=10 ** 12).ir))
    d["body"][0]["body"] = []
    k = kdt.CompiledKernel.from_json(json.dumps(d))
    with pytest.raises(TimeoutError):
        kdt.launch_kernel(k, {'x': torch.zeros(4)}, kdt.TPUSpec(num_sms=1, load_store_latency=1), timeout=0.3)




def test_huge_spm_allocation_overflows_before_any_memory_is_allocated():
    k = tiny_kernel(spm_shape=(2 ** 20, 2 ** 20))  # 2**40 float32 elements: 4 TiB
    assert k.ir.storages[1].numel == 2 ** 40
    k2 = tiny_kernel(spm_shape=(2 ** 40,))
    k3 = tiny_kernel(spm_shape=(2 ** 26,))  # 256 MiB: allocatable, but far over the SPM
    with address_space_limit(64 << 20):  # an allocation attempt would be a MemoryError, not RuntimeError
        for kern in (k, k2, k3):
            with pytest.raises(RuntimeError, match="SPM") as ei:
                kdt.launch_kernel(kern, {'x': torch.zeros(4)}, kdt.TPUSpec(num_sms=1, load_store_latency=1))
            assert not isinstance(ei.value, MemoryError)


def chain_kernel(n_chains, depth, op="//"):
    """A valid kernel assigning ``n_chains`` scalars, each a left-deep chain ``((job op 1) op 1) ...``."""
    d = json.loads(S.dumps(tiny_kernel().ir))

    def chain():
        e = ["job"]
        for _ in range(depth):
            e = ["bin", op, e, ["c", 1]]
        return e
    d["num_slots"] = 1 + n_chains
    d["body"] = [{"t": "assign", "slot": 1 + i, "name": f"a{i}", "value": chain(), "line": 1}
                 for i in range(n_chains)] + d["body"]
    return kdt.CompiledKernel.from_json(json.dumps(d))


def test_deep_scalar_chains_simulate():
    k = chain_kernel(3, 50, "+")
    assert kdt.launch_kernel(k, {'x': torch.zeros(4)}, kdt.TPUSpec(num_sms=1, load_store_latency=1)) == 2
    k = chain_kernel(3, 50, "//")
    assert kdt.launch_kernel(k, {'x': torch.zeros(4)}, kdt.TPUSpec(num_sms=1, load_store_latency=1)) == 2


def test_building_a_hostile_program_respects_the_timeout():
    k = chain_kernel(60, 190)
    # The deadline is already past: building the program itself must notice (no timing assumption).
    with pytest.raises(TimeoutError, match="while preparing the kernel"):
        kdt.launch_kernel(k, {'x': torch.zeros(4)}, kdt.TPUSpec(num_sms=1, load_store_latency=1), timeout=0)


def _load_module(tmp_path, name, src):
    import importlib.util
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


LONG_STRINGS = {
    "variable_name": "    {v} = kdt.alloc_spm((4,))\n    kdt.load(io_tensors['x'], {v})\n".format(v="v" * 300),
    "alloc_label": "    t = kdt.alloc_spm((4,), name='{n}')\n    kdt.load(io_tensors['x'], t)\n".format(n="n" * 300),
    "scalar_name": "    {v} = kdt.get_job_id()\n    t = kdt.alloc_spm((4,))\n    kdt.load(io_tensors['x'][{v}:4], t)\n"
                   .format(v="s" * 300),
    "print_msg": "    t = kdt.alloc_spm((4,))\n    kdt.print(t, '{m}')\n".format(m="m" * 5000),
}


@pytest.mark.parametrize("case", sorted(LONG_STRINGS))
def test_every_kernel_the_front_end_accepts_survives_the_json_boundary(tmp_path, case):
    src = ("import kdt\n\n\ndef one_job(task_args):\n    return 1\n\n\n@kdt.kernel(num_jobs_calculator=one_job)\n"
           "def k(task_args, io_tensors):\n" + LONG_STRINGS[case])
    mod = _load_module(tmp_path, f"long_{case}", src)
    try:
        c = mod.k.compile({}, {'x': torch.zeros(4)})
    except E.CompilationError as exc:
        assert exc.line is not None  # rejecting it at compile time, located, is fine
        return
    assert kdt.CompiledKernel.from_json(c.to_json()) == c
