"""The KDT-DSL front end: a kernel function's Python AST -> ``kdt.ir.Kernel`` (spec kdt-semantics.md §2).

One ``visit_<Node>`` method per supported construct (statements and expressions); anything else
reaches ``generic_visit``: an ``UnsupportedFeatureError`` saying what to write instead (``refusals``).
Every error carries the line and column in the submitted file. Scalars are folded when constant, and integer slice sizes are
normalised (``kdt.ir.affine``) so that shapes are static whenever they can be. A name bound to a scalar
stands for its expression (nothing is emitted for the assignment), so it is evaluated where it is used.
Operands are checked against the instruction table (``kdt.ir.ops``: memory spaces, tile or scalar);
errors the handout raises only when a statement runs become ``ir.Raise`` statements.
"""
import ast
import os
from dataclasses import dataclass

from ..ir import nodes as ir
from ..ir.affine import affine, expr_type, to_expr
from ..ir.ops import OPS, REDUCE_OPS, space_problem
from ..ir.scalar import (BINARY, COMPARE, INT_LIMIT, UNARY, binary_type, checked, same_type, type_of_value,
                         unary_type)
from ..ir.serialize import MAX_MSG, MAX_NAME
from . import errors as E
from . import refusals

_AST_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
               ast.Mod: "%", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
               ast.RShift: ">>"}
_AST_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_AST_UNOPS = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not"}
_AST_BOOLOPS = {ast.And: "and", ast.Or: "or"}
_VIEW_FUNCS = ("slice", "squeeze", "unsqueeze", "broadcast_to", "transpose")
_BUILDER_FUNCS = (*_VIEW_FUNCS, "alloc_spm", "get_job_id")  # the kdt functions that are not instructions
_KDT_FUNCTIONS = (*OPS, *_BUILDER_FUNCS)  # what a kernel may call, for suggestions
# Constant instruction arguments the handout resolves with its narrow reader (spec §2); ``dim`` arguments
# go through ``dim_arg`` and alloc_spm's ``init_value`` through ``call_alloc_spm``.
_RESOLVED_CONSTS = ("value", "print_only_if_job0")


def shadowing_enabled() -> bool:
    """Spec §6.6: shadowing is allowed unless ``KDT_ENABLE_VARIABLE_SHADOWING=0``."""
    return os.environ.get("KDT_ENABLE_VARIABLE_SHADOWING", "1").strip() != "0"


@dataclass(frozen=True)
class Scalar:
    """A scalar value of the program: an IR expression and its static type (or None)."""

    expr: object
    type: str | None

    @property
    def is_const(self) -> bool:
        return type(self.expr) is ir.Const


@dataclass(frozen=True)
class Tile:
    """A tile value: a view and the dtype of its storage."""

    view: ir.View
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.view.sizes)


@dataclass(frozen=True)
class Special:
    """``task_args``, ``io_tensors`` or a plain string constant (instruction keywords only)."""

    kind: str
    value: object = None


_TASK_ARGS, _IO_TENSORS = Special("task_args"), Special("io_tensors")


def _const(value) -> Scalar:
    return Scalar(ir.Const(value), type_of_value(value))


class KernelBuilder(ast.NodeVisitor):
    """Translates one kernel ``FunctionDef`` into IR.

    ``line_offset``/``col_offset`` map the parsed (dedented) snippet back to the submitted file.
    """

    def __init__(self, task_args: dict, io_meta: list, line_offset: int, col_offset: int,
                 source_lines: list | None = None):
        self.task_args = task_args
        self.line_offset = line_offset
        self.col_offset = col_offset
        self.source_lines = source_lines or []
        self.storages: list[ir.Storage] = [ir.Storage(i, "io", m.name, m.shape, m.dtype)
                                           for i, m in enumerate(io_meta)]
        self.io_index = {m.name: i for i, m in enumerate(io_meta)}
        self.scopes: list[dict] = [{}]
        self.slot_types: dict[int, str | None] = {0: "int"}
        self.blocks: list[list] = [[]]
        self.control_depth = 0
        self.shadowing = shadowing_enabled()
        self.assign_target: str | None = None

    # ---- error helpers --------------------------------------------------------------------------

    def error(self, cls, node, message):
        return cls(message, getattr(node, "lineno", 1) + self.line_offset, self.column(node))

    def column(self, node) -> int:
        """1-based character column in the file (the AST counts UTF-8 bytes of the dedented line)."""
        lineno, offset = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
        if 0 < lineno <= len(self.source_lines):
            offset = len(self.source_lines[lineno - 1].encode("utf-8")[:offset].decode("utf-8", "ignore"))
        return offset + self.col_offset + 1

    def line(self, node) -> int:
        return node.lineno + self.line_offset

    def visit(self, node):
        try:
            return super().visit(node)
        except E.CompilationError:
            raise
        except RecursionError:
            raise self.error(E.UnsupportedFeatureError, node, "expression nested too deeply") from None
        except Exception as exc:  # a front-end bug must still name the line
            raise self.error(E.InternalError, node, f"internal error: {type(exc).__name__}: {exc}") from exc

    def generic_visit(self, node):
        raise self.error(E.UnsupportedFeatureError, node, refusals.construct(node))

    # ---- kernel and statements ------------------------------------------------------------------

    def build(self, fn: ast.FunctionDef, name: str, num_jobs: int) -> ir.Kernel:
        """Check the signature, translate the body and return the kernel IR."""
        args = fn.args
        names = [a.arg for a in args.posonlyargs + args.args]
        if names[:2] != ["task_args", "io_tensors"]:
            raise self.error(E.CompilationError, fn,
                             "a kernel's first two parameters must be (task_args, io_tensors), got "
                             f"({ast.unparse(args)})")
        # Later parameters, defaults, *args and **kwargs are accepted and unused, as in the handout; the
        # two parameters live in a scope enclosing the body (the body may assign the names anew).
        self.scopes[0].update(task_args=_TASK_ARGS, io_tensors=_IO_TENSORS)
        self.scopes.append({})
        body = fn.body
        if body and _is_docstring(body[0]):
            body = body[1:]  # an allowed extension (spec §2): the kernel's own docstring
        for stmt in body:
            self.visit(stmt)
        return ir.Kernel(name=_label(name), num_jobs=num_jobs, io=tuple(_meta(s) for s in self.storages
                                                                  if s.kind == "io"),
                         storages=tuple(self.storages), num_slots=len(self.slot_types),
                         body=tuple(self.blocks[0]))

    def emit(self, stmt):
        self.blocks[-1].append(stmt)

    def block(self, stmts, bindings=()) -> tuple:
        """Translate ``stmts`` in a new scope (first binding ``bindings``: (node, name, value)) and
        return their IR."""
        self.scopes.append({})
        for node, name, value in bindings:
            self.bind(node, name, value)
        self.blocks.append([])
        self.control_depth += 1
        try:
            for s in stmts:
                self.visit(s)
        finally:
            self.control_depth -= 1
            self.scopes.pop()
        return tuple(self.blocks.pop())

    def bind(self, node, name: str, value):
        scope = self.scopes[-1]
        if name in scope:
            raise self.error(E.SymbolError, node, f"'{name}' is already defined in this scope; "
                             "KDT-DSL variables are assigned once per scope")
        if not self.shadowing and any(name in s for s in self.scopes[:-1]):
            raise self.error(E.SymbolError, node, f"'{name}' shadows a variable of an enclosing "
                             "scope (KDT_ENABLE_VARIABLE_SHADOWING=0)")
        scope[name] = value

    def new_slot(self, type_):
        slot = len(self.slot_types)
        self.slot_types[slot] = type_
        return slot

    def visit_Assign(self, node: ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            raise self.error(E.UnsupportedFeatureError, node, refusals.assignment(node))
        name = node.targets[0].id
        self.assign_target = name  # names an unnamed alloc_spm storage after its variable
        try:
            value = self.value(node.value)
        finally:
            self.assign_target = None
        # A scalar name stands for its expression, evaluated where it is used (spec §2): nothing is
        # emitted, so an unused 'z = 1 // 0' never fails. Loop variables inside it keep their slots;
        # integer expressions are kept in their (small) affine form.
        if isinstance(value, Scalar) and not value.is_const and value.type == "int":
            value = Scalar(self.normal(value.expr), value.type)
        self.bind(node.targets[0], name, value)

    def visit_AnnAssign(self, node):
        raise self.error(E.UnsupportedFeatureError, node, "an annotated assignment (n: int = ...) is not "
                         "supported: write name = expression")

    def visit_AugAssign(self, node):
        raise self.error(E.UnsupportedFeatureError, node,
                         "an augmented assignment (n += ...) is not supported: a name is assigned once per "
                         "scope; write a new name (n2 = n + 1), or for a tile an instruction (kdt.add(t, x, t))")

    def visit_Pass(self, node):
        pass  # an allowed extension (spec §2)

    def visit_Expr(self, node: ast.Expr):
        """An instruction call, or a tile or scalar expression that is ignored (spec §2)."""
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            raise self.error(E.TypeError, node, "a string statement is only allowed as the kernel's "
                             "docstring")
        if isinstance(value, ast.Call):
            f = value.func
            if isinstance(f, ast.Attribute) and f.attr == "alloc_spm":
                raise self.error(E.SemanticError, node, "the result of kdt.alloc_spm must be assigned to a "
                                 "name: 't = kdt.alloc_spm(...)'")
            self.call(value, statement=True)
            return
        v = self.value(value)
        if not isinstance(v, (Tile, Scalar)):
            raise self.error(E.TypeError, node, f"an expression statement must be an instruction call, a tile "
                             f"or a scalar expression, not {_kind(v)}")

    def visit_For(self, node: ast.For):
        # A 'for ... else' block is ignored, as in the handout (spec §2).
        if not isinstance(node.target, ast.Name):
            raise self.error(E.UnsupportedFeatureError, node.target, "a loop variable must be one name")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            raise self.error(E.UnsupportedFeatureError, it, "only 'for v in range(...)' loops are supported")
        if it.keywords or not 1 <= len(it.args) <= 2:
            raise self.error(E.UnsupportedFeatureError, it,
                             "range() takes (end) or (start, end); a step is not supported")
        bounds = [self.scalar(self.no_bare_task_args(a, "a range bound"), "a range bound") for a in it.args]
        start, end = (bounds if len(bounds) == 2 else [_const(0), bounds[0]])
        slot = self.new_slot("int")
        var = ir.Var(slot, _label(node.target.id))
        body = self.block(node.body, [(node.target, node.target.id, Scalar(var, "int"))])
        self.emit(ir.For(slot, var.name, start.expr, end.expr, body, self.line(node)))

    def visit_If(self, node: ast.If):
        cond = self.value(node.test)
        if not isinstance(cond, (Scalar, Tile)):
            raise self.error(E.TypeError, node.test, f"an if condition must be a scalar expression, got "
                             f"{_kind(cond)}")
        then = self.block(node.body)
        orelse = self.block(node.orelse)
        if isinstance(cond, Tile):  # the handout fails only when the statement executes
            self.emit(ir.Raise("TypeError", "an if condition must be a bool scalar, got a tile "
                               "(compare it into a bool tile and use kdt.where instead)", self.line(node)))
            return
        self.emit(ir.If(cond.expr, then, orelse, self.line(node)))

    # ---- expressions ----------------------------------------------------------------------------

    def value(self, node):
        """Evaluate an expression to a ``Scalar``, ``Tile`` or ``Special``."""
        if isinstance(node, ast.Call):
            result = self.call(node, statement=False)
            if result is None:
                raise self.error(E.TypeError, node, f"kdt.{node.func.attr} does not return a value")
            return result
        return self.visit(node)

    def scalar(self, node, what: str, if_tile: str = "") -> Scalar:
        """The scalar ``node`` stands for; a ``TypeError`` naming ``what`` otherwise (``if_tile``: what to
        write instead, added when it is a tile)."""
        v = self.value(node)
        if not isinstance(v, Scalar):
            hint = if_tile if isinstance(v, Tile) else ""
            raise self.error(E.TypeError, node, f"{what} must be a scalar expression, got {_kind(v)}{hint}")
        return v

    def tile(self, node, what: str) -> Tile:
        v = self.value(node)
        if not isinstance(v, Tile):
            raise self.error(E.TypeError, node, f"{what} must be a tile, got {_kind(v)}")
        return v

    def const(self, node, what: str):
        """A compile-time constant (number, bool or string)."""
        v = self.value(node)
        if isinstance(v, Scalar) and v.is_const:
            return v.expr.value
        if isinstance(v, Special) and v.kind == "str":
            return v.value
        raise self.error(E.ConstantRequiredError, node, f"{what} must be a compile-time constant")

    def visit_Constant(self, node: ast.Constant):
        if type(node.value) is int and abs(node.value) > INT_LIMIT:
            raise self.error(E.ConstantRequiredError, node, f"integer constant {node.value} is outside "
                             f"[-2**62, 2**62], the range of KDT scalars")
        if type(node.value) in (int, float, bool):
            return _const(node.value)
        if isinstance(node.value, str):
            return Special("str", node.value)
        raise self.error(E.TypeError, node, f"unsupported constant {node.value!r}")

    def visit_Name(self, node: ast.Name):
        for scope in reversed(self.scopes):
            if node.id in scope:
                return scope[node.id]
        raise self.error(E.SymbolError, node, f"name '{node.id}' is not defined")

    def visit_UnaryOp(self, node: ast.UnaryOp):
        op = _AST_UNOPS.get(type(node.op))
        if op is None:
            raise self.error(E.UnsupportedFeatureError, node, refusals.operator(node.op))
        a = self.scalar(node.operand, f"the operand of '{op}'")
        return self.fold(ir.Unary(op, a.expr), unary_type(op, a.type),
                         lambda: UNARY[op](a.expr.value), a.is_const)

    def visit_BinOp(self, node: ast.BinOp):
        op = _AST_BINOPS.get(type(node.op))
        if op is None:
            raise self.error(E.UnsupportedFeatureError, node, refusals.operator(node.op))
        a = self.scalar(node.left, f"the left operand of '{op}'", refusals.tile_operand(op))
        b = self.scalar(node.right, f"the right operand of '{op}'", refusals.tile_operand(op))
        return self.fold(ir.Binary(op, a.expr, b.expr), binary_type(op, a.type, b.type),
                         lambda: BINARY[op](a.expr.value, b.expr.value), a.is_const and b.is_const)

    def visit_Compare(self, node: ast.Compare):
        if len(node.ops) != 1:
            raise self.error(E.UnsupportedFeatureError, node, "a chained comparison (a < b < c) is not "
                             "supported: write a < b and b < c")
        op = _AST_CMPOPS.get(type(node.ops[0]))
        if op is None:
            raise self.error(E.UnsupportedFeatureError, node, refusals.operator(node.ops[0]))
        a = self.scalar(node.left, "a compared value")
        b = self.scalar(node.comparators[0], "a compared value")
        return self.fold(ir.Compare(op, a.expr, b.expr), "bool",
                         lambda: COMPARE[op](a.expr.value, b.expr.value), a.is_const and b.is_const)

    def visit_BoolOp(self, node: ast.BoolOp):
        op = _AST_BOOLOPS[type(node.op)]
        values = [self.scalar(v, f"an operand of '{op}'") for v in node.values]
        if all(v.is_const for v in values):
            result = values[0].expr.value
            for v in values[1:]:
                if (op == "and") != bool(result):
                    break
                result = v.expr.value
            return _const(result)
        return Scalar(ir.BoolOp(op, tuple(v.expr for v in values)), same_type(v.type for v in values))

    def visit_IfExp(self, node: ast.IfExp):
        c = self.scalar(node.test, "a condition")
        a = self.scalar(node.body, "a conditional value")
        b = self.scalar(node.orelse, "a conditional value")
        if c.is_const and type(c.expr.value) is bool:
            return a if c.expr.value else b
        return Scalar(ir.IfExp(c.expr, a.expr, b.expr), same_type((a.type, b.type)))

    def fold(self, expr, type_, compute, is_const) -> Scalar:
        """Fold a constant operation; one that fails (e.g. ``1 // 0``) is left to fail at launch."""
        if is_const:
            try:
                return _const(checked(compute()))
            except (ArithmeticError, ValueError, TypeError):
                pass  # e.g. 1 // 0, or an int beyond 2**62: evaluated (and failing) at launch
        return Scalar(expr, type_)

    def visit_Attribute(self, node):
        raise self.error(E.SyntaxError, node, "attributes can only be used as 'kdt.<name>(...)' calls")

    def visit_Subscript(self, node: ast.Subscript):
        base = self.value(node.value)
        if base is _TASK_ARGS or base is _IO_TENSORS:
            key = node.slice
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                raise self.error(E.ConstantRequiredError, node, f"{base.kind}[...] needs a string literal key")
            table = self.task_args if base is _TASK_ARGS else self.io_index
            if key.value not in table:
                raise self.error(E.KeyError, node, f"{base.kind} has no entry {key.value!r} (its keys: "
                                 f"{', '.join(map(repr, table)) or 'none'})")
            if base is _TASK_ARGS:
                return _const(self.task_args[key.value])
            st = self.storages[self.io_index[key.value]]
            return Tile(_full_view(st), st.dtype)
        if not isinstance(base, Tile):
            raise self.error(E.TypeError, node, f"only tiles, task_args and io_tensors can be subscripted, "
                             f"not {_kind(base)}")
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return self.index(base, items, node)

    def no_bare_task_args(self, node, what: str):
        """``node``, unless the whole expression is a bare ``task_args[...]`` subscript: the handout resolves
        the positions that call this (range arguments, tile subscript bounds and indices, alloc_spm shape
        items, constant arguments) with a reader that does not know subscripts (spec §2, "Where a bare
        task_args['k'] is refused"). Inside an operator (``task_args['n'] // 2``) it is an ordinary scalar.

        The reader refuses any subscript, so a bare subscript of a name bound to ``task_args``
        (``ta = task_args``) is refused the same way.

        Raises ``UnsupportedFeatureError`` at the subscript, with the fix."""
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                self.visit_Name(node.value) is _TASK_ARGS:
            raise self.error(E.UnsupportedFeatureError, node,
                             f"a bare task_args[...] cannot be {what}: bind it to a name first "
                             f"(n = {ast.unparse(node)}) or write it inside an expression")
        return node

    def index(self, t: Tile, items, node) -> Tile:
        """Apply comma-separated index/slice items left to right (numpy-style dimension walk)."""
        v = t.view
        offset, sizes, strides = v.offset, list(v.sizes), list(v.strides)
        d = 0
        for item in items:
            if d >= len(sizes):
                raise self.error(E.IndexError, item, f"too many indices for a {t.ndim}-D tile")
            if isinstance(item, ast.Slice):
                if item.step is not None:
                    raise self.error(E.UnsupportedFeatureError, item, "slice steps are not supported")
                lo = self.scalar(self.no_bare_task_args(item.lower, "a slice bound"), "a slice bound") \
                    if item.lower else _const(0)
                hi = self.scalar(self.no_bare_task_args(item.upper, "a slice bound"), "a slice bound") \
                    if item.upper else Scalar(sizes[d], "int")
                offset = self.add_offset(offset, lo, strides[d])
                sizes[d] = self.difference(hi, lo)
                d += 1
            elif isinstance(item, ast.Constant) and item.value is Ellipsis:
                raise self.error(E.UnsupportedFeatureError, item, "'...' is not supported")
            else:
                i = self.scalar(self.no_bare_task_args(item, "an index"), "an index")
                offset = self.add_offset(offset, i, strides[d])
                del sizes[d], strides[d]
        return Tile(ir.View(v.storage, offset, tuple(sizes), tuple(strides)), t.dtype)

    def add_offset(self, offset, index: Scalar, stride: int):
        term = self.arith("*", Scalar(index.expr, index.type), _const(stride))
        return self.normal(self.arith("+", Scalar(offset, "int"), term).expr)

    def difference(self, hi: Scalar, lo: Scalar):
        return self.normal(self.arith("-", hi, lo).expr)

    def arith(self, op, a: Scalar, b: Scalar) -> Scalar:
        return self.fold(ir.Binary(op, a.expr, b.expr), binary_type(op, a.type, b.type),
                         lambda: BINARY[op](a.expr.value, b.expr.value), a.is_const and b.is_const)

    def normal(self, expr):
        """The affine normal form of an integer expression (constants where possible)."""
        form = affine(expr, self.slot_types)
        if form is None or abs(form[1]) > INT_LIMIT or any(abs(k) > INT_LIMIT for k in form[0].values()):
            return expr  # beyond the scalar range: evaluated (and failing) at launch, as written
        return to_expr(form)

    # ---- calls ----------------------------------------------------------------------------------

    def call(self, node: ast.Call, statement: bool):
        f = node.func
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "kdt"):
            what = f.id if isinstance(f, ast.Name) else ast.unparse(f)
            raise self.error(E.UnsupportedFeatureError, node, refusals.call(what, _KDT_FUNCTIONS))
        name = f.attr
        if name in OPS:
            if not statement:
                raise self.error(E.TypeError, node, f"kdt.{name} is an instruction and returns no value")
            self.instruction(name, node)
            return None
        handler = getattr(self, f"call_{name}", None) if name in _BUILDER_FUNCS else None
        if handler is None:
            raise self.error(E.SyntaxError, node, refusals.unknown_function(name, _KDT_FUNCTIONS))
        return handler(node)

    def bind_args(self, node, params, aliases=None) -> dict:
        """Match a call's positional and keyword arguments to ``params`` (names in positional order)."""
        if len(node.args) > len(params):
            raise self.error(E.TypeError, node, f"kdt.{node.func.attr} takes at most {len(params)} "
                             f"arguments ({', '.join(params)})")
        bound = dict(zip(params, node.args))
        for kw in node.keywords:
            key = (aliases or {}).get(kw.arg, kw.arg)
            if kw.arg is None or key not in params:
                raise self.error(E.TypeError, kw, f"kdt.{node.func.attr} has no parameter '{kw.arg}'")
            if key in bound:
                raise self.error(E.TypeError, kw, f"kdt.{node.func.attr} got '{key}' twice")
            bound[key] = kw.value
        return bound

    def require(self, node, bound, *names):
        for n in names:
            if n not in bound:
                raise self.error(E.TypeError, node, f"kdt.{node.func.attr} is missing its '{n}' argument")

    def dim_arg(self, node, expr, ndim, what="dim", extra=0, check_range=True) -> int:
        """A dimension argument: a constant int, float or bool, converted with ``int()`` as the handout
        does (``reduce(x, 1.0, ...)``); out of range: ``IndexError`` (unless ``check_range`` is off)."""
        d = self.const(self.no_bare_task_args(expr, f"a {what}"), what)
        if type(d) not in (int, float, bool):
            raise self.error(E.TypeError, expr, f"{what} must be an int")
        try:
            d = int(d)
        except (ValueError, OverflowError):
            raise self.error(E.TypeError, expr, f"{what} must be a finite number, got {d!r}") from None
        if check_range and not 0 <= d < ndim + extra:
            raise self.error(E.IndexError, expr, f"{what} {d} is out of range for a {ndim}-D tile")
        return d

    def instruction(self, name: str, node: ast.Call):
        spec = OPS[name]
        bound = self.bind_args(node, [p.name for p in spec.params], spec.aliases)
        args = {}
        for p in spec.params:
            if p.name not in bound:
                if p.required:
                    self.require(node, bound, p.name)
                args[p.name] = ir.Const(p.default) if p.kind == "scalar" else p.default
                continue
            expr = bound[p.name]
            if p.kind in ("in", "out"):
                args[p.name] = self.tile(expr, f"'{p.name}' of kdt.{name}").view
            elif p.kind == "scalar":
                args[p.name] = self.scalar(expr, f"'{p.name}' of kdt.{name}").expr
            else:
                if p.name in _RESOLVED_CONSTS:
                    self.no_bare_task_args(expr, f"the '{p.name}' of kdt.{name}")
                args[p.name] = self.const(expr, f"'{p.name}' of kdt.{name}")
            if isinstance(args[p.name], ir.View):
                problem = space_problem(name, p.name, self.storages[args[p.name].storage])
                if problem is not None:
                    raise self.error(E.MemorySpaceError, expr, f"kdt.{name}: {problem}")
        failure = self.check_consts(name, node, bound, args)
        if failure is not None:  # an error the handout raises only when the instruction executes
            self.emit(ir.Raise(*failure, self.line(node)))
            return
        self.emit(ir.Inst(name, args, self.line(node), self.column(node)))

    def check_consts(self, name, node, bound, args):
        """Check and convert the constant arguments in ``args``; returns ``(error, message)`` for an error
        that the handout raises only at launch (a reduce op or dim it cannot run), else None."""
        if name == "reduce":
            ndim = len(args["x"].sizes)
            args["dim"] = self.dim_arg(node, bound["dim"], ndim, check_range=False)
            if args["op"] not in REDUCE_OPS:
                return "InternalError", f"reduce op must be one of {', '.join(REDUCE_OPS)}, got {args['op']!r}"
            if not 0 <= args["dim"] < ndim:
                return "ValueError", f"reduce dim {args['dim']} is out of range for a {ndim}-D tile"
        elif name == "fill":
            if type(args["value"]) not in (int, float, bool):
                raise self.error(E.TypeError, bound["value"], "fill value must be a number or a bool")
        elif name == "print":
            if not isinstance(args["msg"], str):
                raise self.error(E.TypeError, bound["msg"], "print msg must be a string")
            if len(args["msg"]) > MAX_MSG:
                raise self.error(E.TypeError, bound["msg"], f"print msg is longer than {MAX_MSG} characters")
            args["print_only_if_job0"] = bool(args["print_only_if_job0"])  # its truth value, as in the handout
        return None

    def call_get_job_id(self, node):
        if node.args or node.keywords:
            raise self.error(E.TypeError, node, "kdt.get_job_id() takes no arguments")
        return Scalar(ir.JobId(), "int")

    def call_alloc_spm(self, node):
        if self.control_depth:
            raise self.error(E.SemanticError, node, "kdt.alloc_spm must be called outside every loop and if")
        bound = self.bind_args(node, ["shape", "dtype", "name", "init_value"])
        self.require(node, bound, "shape")
        shape_node = bound["shape"]
        if isinstance(shape_node, ast.Tuple):
            dims = [self.no_bare_task_args(d, "an alloc_spm shape item") for d in shape_node.elts]
        elif isinstance(shape_node, ast.Constant) and type(shape_node.value) is int:
            dims = [shape_node]
        else:  # the handout takes a tuple or an int literal only (spec §2)
            raise self.error(E.TypeError, shape_node, "alloc_spm shape must be a tuple such as (64, 128) or an "
                             f"int literal, got '{ast.unparse(shape_node)}'")
        shape = []
        for d in dims:
            v = self.value(d)
            if not (isinstance(v, Scalar) and v.is_const and type(v.expr.value) is int):
                raise self.error(E.ConstantRequiredError, d, "alloc_spm shape must be constant ints")
            shape.append(v.expr.value)  # a negative one is the handout's launch ValueError
        dtype = self.const(bound["dtype"], "dtype") if "dtype" in bound else "float32"
        if dtype not in ("float32", "bool"):
            raise self.error(E.TypeError, node, f"alloc_spm dtype must be 'float32' or 'bool', got {dtype!r}")
        label = self.const(bound["name"], "name") if "name" in bound else (self.assign_target or "")
        init = self.const(self.no_bare_task_args(bound["init_value"], "an init_value"), "init_value") \
            if "init_value" in bound else 0
        if type(init) not in (int, float, bool):
            raise self.error(E.TypeError, node, "init_value must be a number or a bool")
        st = ir.Storage(len(self.storages), "spm", _label(str(label)), tuple(shape), dtype)
        self.storages.append(st)
        view = _full_view(st)
        self.emit(ir.Inst("fill", {"out": view, "value": init}, self.line(node), self.column(node), alloc=True))
        return Tile(view, dtype)

    def call_slice(self, node):
        bound = self.bind_args(node, ["x", "dim", "start", "end"])
        self.require(node, bound, "x", "dim", "start", "end")
        t = self.tile(bound["x"], "kdt.slice's x")
        d = self.dim_arg(node, bound["dim"], t.ndim)
        lo, hi = self.scalar(bound["start"], "a slice bound"), self.scalar(bound["end"], "a slice bound")
        v = t.view
        sizes = list(v.sizes)
        sizes[d] = self.difference(hi, lo)
        return Tile(ir.View(v.storage, self.add_offset(v.offset, lo, v.strides[d]), tuple(sizes),
                            v.strides), t.dtype)

    def call_squeeze(self, node):
        bound = self.bind_args(node, ["x", "dim"])
        self.require(node, bound, "x", "dim")
        t = self.tile(bound["x"], "kdt.squeeze's x")
        d = self.dim_arg(node, bound["dim"], t.ndim)
        # Any size is accepted, as in the handout: the view keeps index 0 of that dimension (spec §2).
        v = t.view
        return Tile(ir.View(v.storage, v.offset, v.sizes[:d] + v.sizes[d + 1:],
                            v.strides[:d] + v.strides[d + 1:]), t.dtype)

    def call_unsqueeze(self, node):
        bound = self.bind_args(node, ["x", "dim"])
        self.require(node, bound, "x", "dim")
        t = self.tile(bound["x"], "kdt.unsqueeze's x")
        d = self.dim_arg(node, bound["dim"], t.ndim, extra=1)
        v = t.view
        return Tile(ir.View(v.storage, v.offset, v.sizes[:d] + (ir.Const(1),) + v.sizes[d:],
                            v.strides[:d] + (0,) + v.strides[d:]), t.dtype)

    def call_broadcast_to(self, node):
        bound = self.bind_args(node, ["x", "dim", "new_size"])
        self.require(node, bound, "x", "dim", "new_size")
        t = self.tile(bound["x"], "kdt.broadcast_to's x")
        d = self.dim_arg(node, bound["dim"], t.ndim)
        size = t.view.sizes[d]
        if type(size) is ir.Const and size.value != 1:
            raise self.error(E.ShapeError, node, f"broadcast_to needs dimension {d} of size 1, "
                             f"it has size {size.value}")
        new = self.scalar(bound["new_size"], "broadcast_to's new_size")
        v = t.view
        sizes, strides = list(v.sizes), list(v.strides)
        sizes[d], strides[d] = new.expr, 0
        return Tile(ir.View(v.storage, v.offset, tuple(sizes), tuple(strides)), t.dtype)

    def call_transpose(self, node):
        # The handout spells the dimensions dim1/dim2; the statement dim0/dim1: accept both.
        names = ["x", "dim1", "dim2"] if any(k.arg == "dim2" for k in node.keywords) else ["x", "dim0", "dim1"]
        bound = self.bind_args(node, names)
        self.require(node, bound, *names)
        t = self.tile(bound["x"], "kdt.transpose's x")
        d0 = self.dim_arg(node, bound[names[1]], t.ndim, names[1])
        d1 = self.dim_arg(node, bound[names[2]], t.ndim, names[2])
        v = t.view
        sizes, strides = list(v.sizes), list(v.strides)
        sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
        return Tile(ir.View(v.storage, v.offset, tuple(sizes), tuple(strides)), t.dtype)


def _label(name: str) -> str:
    """Names in the IR are only labels (printing, messages): cut to the IR's limit so that every kernel
    the front end accepts also crosses the JSON boundary."""
    return name[:MAX_NAME]


def _full_view(st: ir.Storage) -> ir.View:
    strides, acc = [], 1
    for s in reversed(st.shape):
        strides.append(acc)
        acc *= s
    return ir.View(st.id, ir.Const(0), tuple(ir.Const(s) for s in st.shape), tuple(reversed(strides)))


def _meta(st: ir.Storage) -> ir.TensorMeta:
    return ir.TensorMeta(st.name, st.shape, st.dtype)


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
        and isinstance(stmt.value.value, str)


def _kind(v) -> str:
    if isinstance(v, Tile):
        return "a tile"
    if isinstance(v, Scalar):
        return "a scalar"
    if isinstance(v, Special):
        return "a string" if v.kind == "str" else v.kind
    return type(v).__name__


__all__ = ["KernelBuilder", "Scalar", "Tile", "shadowing_enabled", "expr_type"]
