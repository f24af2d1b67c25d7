"""Compile a kernel's IR once per launch into nested Python closures that execute one job
(spec kdt-semantics.md §3 for the meaning, §4 for the timing).

Closures instead of a tree walk: each statement becomes a function ``f(env)`` with everything that is
known before the first job (constant views, static shapes and latencies, operator functions) already
bound, so the per-instruction cost is a few attribute reads, the numpy operation and the stamp updates.
No IR field is ever turned into Python source.
"""
import builtins
import math
import time

from ..ir import nodes as ir
from ..ir.affine import expr_type
from ..ir.ops import MATRIX, MEMORY, OPS, RAISE_KINDS, UNIT_OF_CLASS, VECTOR, space_problem
from . import errors as launch_errors
from .clock import TimeLimit
from .errors import LaunchError, MemorySpaceError, ShapeError, SimulationTimeout
from .errors import TypeError as LaunchTypeError
from .errors import UFuncTypeError
from .errors import ValueError as LaunchValueError
from .exprs import compile_expr
from .memory import FULL, RV, check_bounds, element_with_stamp, stamp_max, stamp_set, view_contains
from .semantics import make_binder, make_compute, matmul_latency, numel, shape_error, vector_latency

_RESOLVE_CACHE_LIMIT = 4096
# Broadcasting (stride 0) can make a view of any size; one numpy call on 10**12 elements would ignore the
# wall-clock limit and the memory. Real kernels stay far below (the largest contest tensor has 2**20).
MAX_VIEW_ELEMENTS = 1 << 26
BLOCK_CHECK_EVERY = 16  # statements of a straight-line block between two looks at the time limit
_UNIT_INDEX = {VECTOR: 1, MATRIX: 2}


class JobState:
    """Timing state of the job being simulated, in absolute cycles (see ``memory`` on epochs).

    ``free[1]``/``free[2]`` are the VXM/MXM free cycles; ``trace`` is a list to append
    ``(op, issue, finish, unit, line, cause, wait, gate)`` records to (relative cycles; see ``stall_of``),
    or None. ``record`` (None, or a list of at most ``record_cap`` entries, then None again) receives every
    executed instruction for ``kdt.simulator.replay``. For a traced job, ``access`` (storage id -> list of
    ``(trace index, view, is_write)``), ``unit_owner`` (per unit, the trace index of the instruction that
    keeps it busy) and ``last_holder`` (the last instruction that held the issue unit) name the
    instructions a stall waits for (``kdt.simulator.explain``).
    """

    __slots__ = ("next_issue", "free", "job_end", "base", "trace", "limit", "job", "record", "record_cap",
                 "access", "unit_owner", "last_holder")

    def __init__(self, limit: TimeLimit):
        self.limit = limit
        self.base = 0
        self.record = None  # a list receiving (bind, ins, out, val, line) per executed tile instruction
        self.record_cap = 0
        self.access = self.unit_owner = self.last_holder = None
        self.start_job(0, 0)

    def start_job(self, job: int, base: int, trace: list | None = None) -> None:
        """Reset the timing state for job ``job``, which starts at absolute cycle ``base`` (spec §4: the
        state of a job is reset at its start). ``trace`` receives the job's records, or None (untraced);
        only a traced job keeps the bookkeeping ``stall_of`` reads (an untraced launch pays nothing)."""
        self.job, self.base, self.trace = job, base, trace
        self.next_issue = base + 1
        self.free = [base, base, base]
        self.job_end = base
        if trace is not None:
            self.access, self.unit_owner, self.last_holder = {}, [None, None, None], None


def guarded(f, line: int):
    """``f`` with Python's scalar errors (``1 // 0``, ``1.5 << 2``) turned into launch errors naming
    ``line``."""
    def run(env):
        try:
            return f(env)
        except LaunchError:
            raise
        except (ArithmeticError, builtins.TypeError, builtins.ValueError) as exc:
            raise scalar_error(f"Line {line}", exc) from None
    return run


def scalar_error(where: str, exc: Exception) -> LaunchError:
    """The launch error for a Python error of a scalar computation (``TypeError`` stays a TypeError)."""
    if isinstance(exc, builtins.TypeError):
        return LaunchTypeError(f"{where}: {exc}")
    return LaunchValueError(f"{where}: {type(exc).__name__}: {exc}")


class ViewResolver:
    """Turns an ``ir.View`` into an ``RV`` for the current slot values, checking bounds (§3).

    Constant views are resolved once; dynamic ones are cached by (offset, sizes)."""

    def __init__(self, view: ir.View, storage, slot_types, where: str):
        self.st = storage
        self.strides = view.strides
        self.where = where
        self.off_f = compile_expr(view.offset, slot_types)
        self.size_fs = [compile_expr(s, slot_types) for s in view.sizes]
        self.static = type(view.offset) is ir.Const and all(type(s) is ir.Const for s in view.sizes)
        self.static_sizes = tuple(s.value for s in view.sizes) if all(type(s) is ir.Const for s in view.sizes) \
            else None
        self.cache: dict = {}
        self.fixed = None

    def __call__(self, env) -> RV:
        if self.fixed is not None:
            return self.fixed
        off = self.off_f(env)
        sizes = self.static_sizes or tuple(f(env) for f in self.size_fs)
        key = (off, sizes)
        rv = self.cache.get(key)
        if rv is None:
            rv = self.make(off, sizes)
            if self.static:
                self.fixed = rv
            elif len(self.cache) >= _RESOLVE_CACHE_LIMIT:
                self.cache.clear()
            self.cache[key] = rv
        return rv

    def make(self, off, sizes) -> RV:
        for v in (off, *sizes):
            if type(v) is not int:
                if type(v) is bool:
                    continue
                raise LaunchTypeError(f"{self.where}: view offsets and sizes must be ints, got "
                                      f"{type(v).__name__} {v!r}")
        off, sizes = int(off), tuple(int(s) for s in sizes)
        if math.prod(sizes) > MAX_VIEW_ELEMENTS:
            raise LaunchValueError(f"{self.where}: a view of {math.prod(sizes)} elements (sizes {sizes}) is more "
                                   f"than the simulator handles ({MAX_VIEW_ELEMENTS}; no contest kernel needs "
                                   "a view this large)")
        check_bounds(self.st, off, sizes, self.strides, self.where)
        return RV(self.st, off, sizes, self.strides)


class ProgramBuilder:
    """Builds the closures of one kernel for one launch (bound to that launch's storages)."""

    def __init__(self, kernel: ir.Kernel, storages: list, spec, state: JobState, out_stream, *,
                 timing: bool = True):
        self.kernel = kernel
        self.timing = timing
        self.storages = storages
        self.spec = spec
        self.state = state
        self.out_stream = out_stream
        self.slot_types = _slot_types(kernel)
        self.unwritten = frozenset(st.id for st in kernel.storages) - _written_storages(kernel)

    def build(self):
        return self.block(self.kernel.body)

    def block(self, stmts):
        fns = [self.stmt(s) for s in stmts]
        if len(fns) == 1:
            return fns[0]
        if len(fns) <= BLOCK_CHECK_EVERY:
            def run_block(env):
                for f in fns:
                    f(env)
            return run_block
        # A long straight run of statements (hostile: thousands of large matmuls) must not outlast the time
        # limit either: the limit is looked at between chunks, as a loop looks at it between iterations.
        chunks, limit, now = [fns[i:i + BLOCK_CHECK_EVERY] for i in range(0, len(fns), BLOCK_CHECK_EVERY)], \
            self.state.limit, time.monotonic
        line = next((s.line for s in stmts), 0)

        def run_long_block(env):
            for chunk in chunks:
                for f in chunk:
                    f(env)
                if now() > limit.deadline and limit.expired():
                    raise SimulationTimeout(f"simulation passed its {limit.name} (in the block at line {line})")
        return run_long_block

    def stmt(self, s):
        if self.state.limit.passed():  # a huge (hostile) IR must not outlast the limit
            raise SimulationTimeout(f"simulation passed its {self.state.limit.name} while preparing the kernel")
        t = type(s)
        if t is ir.Inst:
            return self.inst(s)
        if t is ir.Assign:
            return self.assign(s)
        if t is ir.For:
            return self.loop(s)
        if t is ir.Raise:
            return self.raise_stmt(s)
        return self.branch(s)

    def raise_stmt(self, s: ir.Raise):
        """An error the handout raises when this statement executes (and only then)."""
        if s.error not in RAISE_KINDS:
            raise LaunchValueError(f"Line {s.line}: unknown error kind {s.error!r} in a raise statement")
        cls, message = getattr(launch_errors, s.error), f"Line {s.line}: {s.message}"

        def run_raise(env):
            raise cls(message)
        return run_raise

    def assign(self, s: ir.Assign):
        f, slot = guarded(compile_expr(s.value, self.slot_types), s.line), s.slot

        def run_assign(env):
            env[slot] = f(env)
        return run_assign

    def loop(self, s: ir.For):
        start = guarded(compile_expr(s.start, self.slot_types), s.line)
        end = guarded(compile_expr(s.end, self.slot_types), s.line)
        body, slot, line, state = self.block(s.body), s.slot, s.line, self.state
        now = time.monotonic

        def run_for(env):
            lo, hi = start(env), end(env)
            if type(lo) not in (int, bool) or type(hi) not in (int, bool):
                raise LaunchTypeError(f"Line {line}: range() bounds must be ints, got "
                                      f"{type(lo).__name__} {lo!r} and {type(hi).__name__} {hi!r}")
            limit = state.limit
            for i in range(lo, hi):
                env[slot] = i
                body(env)
                if now() > limit.deadline and limit.expired():
                    raise SimulationTimeout(f"simulation passed its {limit.name} (at line {line})")
        return run_for

    def branch(self, s: ir.If):
        cond = guarded(compile_expr(s.cond, self.slot_types), s.line)
        then = self.block(s.then) if s.then else None
        orelse = self.block(s.orelse) if s.orelse else None
        line = s.line

        def run_if(env):
            c = cond(env)
            if type(c) is not bool:
                raise LaunchTypeError(f"Line {line}: an if condition must be a bool, got {type(c).__name__} "
                                      f"{c!r} (write e.g. 'if n % 3 != 0:')")
            f = then if c else orelse
            if f is not None:
                f(env)
        return run_if

    # ---- instructions ---------------------------------------------------------------------------

    def inst(self, s: ir.Inst):
        spec = OPS[s.op]
        where = f"Line {s.line}, kdt.{s.op}"
        tiles = {p.name: s.args[p.name] for p in spec.params if isinstance(s.args[p.name], ir.View)}
        for name, view in tiles.items():  # an IR built in Python skipped the front end and the loader
            problem = space_problem(s.op, name, self.kernel.storages[view.storage])
            if problem is not None:
                raise MemorySpaceError(f"{where}: {problem}")
        scalars = {p.name: compile_expr(s.args[p.name], self.slot_types) for p in spec.params
                   if p.kind == "scalar"}
        in_names = [n for n in tiles if n not in spec.tile_outputs]
        in_res = [self.resolver(tiles[n], where) for n in in_names]
        out_res = self.resolver(tiles[spec.tile_outputs[0]], where) if spec.tile_outputs else None
        compute = make_compute(s, scalars, self.out_stream)
        check = _chain(self.shape_check(s, tiles), self.dtype_check(s, spec, tiles, scalars, where))
        if not self.timing:
            return self.untimed(s, in_res, out_res, compute, check, where)
        latency = self.latency_fn(s, tiles)
        return self.timed(s, spec, in_res, out_res, compute, check, latency, where)

    def resolver(self, view: ir.View, where: str) -> ViewResolver:
        return ViewResolver(view, self.storages[view.storage], self.slot_types, where)

    def shape_check(self, s, tiles):
        """None when the shapes are statically fine; else a function raising ``ShapeError`` when due."""
        if s.op in ("fill", "print"):
            return None
        dim = s.args.get("dim")
        names = list(tiles)
        static = [_static_sizes(tiles[n]) for n in names]
        where = f"Line {s.line}, kdt.{s.op}"
        if all(x is not None for x in static):
            problem = shape_error(s.op, dict(zip(names, static)), dim)
            if problem is None:
                return None

            def fail(ins, out, env):
                raise ShapeError(f"{where}: {problem}")
            return fail
        order = names  # inputs first, then the output, matching ``ins + [out]``

        def check(ins, out, env):
            shapes = dict(zip(order, [rv.shape for rv in ins] + [out.shape]))
            problem = shape_error(s.op, shapes, dim)
            if problem:
                raise ShapeError(f"{where}: {problem}")
        return check

    def dtype_check(self, s, spec, tiles, scalars, where):
        """None when every tile operand has a dtype its parameter accepts (``kdt.ir.ops``); else a check
        raising the launch ``UFuncTypeError`` (a ``TypeError``) when the instruction executes (while
        ``dtype_if`` holds)."""
        bad = []
        inputs = {self.kernel.storages[tiles[n].storage].dtype for n in spec.tile_inputs}
        for p in spec.params:
            view = tiles.get(p.name)
            if view is None or p.dtypes is None:
                continue
            dtype = self.kernel.storages[view.storage].dtype
            if dtype not in p.dtypes and not (p.dtype_unless_inputs and inputs == {p.dtype_unless_inputs}):
                cond = scalars[p.dtype_if] if p.dtype_if else None
                bad.append((cond, f"{where}: '{p.name}' is a {dtype} tile, kdt.{s.op} needs "
                                  f"{' or '.join(p.dtypes)} there" + (f" when {p.dtype_if} is true"
                                                                      if p.dtype_if else "")))
        if not bad:
            return None

        def check(ins, out, env):
            for cond, message in bad:
                if cond is None or cond(env):
                    raise UFuncTypeError(message)
        return check

    def latency_fn(self, s, tiles):
        """An int when the latency is static, else a function of the resolved inputs."""
        klass = OPS[s.op].klass
        if klass == MEMORY:
            return self.spec.load_store_latency
        if klass == VECTOR:
            first = tiles[OPS[s.op].tile_inputs[0]]
            sizes = _static_sizes(first)
            trpt = self.spec.vxm_trpt
            if sizes is not None:
                return vector_latency(numel(sizes), trpt)
            return lambda ins: vector_latency(ins[0].numel, trpt)
        if klass == MATRIX:
            a, b = _static_sizes(tiles["a"]), _static_sizes(tiles["b"])
            trpt = self.spec.mxm_trpt
            if a is not None and b is not None and len(a) == 2 and len(b) == 2:
                return matmul_latency(a[0], a[1], b[1], trpt)
            return lambda ins: matmul_latency(ins[0].shape[0], ins[0].shape[1], ins[1].shape[1], trpt)
        return 0

    def timed(self, s, spec, in_res, out_res, compute, check, latency, where):
        """The closure of a tile instruction: resolve, check, compute, then the §4 timing update."""
        state, op, line, unwritten = self.state, s.op, s.line, self.unwritten
        unit = _UNIT_INDEX.get(spec.klass, 0)
        holds_issue = spec.klass != "free"
        unit_name = UNIT_OF_CLASS[spec.klass]
        static_latency = latency if isinstance(latency, int) else None
        execute = _executor(s, in_res, out_res, compute, check, where)
        bind = make_binder(s)

        def run_inst(env):
            operands = execute(env)
            if operands is None:
                return  # spec §3: a print only for job 0, in another job: no output and no timing at all
            ins, out, val = operands
            rec = state.record
            if rec is not None:
                _record(state, rec, (bind, ins, out, val, line))
            issue = state.next_issue
            if unit:
                free = state.free[unit]
                if free > issue:
                    issue = free
            # The uniform-stamp case is inlined: it is almost every operand of real kernels.
            for rv in ins:
                t = rv.w.u
                if t is None or not rv.numel:
                    t = stamp_max(rv, rv.w)
                if t > issue:
                    issue = t
            if out is not None:
                t = out.w.u
                if t is None or not out.numel:
                    t = stamp_max(out, out.w)
                if t > issue:
                    issue = t
                t = out.r.u
                if t is None or not out.numel:
                    t = stamp_max(out, out.r)
                if t > issue:
                    issue = t
            finish = issue + (static_latency if static_latency is not None else latency(ins))
            trace = state.trace
            if trace is not None:  # a traced job, before the stamps, next_issue and the unit's free cycle change
                why = stall_of(state, state.next_issue, unit, ins, out, issue)
                note_access(state, len(trace), ins, out, unit, holds_issue, finish)
                base = state.base
                trace.append((op, issue - base, finish - base, unit_name, line) + why)
            for rv in ins:
                if rv.st.id not in unwritten:  # read stamps only matter to a later writer
                    stamp_set(rv, rv.r, finish)
            if out is not None:
                stamp_set(out, out.w, finish)
            if unit and finish > state.free[unit]:
                state.free[unit] = finish
            if holds_issue:
                state.next_issue = issue + 1
            if finish > state.job_end:
                state.job_end = finish
        return run_inst


    def untimed(self, s, in_res, out_res, compute, check, where):
        """The functional-only closure of a tile instruction (``launch_kernel(..., timing=False)``): the
        same resolution, checks, computation and errors as ``timed`` (one ``_executor``), without the §4
        timing update."""
        only_job0 = s.op == "print" and s.args["print_only_if_job0"]
        fixed_ins = _prefetch(in_res)
        fixed_out = (_prefetch([out_res]) or [None])[0] if out_res is not None else None
        if fixed_ins is not None and (out_res is None or fixed_out is not None) and check is None \
                and not only_job0:
            def run_fixed(env):
                try:
                    compute(fixed_ins, fixed_out, env)
                except LaunchError:
                    raise
                except (ArithmeticError, builtins.TypeError, builtins.ValueError) as exc:
                    raise scalar_error(where, exc) from None
            return run_fixed
        return _executor(s, in_res, out_res, compute, check, where)


def stall_of(state: JobState, nxt: int, unit: int, ins, out, issue: int) -> tuple:
    """``(cause, wait, gate)`` of an instruction of a traced job, from the terms of its issue cycle (spec §4;
    called by the timing update before it stamps this instruction's operands): ``wait = issue - nxt`` cycles
    past the in-order issue slot ``nxt`` (the previous issuing instruction's issue + 1). With no wait the
    cause is ``isu`` and ``gate`` the previous instruction that held the issue unit (None for the job's
    first). Otherwise the first term equal to ``issue``, in the tie order of ``kdt.simulator.explain.CAUSES``:
    ``raw`` (an input element not yet written), ``waw`` (an output element still being written), ``war``
    (an output element still being read), ``unit`` (its VXM/MXM busy); ``gate`` is the trace index of the
    instruction that wrote or read the gating element last, or that keeps the unit busy."""
    wait = issue - nxt
    if wait <= 0:
        return "isu", 0, state.last_holder
    for rv in ins:
        if stamp_max(rv, rv.w) == issue:
            return "raw", wait, _last_access(state, rv, rv.w, issue, True)
    if out is not None:
        if stamp_max(out, out.w) == issue:
            return "waw", wait, _last_access(state, out, out.w, issue, True)
        if stamp_max(out, out.r) == issue:
            return "war", wait, _last_access(state, out, out.r, issue, False)
    return "unit", wait, state.unit_owner[unit]


def _last_access(state: JobState, rv, stamps, t: int, write: bool):
    """Trace index of the latest instruction of this job that wrote (``write``) or read an element of
    ``rv`` whose stamp is ``t``: the one that set that stamp (stamps are assigned, spec §4)."""
    e = element_with_stamp(rv, stamps, t)
    if e is None:
        return None
    for idx, view, is_write in reversed(state.access.get(rv.st.id, ())):
        if is_write == write and view_contains(view, e):
            return idx
    return None


def note_access(state: JobState, idx: int, ins, out, unit: int, holds_issue: bool, finish: int) -> None:
    """Remember, for ``stall_of``, what the traced instruction ``idx`` read, wrote and occupied (called
    after its ``stall_of`` and before the timing update moves the unit's free cycle: it keeps the unit
    busy from now on when its ``finish`` cycle is at least that free cycle, spec §4's max)."""
    access = state.access
    for rv in ins:
        access.setdefault(rv.st.id, []).append((idx, rv, False))
    if out is not None:
        access.setdefault(out.st.id, []).append((idx, out, True))
    if unit and finish >= state.free[unit]:
        state.unit_owner[unit] = idx
    if holds_issue:
        state.last_holder = idx


def _record(state: JobState, rec: list, entry: tuple) -> None:
    """Append one executed instruction to the launch's recording; past ``record_cap`` entries the
    recording stops (``state.record`` becomes None) and the list is emptied (the launch goes on)."""
    if len(rec) >= state.record_cap:
        state.record = None
        rec.clear()
        rec.append(None)  # marks the recording as abandoned
        return
    rec.append(entry)


def _chain(*checks):
    """One check running ``checks`` (None entries skipped) in order, or None when there is none."""
    checks = [c for c in checks if c is not None]
    if len(checks) <= 1:
        return checks[0] if checks else None

    def run(ins, out, env):
        for c in checks:
            c(ins, out, env)
    return run


def _executor(s, in_res, out_res, compute, check, where):
    """``execute(env) -> (ins, out, val)``: resolve the operands' views, run the launch-time ``check`` and the
    functional ``compute`` of one tile instruction (spec §3; ``val`` is what it returned), with scalar errors located at ``where``;
    None (nothing done) for a ``print_only_if_job0`` print in another job. Operands whose view is
    constant are resolved once, now (an out-of-bounds one keeps its resolver, so the error is raised when,
    and only if, the instruction executes)."""
    only_job0 = s.op == "print" and s.args["print_only_if_job0"]
    fixed_ins = _prefetch(in_res)
    fixed_out = (_prefetch([out_res]) or [None])[0] if out_res is not None else None

    def execute(env):
        if only_job0 and env[0] != 0:
            return None
        try:
            ins = fixed_ins if fixed_ins is not None else [r(env) for r in in_res]
            out = fixed_out if fixed_out is not None else (out_res(env) if out_res is not None else None)
            if check is not None:
                check(ins, out, env)
            val = compute(ins, out, env)
        except LaunchError:
            raise
        except (ArithmeticError, builtins.TypeError, builtins.ValueError) as exc:
            raise scalar_error(where, exc) from None
        return ins, out, val
    return execute


def _prefetch(resolvers):
    """The resolved views when every resolver is constant and in bounds, else None."""
    out = []
    for r in resolvers:
        if not r.static:
            return None
        try:
            out.append(r(None))
        except LaunchError:
            return None
    return out


def _static_sizes(view: ir.View):
    if all(type(x) is ir.Const for x in view.sizes):
        return tuple(x.value for x in view.sizes)
    return None


def _written_storages(kernel: ir.Kernel) -> set:
    """Ids of the storages some instruction writes (an ``out`` operand). The read stamps of the others
    are never consulted (only a writer waits for readers, spec §4), so the simulator skips them: a
    kernel streaming from a large io tensor then never materialises its per-element read stamps."""
    written = set()

    def walk(stmts):
        for s in stmts:
            t = type(s)
            if t is ir.Inst:
                for p in OPS[s.op].params:
                    if p.kind == "out" and isinstance(s.args.get(p.name), ir.View):
                        written.add(s.args[p.name].storage)
            elif t is ir.For:
                walk(s.body)
            elif t is ir.If:
                walk(s.then)
                walk(s.orelse)
    walk(kernel.body)
    return written


def spm_to_zero(kernel: ir.Kernel) -> tuple:
    """Ids of the SPM storages that must be zeroed at the start of every job after the first, so that SPM
    is private per job and starts zeroed whatever IR arrives (spec §3; an IR need not come from the front
    end). A storage whose first use is its top-level allocation fill (a fill of the whole storage, as the
    front end emits at every ``alloc_spm``, which every job executes before anything else touches the
    storage) needs no zeroing: the fill overwrites whatever an earlier job left."""
    spm = {st.id: st for st in kernel.storages if st.kind == "spm"}
    covered, touched = set(), set()
    for s in kernel.body:
        if type(s) is ir.Inst and s.alloc and s.op == "fill":
            sid = s.args["out"].storage
            if sid not in touched and _is_whole(s.args["out"], spm.get(sid)):
                covered.add(sid)
        touched |= _storages_in(s)
    return tuple(sorted(set(spm) - covered))


def _is_whole(view: ir.View, st) -> bool:
    """Whether ``view`` is the whole storage ``st`` in its row-major layout (None: not an SPM storage)."""
    if st is None or type(view.offset) is not ir.Const or view.offset.value != 0:
        return False
    strides, acc = [], 1
    for d in reversed(st.shape):
        strides.append(acc)
        acc *= d
    return tuple(view.strides) == tuple(reversed(strides)) and \
        all(type(sz) is ir.Const and sz.value == d for sz, d in zip(view.sizes, st.shape)) and \
        len(view.sizes) == len(st.shape)


def _storages_in(s) -> set:
    """Ids of every storage a statement (and the statements inside it) names in an operand view."""
    t = type(s)
    if t is ir.Inst:
        return {v.storage for v in s.args.values() if isinstance(v, ir.View)}
    inner = s.body if t is ir.For else (s.then + s.orelse if t is ir.If else ())
    return set().union(*map(_storages_in, inner))


def zero_spm(state: JobState, storages: list, sids: tuple) -> None:
    """Zero the SPM storages ``sids`` (see ``spm_to_zero``) at a job's start; the zeroing is recorded too,
    so that a replayed launch keeps SPM private per job. No timing: the stamps restart with the job."""
    for sid in sids:
        st = storages[sid]
        st.data.fill(0)
        rec = state.record
        if rec is not None:
            _record(state, rec, (_bind_zero, (RV(st, 0, (st.n,), (1,)),), None, None, 0))


def _bind_zero(ins, o, val, out_stream):
    data = ins[0]
    return lambda: data.fill(0)


def _slot_types(kernel: ir.Kernel) -> dict:
    """Static type of every slot: loop variables are ints; assigned slots take their value's type."""
    types = {0: "int"}

    def walk(stmts):
        for s in stmts:
            if type(s) is ir.Assign:
                types[s.slot] = expr_type(s.value, types)
            elif type(s) is ir.For:
                types[s.slot] = "int"
                walk(s.body)
            elif type(s) is ir.If:
                walk(s.then)
                walk(s.orelse)
    walk(kernel.body)
    return types
