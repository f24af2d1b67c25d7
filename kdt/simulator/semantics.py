"""What each instruction computes and checks (spec kdt-semantics.md §3), and its latency (§4).

All arithmetic is float32 numpy (``exp``/``pow`` in float64, rounded when written). A ``compute``
function takes the resolved input views, the resolved output view (or None) and the job's slot list, and
writes the result into the output view.
"""
import math
from functools import lru_cache, partial

import numpy as np

from ..ir.ops import OPS


_BINARY_UFUNCS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "logical_and": np.logical_and, "logical_or": np.logical_or, "le": np.less,
    "leq": np.less_equal, "eq": np.equal, "neq": np.not_equal,
}
_REDUCE_UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum}
_F32 = np.float32


def _ufunc2(uf):
    def compute(ins, o, env):
        if o.widx is None:
            uf(ins[0].data, ins[1].data, out=o.data, casting="unsafe")
        else:
            o.write(uf(ins[0].data, ins[1].data))
    return compute


def _number(value, what: str):
    """A scalar operand as float32; anything but a number (e.g. an unset slot) is a TypeError."""
    if type(value) not in (int, float, bool):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {value!r}")
    return _F32(value)


def _full(x, y):
    """``y`` (float32) as a float64 array of ``x``'s shape, for ``exp``/``pow``: numpy's power takes its
    sqrt/square fast paths for a scalar exponent (``sqrt(-inf)`` is nan, ``pow(-inf, 0.5)`` is inf), the
    handout computes elementwise; and in float64, rounded to float32 when written, as the handout's
    results show (a float32 power differs in the last bit now and then: recorded program s102/224).

    Read-only: a kernel's exp and pow instructions mostly repeat one shape and value, so arrays of up to
    ``_FULL_CACHED_ELEMENTS`` elements are made once per process (keyed by the value's bits: -0.0 is not
    0.0) and shared."""
    shape = np.shape(x)
    bits = _F32(y).tobytes()
    if math.prod(shape) <= _FULL_CACHED_ELEMENTS:
        return _full_of(shape, bits)
    return _new_full(shape, bits)


_FULL_CACHED_ELEMENTS = 1 << 17  # 1 MiB of float64 each, at most 32 MiB kept (a tile of SPM is smaller)


def _new_full(shape, bits):
    full = np.full(shape, np.frombuffer(bits, dtype=np.float32)[0], dtype=np.float64)
    full.flags.writeable = False
    return full


_full_of = lru_cache(maxsize=32)(_new_full)


def _power_base(yf):  # exp: out = y ** x, y > 0 (spec §3)
    def compute(ins, o, env):
        y = _number(yf(env), "y")
        if not y > 0:
            raise ValueError(f"kdt.exp needs a base y > 0, got {y}")
        x = np.asarray(ins[0].data, dtype=np.float32)
        _write_ufunc(np.power, _full(x, y), x, o)
        return y
    return compute


def _log(yf):  # out = log base y of x, y > 0 and y != 1 (the handout's natural-log bug is not reproduced, §6.5)
    def compute(ins, o, env):
        y = _number(yf(env), "y")
        if not y > 0 or y == 1:
            raise ValueError(f"kdt.log needs a base y > 0 and y != 1, got {y}")
        o.write(np.log(ins[0].data, dtype=np.float32) / np.log(y))
        return y
    return compute


def _pow(yf):  # out = x ** y
    def compute(ins, o, env):
        x = np.asarray(ins[0].data, dtype=np.float32)
        y = _number(yf(env), "y")
        _write_ufunc(np.power, x, _full(x, y), o)
        return y
    return compute


def _write_ufunc(uf, a, b, o):
    """``o.write(uf(a, b))``, computed straight into the output when it has no broadcast dimension (an
    elementwise ufunc gives the same values; numpy buffers overlapping operands)."""
    if o.widx is None and o.data.dtype == np.float32:
        uf(a, b, out=o.data)
    else:
        o.write(uf(a, b))


def _fma(ins, o, env):
    o.write(np.add(np.multiply(ins[0].data, ins[1].data), ins[2].data))


def _reduce(op, dim):
    uf = _REDUCE_UFUNCS[op]

    def compute(ins, o, env):
        o.write(uf.reduce(ins[0].data, axis=dim))
    return compute


# One numpy call cannot be interrupted by the wall-clock limit: bound one matmul's multiply-adds (the
# contest's largest tile products are about 2**23; all-broadcast views could ask for 2**39).
MAX_MATMUL_MACS = 1 << 32


def _matmul(accf):
    def compute(ins, o, env):
        (m, k), n = ins[0].shape, ins[1].shape[1]
        if m * k * n > MAX_MATMUL_MACS:
            raise ValueError(f"a {m}x{k}x{n} matmul is more than the simulator handles ({MAX_MATMUL_MACS} "
                             "multiply-adds; no contest kernel needs one this large)")
        acc = _number(accf(env), "accumulate")  # its truth value, as in the handout (0.5 accumulates)
        prod = np.matmul(ins[0].data, ins[1].data)
        if acc:
            if o.widx is None:  # the same float32 sums, added in place (the product is already complete)
                np.add(prod, o.data, out=o.data)
                return acc
            prod = prod + o.data
        o.write(prod)
        return acc
    return compute


def _where(ins, o, env):
    o.write(np.where(ins[0].data, ins[1].data, ins[2].data))


def _copy(ins, o, env):
    src = ins[0].data
    # Source and destination may overlap (one storage, or io tensors sharing memory); numpy does not
    # always buffer an overlapping 1-D copy, and the instruction must read all of its source first.
    o.write(src.copy() if np.may_share_memory(src, o.data) else src)


def _fill(value):
    def compute(ins, o, env):
        o.wdata[...] = bool(value) if o.st.dtype == "bool" else _F32(value)
    return compute


def _print(msg, only_job0, out):
    def compute(ins, o, env):
        job = env[0]
        if only_job0 and job != 0:
            return
        print(f"[Job {job}] {msg}: {np.array(ins[0].data)}", file=out())  # the handout's text: str() of the values
        return job
    return compute


def make_compute(inst, scalar_fns: dict, out_stream):
    """The compute function of one instruction; ``scalar_fns`` maps scalar parameters to closures and
    ``out_stream()`` returns the file ``print`` writes to."""
    op, a = inst.op, inst.args
    if op in _BINARY_UFUNCS:
        return _ufunc2(_BINARY_UFUNCS[op])
    if op == "exp":
        return _power_base(scalar_fns["y"])
    if op == "log":
        return _log(scalar_fns["y"])
    if op == "pow":
        return _pow(scalar_fns["y"])
    if op == "fma":
        return _fma
    if op == "reduce":
        return _reduce(a["op"], a["dim"])
    if op == "matmul":
        return _matmul(scalar_fns["accumulate"])
    if op == "where":
        return _where
    if op in ("copy", "load", "store"):
        return _copy
    if op == "fill":
        return _fill(a["value"])
    if op == "print":
        return _print(a["msg"], a["print_only_if_job0"], out_stream)
    raise ValueError(f"unknown instruction {op!r}")


# ---- replay: one instruction's numpy work with its operands bound ----------------------
#
# A replayed launch (``kdt.simulator.replay``) runs the instructions one recorded launch executed, in
# order, on another launch's arrays. ``make_binder(inst)`` returns ``bind(ins, o, val, out_stream)``: given
# the input arrays, the output ``WriteTarget`` (or None), the scalar ``compute`` returned (``val``) and the
# print stream, a function of no arguments doing exactly the numpy calls ``compute`` does (same functions,
# same operands, same order: the same bits). Everything that cannot depend on the data (scalars, checks,
# broadcast targets, overlap of views) is decided once, when binding.


class WriteTarget:
    """An output view for a bound instruction: ``data`` (the view), ``wdata``/``widx`` as in ``RV``."""

    __slots__ = ("data", "wdata", "widx")

    def __init__(self, data, wdata, widx):
        self.data, self.wdata, self.widx = data, wdata, widx

    def write(self, result) -> None:
        """``RV.write``: the result into the view, the last element along a broadcast dimension winning."""
        if self.widx is None:
            np.copyto(self.data, result, casting="unsafe")
        else:
            np.copyto(self.wdata, np.asarray(result)[self.widx], casting="unsafe")


def _bind_ufunc2(uf):
    def bind(ins, o, val, out_stream):
        a, b = ins
        if o.widx is None:
            return partial(uf, a, b, out=o.data, casting="unsafe")
        return lambda: o.write(uf(a, b))
    return bind


def _bind_ufunc_out(uf, a, b, o):
    """``_write_ufunc(uf, a(), b(), o)`` with ``a``/``b`` computed at call time."""
    if o.widx is None and o.data.dtype == np.float32:
        od = o.data
        return lambda: uf(a(), b(), out=od)
    return lambda: o.write(uf(a(), b()))


def _bind_exp(ins, o, val, out_stream):
    x, y = ins[0], val
    if x.dtype == np.float32:  # np.asarray(x, dtype=float32) is x itself; _full(x, y) is the same array each time
        base = _full(x, y)
        return _bind_ufunc_out(np.power, lambda: base, lambda: x, o)
    return _bind_ufunc_out(np.power, lambda: _full(x, y), lambda: np.asarray(x, dtype=np.float32), o)


def _bind_pow(ins, o, val, out_stream):
    x, y = ins[0], val
    if x.dtype == np.float32:
        expo = _full(x, y)
        return _bind_ufunc_out(np.power, lambda: x, lambda: expo, o)
    return _bind_ufunc_out(np.power, lambda: np.asarray(x, dtype=np.float32),
                           lambda: _full(x, y), o)


def _bind_log(ins, o, val, out_stream):
    x, ly = ins[0], np.log(val)
    return lambda: o.write(np.log(x, dtype=np.float32) / ly)


def _bind_fma(ins, o, val, out_stream):
    a, b, c = ins
    return lambda: o.write(np.add(np.multiply(a, b), c))


def _bind_reduce(op, dim):
    uf = _REDUCE_UFUNCS[op]

    def bind(ins, o, val, out_stream):
        x = ins[0]
        return lambda: o.write(uf.reduce(x, axis=dim))
    return bind


def _bind_matmul(ins, o, val, out_stream):
    a, b = ins
    if not val:
        return lambda: o.write(np.matmul(a, b))
    od = o.data
    if o.widx is None:
        return lambda: np.add(np.matmul(a, b), od, out=od)
    return lambda: o.write(np.matmul(a, b) + od)


def _bind_where(ins, o, val, out_stream):
    c, a, b = ins
    return lambda: o.write(np.where(c, a, b))


def _bind_copy(ins, o, val, out_stream):
    src = ins[0]
    if np.may_share_memory(src, o.data):  # decided by the views alone, which a launch never moves
        return lambda: o.write(src.copy())
    if o.widx is None:
        return partial(np.copyto, o.data, src, casting="unsafe")
    return lambda: o.write(src)


def _bind_fill(value):
    def bind(ins, o, val, out_stream):
        v = bool(value) if o.data.dtype == np.bool_ else _F32(value)
        wdata = o.wdata

        def run():
            wdata[...] = v
        return run
    return bind


def _bind_print(msg):
    def bind(ins, o, val, out_stream):
        job = val
        x = ins[0]
        return lambda: print(f"[Job {job}] {msg}: {np.array(x)}", file=out_stream())
    return bind


def make_binder(inst):
    """``bind(ins, o, val, out_stream) -> run()`` for one instruction (see "replay" above); ``val`` is what
    the instruction's ``compute`` returned when it executed (its scalar: ``y``, ``accumulate``, or
    the job id for a print)."""
    op, a = inst.op, inst.args
    if op in _BINARY_UFUNCS:
        return _bind_ufunc2(_BINARY_UFUNCS[op])
    binders = {"exp": _bind_exp, "log": _bind_log, "pow": _bind_pow, "fma": _bind_fma, "matmul": _bind_matmul,
               "where": _bind_where, "copy": _bind_copy, "load": _bind_copy, "store": _bind_copy}
    if op in binders:
        return binders[op]
    if op == "reduce":
        return _bind_reduce(a["op"], a["dim"])
    if op == "fill":
        return _bind_fill(a["value"])
    if op == "print":
        return _bind_print(a["msg"])
    raise ValueError(f"unknown instruction {op!r}")


# ---- shape checks (§3) --------------------------------------------------------------------------


def shape_error(op: str, shapes: dict, dim: int | None = None) -> str | None:
    """The problem with these operand shapes (parameter name -> shape), or None if they fit; the ranks
    come from the instruction table (``kdt.ir.ops``)."""
    for p in OPS[op].params:
        if p.rank is not None and p.name in shapes and len(shapes[p.name]) != p.rank:
            return f"{op} needs {p.rank}-D tiles, got " + ", ".join(f"{r} {s}" for r, s in shapes.items())
    if op == "reduce":
        x, out = shapes["x"], shapes["out"]
        want = x[:dim] + x[dim + 1:]
        return None if out == want else f"reduce over dim {dim} of {x} gives {want}, but out is {out}"
    if op == "matmul":
        a, b, out = shapes["a"], shapes["b"], shapes["out"]
        if a[1] != b[0] or out != (a[0], b[1]):
            return f"matmul needs (M, K) @ (K, N) -> (M, N), got a {a}, b {b}, out {out}"
        return None
    if len(set(shapes.values())) > 1:
        return "operand shapes differ: " + ", ".join(f"{r} {s}" for r, s in shapes.items())
    return None


# ---- latency (§4) -------------------------------------------------------------------------------


def _pad(x: int, m: int) -> int:
    return -(-x // m) * m


def vector_latency(numel: int, vxm_trpt: int) -> int:
    """``ceil(numel / vxm_trpt)`` cycles."""
    return -(-numel // vxm_trpt)


def matmul_latency(m: int, k: int, n: int, mxm_trpt: int) -> int:
    """``ceil(pad(M,128) * pad(K,16) * pad(N,128) / mxm_trpt)`` cycles."""
    return -(-(_pad(m, 128) * _pad(k, 16) * _pad(n, 128)) // mxm_trpt)


def numel(shape) -> int:
    return math.prod(shape)
