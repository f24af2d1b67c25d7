"""JSON form of a compiled kernel, and its strict loader for untrusted input.

The grading service compiles a submission in a sandboxed child, which sends this JSON over a pipe; the
trusted worker loads it here before simulating. So ``loads`` treats its input as hostile: a size limit
before parsing, an exact schema (no unknown or missing keys, ``bool`` never accepted for ``int``),
limits on nesting depth, node count, dimensions, magnitudes and string lengths, and cross-checks
(storage ids, slots defined exactly once, per-instruction parameters and constants). Anything else
raises ``IRFormatError`` with the JSON path of the problem.

Nesting is limited as a whole: a statement block at depth ``d`` (the body is depth 1) holds expressions
that start at depth ``d``, and no statement or expression may be deeper than ``MAX_DEPTH``. The loader
and the simulator are recursive, so a budget per kind (statements, then expressions inside them) would
add up to more Python frames than the interpreter allows.

Layout (``FORMAT``/``VERSION`` identify it)::

    {"format": "kdt-ir", "version": 1, "name": str, "num_jobs": int, "num_slots": int,
     "storages": [{"kind": "io"|"spm", "name": str, "shape": [int], "dtype": "float32"|"bool"}],
     "body": [stmt]}
    stmt: {"t": "assign", "slot", "name", "value": expr, "line"}
          {"t": "for", "slot", "name", "start": expr, "end": expr, "body": [stmt], "line"}
          {"t": "if", "cond": expr, "then": [stmt], "else": [stmt], "line"}
          {"t": "inst", "op", "args": {param: view | expr | const}, "line", "col", "alloc": bool}
          {"t": "raise", "error": one of ops.RAISE_KINDS, "msg": str, "line"}
    view: {"s": storage id, "off": expr, "sizes": [expr], "strides": [int]}
    expr: ["c", value] | ["v", slot, name] | ["job"] | ["un", op, expr] | ["bin", op, expr, expr]
          | ["cmp", op, expr, expr] | ["bool", op, [expr, ...]] | ["ifx", cond, then, else]
"""
import json
import math

from . import nodes as ir
from .ops import (BINARY_OPERATORS, BOOL_OPERATORS, COMPARE_OPERATORS, DTYPES, OPS, RAISE_KINDS, REDUCE_OPS,
                  UNARY_OPERATORS, space_problem)

FORMAT, VERSION = "kdt-ir", 1

MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 200
MAX_NODES = 2_000_000
MAX_STORAGES = 4096
MAX_DIMS = 8
MAX_INT = 1 << 62
MAX_DIM_SIZE = 1 << 40
MAX_STRIDE = 1 << 40
MAX_JOBS = 1 << 31
MAX_NAME = 256
MAX_MSG = 1 << 20
MAX_LINE = 10_000_000


class IRFormatError(ValueError):
    """The JSON is not a valid kernel IR; the message names the JSON path and the problem."""


class IRMemorySpaceError(IRFormatError, KeyError):
    """An instruction of the IR takes a tile in the wrong memory space (spec §3; ``kdt.ir.ops``): refused
    like any malformed IR, and matching ``KeyError`` like the front end's ``MemorySpaceError``."""

    __str__ = ValueError.__str__


def _short(v, limit=60) -> str:
    """``repr(v)`` cut to ``limit`` characters: error messages must not echo megabytes of junk."""
    if isinstance(v, (list, dict)) and len(v) >= 64:
        text = f"<{type(v).__name__} of {len(v)}>"
    elif type(v) is int and abs(v) >= 1 << 128:
        text = f"<an integer of {v.bit_length()} bits>"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ---- encoding -----------------------------------------------------------------------------------


def kernel_to_dict(k: ir.Kernel) -> dict:
    """The plain-data (JSON-ready) form of a kernel."""
    return {"format": FORMAT, "version": VERSION, "name": k.name, "num_jobs": k.num_jobs,
            "num_slots": k.num_slots,
            "storages": [{"kind": s.kind, "name": s.name, "shape": list(s.shape), "dtype": s.dtype}
                         for s in k.storages],
            "body": [_enc_stmt(s) for s in k.body]}


def dumps(k: ir.Kernel) -> str:
    """Serialise a kernel to JSON text (``Infinity``/``NaN`` allowed for float constants)."""
    return json.dumps(kernel_to_dict(k), separators=(",", ":"))


def _enc_expr(e):
    t = type(e)
    if t is ir.Const:
        return ["c", e.value]
    if t is ir.Var:
        return ["v", e.slot, e.name]
    if t is ir.JobId:
        return ["job"]
    if t is ir.Unary:
        return ["un", e.op, _enc_expr(e.operand)]
    if t is ir.Binary:
        return ["bin", e.op, _enc_expr(e.left), _enc_expr(e.right)]
    if t is ir.Compare:
        return ["cmp", e.op, _enc_expr(e.left), _enc_expr(e.right)]
    if t is ir.BoolOp:
        return ["bool", e.op, [_enc_expr(v) for v in e.values]]
    if t is ir.IfExp:
        return ["ifx", _enc_expr(e.cond), _enc_expr(e.then), _enc_expr(e.orelse)]
    raise TypeError(f"not an IR expression: {e!r}")


def _enc_view(v: ir.View):
    return {"s": v.storage, "off": _enc_expr(v.offset), "sizes": [_enc_expr(s) for s in v.sizes],
            "strides": list(v.strides)}


def _enc_stmt(s):
    t = type(s)
    if t is ir.Assign:
        return {"t": "assign", "slot": s.slot, "name": s.name, "value": _enc_expr(s.value), "line": s.line}
    if t is ir.For:
        return {"t": "for", "slot": s.slot, "name": s.name, "start": _enc_expr(s.start),
                "end": _enc_expr(s.end), "body": [_enc_stmt(b) for b in s.body], "line": s.line}
    if t is ir.If:
        return {"t": "if", "cond": _enc_expr(s.cond), "then": [_enc_stmt(b) for b in s.then],
                "else": [_enc_stmt(b) for b in s.orelse], "line": s.line}
    if t is ir.Raise:
        return {"t": "raise", "error": s.error, "msg": s.message, "line": s.line}
    args = {}
    for p in OPS[s.op].params:
        v = s.args[p.name]
        if isinstance(v, ir.View):
            args[p.name] = _enc_view(v)
        elif p.kind == "scalar":
            args[p.name] = _enc_expr(v)
        else:
            args[p.name] = v
    return {"t": "inst", "op": s.op, "args": args, "line": s.line, "col": s.col, "alloc": s.alloc}


def expanded_size(k: ir.Kernel, limit: int = MAX_NODES) -> int:
    """The number of IR nodes of ``k`` as JSON writes it, with shared sub-expressions counted at every
    use (one pass over the shared graph; stops counting past ``limit``). Front-end scalar names share
    their expression with every use, so a chain like ``b = a + a; c = b + b`` doubles at each step."""
    sizes: dict[int, tuple] = {}

    def expr(e) -> int:
        hit = sizes.get(id(e))
        if hit is not None:
            return hit[1]
        t = type(e)
        if t is ir.Unary:
            n = 1 + expr(e.operand)
        elif t is ir.Binary or t is ir.Compare:
            n = 1 + expr(e.left) + expr(e.right)
        elif t is ir.BoolOp:
            n = 1 + sum(expr(v) for v in e.values)
        elif t is ir.IfExp:
            n = 1 + expr(e.cond) + expr(e.then) + expr(e.orelse)
        else:
            n = 1
        n = min(n, limit + 1)
        sizes[id(e)] = (e, n)  # the node itself keeps its id from being reused while counting
        return n

    def view(v) -> int:
        return 1 + expr(v.offset) + sum(expr(x) for x in v.sizes)

    def block(stmts) -> int:
        total = 0
        for s in stmts:
            t = type(s)
            if t is ir.Inst:
                total += 1 + sum(view(a) if isinstance(a, ir.View) else expr(a) if isinstance(
                    a, (ir.Const, ir.Var, ir.JobId, ir.Unary, ir.Binary, ir.Compare, ir.BoolOp, ir.IfExp)) else 0
                    for a in s.args.values())
            elif t is ir.Assign:
                total += 1 + expr(s.value)
            elif t is ir.For:
                total += 1 + expr(s.start) + expr(s.end) + block(s.body)
            elif t is ir.If:
                total += 1 + expr(s.cond) + block(s.then) + block(s.orelse)
            else:
                total += 1
            if total > limit:
                return limit + 1
        return total

    return block(k.body)


# ---- decoding (untrusted) -----------------------------------------------------------------------


def loads(text) -> ir.Kernel:
    """Parse and validate untrusted JSON text (str or bytes) into a kernel; raises ``IRFormatError``."""
    if isinstance(text, (bytes, bytearray)):
        if len(text) > MAX_BYTES:
            raise IRFormatError(f"IR JSON is {len(text)} bytes, more than the limit of {MAX_BYTES}")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IRFormatError(f"IR JSON is not UTF-8: {exc}") from None
    if not isinstance(text, str):
        raise IRFormatError(f"IR JSON must be text, got {type(text).__name__}")
    if len(text) > MAX_BYTES:
        raise IRFormatError(f"IR JSON is {len(text)} characters, more than the limit of {MAX_BYTES}")
    try:
        data = json.loads(text)
    except RecursionError:
        raise IRFormatError("IR JSON is nested too deeply") from None
    except ValueError as exc:
        raise IRFormatError(f"IR JSON does not parse: {_short(str(exc), 200)}") from None
    return kernel_from_dict(data)


def kernel_from_dict(data) -> ir.Kernel:
    """Validate plain data (as produced by ``kernel_to_dict``) into a kernel; raises ``IRFormatError``."""
    try:
        return _Decoder().kernel(data)
    except RecursionError:  # a backstop: MAX_DEPTH keeps the recursion far below the limit
        raise IRFormatError("IR nested too deeply for the loader") from None


_EXPR_ARITY = {"c": 2, "v": 3, "job": 1, "un": 3, "bin": 4, "cmp": 4, "bool": 3, "ifx": 4}


class _Decoder:
    def __init__(self):
        self.nodes = 0
        self.defined: set[int] = set()
        self.used: dict[int, str] = {}
        self.num_slots = 0
        self.storages: tuple = ()

    # -- primitives --

    def fail(self, path, message):
        raise IRFormatError(f"{path}: {message}")

    def count(self, path):
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.fail(path, f"more than {MAX_NODES} IR nodes")

    def obj(self, d, path, keys):
        if not isinstance(d, dict):
            self.fail(path, f"expected an object, got {_tname(d)}")
        if d.keys() != set(keys):
            extra, missing = sorted(set(d) - set(keys), key=repr), sorted(set(keys) - set(d))
            shown = ", ".join(_short(k, 40) for k in extra[:5]) + (f", ... ({len(extra)} in all)"
                                                                    if len(extra) > 5 else "")
            self.fail(path, f"wrong keys (unknown: [{shown}], missing: {missing})")
        return d

    def int(self, v, path, lo, hi):
        if type(v) is not int:
            self.fail(path, f"expected an integer, got {_tname(v)}")
        if not lo <= v <= hi:
            shown = v if abs(v) < 1 << 128 else f"an integer of {v.bit_length()} bits"
            self.fail(path, f"{shown} is outside [{lo}, {hi}]")
        return v

    def str(self, v, path, limit=MAX_NAME, choices=None):
        if type(v) is not str:
            self.fail(path, f"expected a string, got {_tname(v)}")
        if len(v) > limit:
            self.fail(path, f"string longer than {limit} characters")
        if choices is not None and v not in choices:
            self.fail(path, f"{v!r} is not one of {sorted(choices)}")
        return v

    def list(self, v, path, limit=None):
        if not isinstance(v, list):
            self.fail(path, f"expected a list, got {_tname(v)}")
        if limit is not None and len(v) > limit:
            self.fail(path, f"more than {limit} entries")
        return v

    def node_list(self, v, path):
        """A list of statements or expressions: each entry is at least one node, so a list longer
        than the remaining node budget is rejected before walking it."""
        self.list(v, path)
        if len(v) > MAX_NODES - self.nodes:
            self.fail(path, f"more than {MAX_NODES} IR nodes")
        return v

    def number(self, v, path):
        if type(v) is bool or type(v) is float:
            return v
        if type(v) is int:
            return self.int(v, path, -MAX_INT, MAX_INT)
        self.fail(path, f"expected a number or bool, got {_tname(v)}")

    # -- kernel --

    def kernel(self, d) -> ir.Kernel:
        self.obj(d, "$", ("format", "version", "name", "num_jobs", "num_slots", "storages", "body"))
        fmt, version = d["format"], d["version"]
        if type(fmt) is not str or fmt != FORMAT or type(version) is not int or version != VERSION:
            self.fail("$", f"unsupported IR format {_short(fmt)} version {_short(version)}")
        name = self.str(d["name"], "$.name")
        num_jobs = self.int(d["num_jobs"], "$.num_jobs", 1, MAX_JOBS)
        self.num_slots = self.int(d["num_slots"], "$.num_slots", 1, MAX_NODES)
        self.storages = self.storage_list(d["storages"])
        body = self.block(d["body"], "$.body", 1)
        for slot, path in self.used.items():
            if slot != 0 and slot not in self.defined:
                self.fail(path, f"slot {slot} is read but never assigned")
        io = tuple(ir.TensorMeta(s.name, s.shape, s.dtype) for s in self.storages if s.kind == "io")
        return ir.Kernel(name, num_jobs, io, self.storages, self.num_slots, body)

    def storage_list(self, items):
        items = self.list(items, "$.storages", MAX_STORAGES)
        out, seen_spm, io_names = [], False, set()
        for i, s in enumerate(items):
            path = f"$.storages[{i}]"
            self.obj(s, path, ("kind", "name", "shape", "dtype"))
            kind = self.str(s["kind"], path + ".kind", choices=("io", "spm"))
            name = self.str(s["name"], path + ".name")
            if kind == "io":
                if seen_spm:
                    self.fail(path, "io storages must come before spm storages")
                if name in io_names:
                    self.fail(path, f"duplicate io tensor name {name!r}")
                io_names.add(name)
            seen_spm |= kind == "spm"
            # An spm dimension may be negative: alloc_spm refuses it at launch, as the handout does (§2).
            low = 0 if kind == "io" else -MAX_DIM_SIZE
            shape = tuple(self.int(x, f"{path}.shape[{j}]", low, MAX_DIM_SIZE)
                          for j, x in enumerate(self.list(s["shape"], path + ".shape", MAX_DIMS)))
            numel = abs(math.prod(shape))
            if numel > MAX_DIM_SIZE:
                self.fail(path, f"{numel} elements is more than {MAX_DIM_SIZE}")
            out.append(ir.Storage(i, kind, name, shape, self.str(s["dtype"], path + ".dtype", choices=DTYPES)))
        return tuple(out)

    # -- statements --

    def block(self, items, path, depth):
        if depth > MAX_DEPTH:
            self.fail(path, f"statements nested deeper than {MAX_DEPTH} (statements and expressions together)")
        return tuple(self.stmt(s, f"{path}[{i}]", depth) for i, s in enumerate(self.node_list(items, path)))

    def stmt(self, s, path, depth):
        """One statement of a block at ``depth``; its expressions start at the same depth."""
        self.count(path)
        if not isinstance(s, dict) or "t" not in s:
            self.fail(path, "expected a statement object with a 't' field")
        kind = s["t"]
        if kind == "assign":
            self.obj(s, path, ("t", "slot", "name", "value", "line"))
            slot = self.define(s["slot"], path + ".slot")
            return ir.Assign(slot, self.str(s["name"], path + ".name"),
                             self.expr(s["value"], path + ".value", depth),
                             self.int(s["line"], path + ".line", 0, MAX_LINE))
        if kind == "for":
            self.obj(s, path, ("t", "slot", "name", "start", "end", "body", "line"))
            slot = self.define(s["slot"], path + ".slot")
            return ir.For(slot, self.str(s["name"], path + ".name"), self.expr(s["start"], path + ".start", depth),
                          self.expr(s["end"], path + ".end", depth),
                          self.block(s["body"], path + ".body", depth + 1),
                          self.int(s["line"], path + ".line", 0, MAX_LINE))
        if kind == "if":
            self.obj(s, path, ("t", "cond", "then", "else", "line"))
            return ir.If(self.expr(s["cond"], path + ".cond", depth),
                         self.block(s["then"], path + ".then", depth + 1),
                         self.block(s["else"], path + ".else", depth + 1),
                         self.int(s["line"], path + ".line", 0, MAX_LINE))
        if kind == "inst":
            return self.inst(s, path, depth)
        if kind == "raise":
            self.obj(s, path, ("t", "error", "msg", "line"))
            return ir.Raise(self.str(s["error"], path + ".error", choices=RAISE_KINDS),
                            self.str(s["msg"], path + ".msg", MAX_MSG),
                            self.int(s["line"], path + ".line", 0, MAX_LINE))
        self.fail(path, f"unknown statement kind {_short(kind)}")

    def define(self, slot, path):
        slot = self.int(slot, path, 1, self.num_slots - 1)
        if slot in self.defined:
            self.fail(path, f"slot {slot} is assigned more than once")
        self.defined.add(slot)
        return slot

    def inst(self, s, path, depth):
        self.obj(s, path, ("t", "op", "args", "line", "col", "alloc"))
        op = self.str(s["op"], path + ".op")
        spec = OPS.get(op)
        if spec is None:
            self.fail(path + ".op", f"unknown instruction {op!r}")
        raw = self.obj(s["args"], path + ".args", tuple(p.name for p in spec.params))
        args = {}
        for p in spec.params:
            ap = f"{path}.args.{p.name}"
            v = raw[p.name]
            if p.kind in ("in", "out"):
                args[p.name] = self.view(v, ap, depth)
                self.check_space(op, p.name, args[p.name], ap)
            elif p.kind == "scalar":
                args[p.name] = self.expr(v, ap, depth)
            else:
                args[p.name] = v
        self.check_consts(op, args, path)
        if type(s["alloc"]) is not bool or (s["alloc"] and op != "fill"):
            self.fail(path + ".alloc", "alloc must be a bool, and true only for fill")
        return ir.Inst(op, args, self.int(s["line"], path + ".line", 0, MAX_LINE),
                       self.int(s["col"], path + ".col", 0, MAX_LINE), s["alloc"])

    def check_space(self, op, param, view, path):
        problem = space_problem(op, param, self.storages[view.storage])
        if problem is not None:
            raise IRMemorySpaceError(f"{path}: {problem}")

    def check_consts(self, op, args, path):
        if op == "reduce":
            ndim = len(args["x"].sizes)
            self.int(args["dim"], path + ".args.dim", 0, max(ndim - 1, 0))
            if ndim == 0:
                self.fail(path + ".args.x", "reduce needs a tile with at least one dimension")
            self.str(args["op"], path + ".args.op", choices=REDUCE_OPS)
        elif op == "fill":
            self.number(args["value"], path + ".args.value")
        elif op == "print":
            self.str(args["msg"], path + ".args.msg", MAX_MSG)
            if type(args["print_only_if_job0"]) is not bool:
                self.fail(path + ".args.print_only_if_job0", "expected a bool")

    # -- views and expressions --

    def view(self, v, path, depth):
        self.count(path)
        self.obj(v, path, ("s", "off", "sizes", "strides"))
        sid = self.int(v["s"], path + ".s", 0, len(self.storages) - 1)
        sizes = self.list(v["sizes"], path + ".sizes", MAX_DIMS)
        strides = self.list(v["strides"], path + ".strides", MAX_DIMS)
        if len(sizes) != len(strides):
            self.fail(path, "sizes and strides differ in length")
        base = path + ".sizes"
        return ir.View(sid, self.expr(v["off"], path + ".off", depth),
                       tuple(self.expr(e, (base, i), depth) for i, e in enumerate(sizes)),
                       tuple(self.int(x, f"{path}.strides[{i}]", -MAX_STRIDE, MAX_STRIDE)
                             for i, x in enumerate(strides)))

    def expr(self, e, path, depth):
        """One expression. ``path`` is its JSON path, or ``(parent path, index)`` for an entry of a list:
        leaves, most of the nodes, are decoded without ever building their path string."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.fail(_path(path), f"more than {MAX_NODES} IR nodes")
        if depth > MAX_DEPTH:
            self.fail(_path(path), f"expression nested deeper than {MAX_DEPTH} (statements and expressions "
                      "together)")
        if type(e) is not list or not e or type(e[0]) is not str:
            self.fail(_path(path), "expected an expression list such as [\"c\", 1]")
        tag, n, d = e[0], len(e), depth + 1
        if n == 1 and tag == "job":
            return _JOB
        if n == 2 and tag == "c":
            v = e[1]
            t = type(v)
            if t is int and -_SMALL <= v <= _SMALL:
                return _SMALL_INTS[v + _SMALL]
            if t is float or t is bool or (t is int and -MAX_INT <= v <= MAX_INT):
                return ir.Const(v)
            return ir.Const(self.number(v, _path(path) + "[1]"))  # raises with the right message
        path = _path(path)
        shape = _EXPR_ARITY.get(tag)
        if shape is None:
            self.fail(path, f"unknown expression tag {_short(tag)}")
        if n != shape:
            self.fail(path, f"'{tag}' takes {shape - 1} operand(s), got {n - 1}")
        if tag == "c":
            return ir.Const(self.number(e[1], path + "[1]"))
        if tag == "v":
            slot = self.int(e[1], path + "[1]", 0, self.num_slots - 1)
            self.used.setdefault(slot, path)
            return ir.Var(slot, self.str(e[2], path + "[2]"))
        if tag == "job":
            return ir.JobId()
        if tag == "un":
            return ir.Unary(self.str(e[1], path + "[1]", choices=UNARY_OPERATORS), self.expr(e[2], path + "[2]", d))
        if tag in ("bin", "cmp"):
            ops = BINARY_OPERATORS if tag == "bin" else COMPARE_OPERATORS
            cls = ir.Binary if tag == "bin" else ir.Compare
            return cls(self.str(e[1], path + "[1]", choices=ops), self.expr(e[2], path + "[2]", d),
                       self.expr(e[3], path + "[3]", d))
        if tag == "bool":
            values = self.node_list(e[2], path + "[2]")
            if len(values) < 2:
                self.fail(path, "'bool' needs at least two operands")
            base = path + "[2]"
            return ir.BoolOp(self.str(e[1], path + "[1]", choices=BOOL_OPERATORS),
                             tuple(self.expr(v, (base, i), d) for i, v in enumerate(values)))
        return ir.IfExp(self.expr(e[1], path + "[1]", d), self.expr(e[2], path + "[2]", d),
                        self.expr(e[3], path + "[3]", d))


_JOB = ir.JobId()  # nodes are immutable: the leaves that compare equal anyway can be shared
_SMALL = 1024
_SMALL_INTS = tuple(ir.Const(i) for i in range(-_SMALL, _SMALL + 1))


def _path(path) -> str:
    """The JSON path string of ``path`` (a string, or ``(parent path, index)`` of a list entry)."""
    return path if type(path) is str else f"{path[0]}[{path[1]}]"


def _tname(v) -> str:
    return "null" if v is None else type(v).__name__
