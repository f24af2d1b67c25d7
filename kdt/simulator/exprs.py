"""Scalar expressions -> Python closures ``f(env) -> value`` (spec kdt-semantics.md §2 "Scalars").

``env`` is the job's list of slot values (slot 0 = job id). Integer expressions are first brought to
their affine form, so a view offset like ``i * 128 + j * 4096 + 64`` costs one small closure call.
"""
from operator import itemgetter

from ..ir import nodes as ir
from ..ir.affine import affine
from ..ir.scalar import BINARY, COMPARE, INT_LIMIT, UNARY, checked
from .errors import TypeError as LaunchTypeError


def const_value(e):
    """``(True, value)`` for a constant expression, else ``(False, None)``."""
    return (True, e.value) if type(e) is ir.Const else (False, None)


def compile_expr(e, slot_types):
    """A closure evaluating ``e`` with Python semantics; errors surface when it is called. Only the
    top-level expression is tried in affine form (sub-expressions compile plainly: O(size) overall)."""
    form = affine(e, slot_types) if type(e) in (ir.Binary, ir.Unary) else None
    # Only pure-int atoms: a bool variable would come back as True/False where Python gives 1/0.
    if form is not None and form[0] and _in_range(form) and all(
            type(a) is ir.JobId or (type(a) is ir.Var and slot_types.get(a.slot) == "int") for a in form[0]):
        return _affine_closure(form)
    return _plain(e, slot_types)


def _in_range(form) -> bool:
    """Coefficients and constant within the scalar range: else evaluate plainly, so the range checks of
    ``*`` and ``<<`` apply exactly as without the rewrite."""
    coeffs, c = form
    return abs(c) <= INT_LIMIT and all(abs(k) <= INT_LIMIT for k in coeffs.values())


def _slot(atom) -> int:
    return 0 if type(atom) is ir.JobId else atom.slot


def _affine_closure(form):
    coeffs, c = form
    terms = [(_slot(a), k) for a, k in coeffs.items()]
    if not terms:
        return lambda env: c
    if len(terms) == 1:
        (s, k), = terms
        if k == 1:
            return (lambda env: env[s] + c) if c else itemgetter(s)
        return lambda env: checked(env[s] * k + c)
    if len(terms) == 2:
        (s1, k1), (s2, k2) = terms
        return lambda env: checked(env[s1] * k1 + env[s2] * k2 + c)
    return lambda env: checked(sum(env[s] * k for s, k in terms) + c)


def _plain(e, slot_types):
    t = type(e)
    if t is ir.Const:
        v = e.value
        return lambda env: v
    if t is ir.Var:
        return itemgetter(e.slot)
    if t is ir.JobId:
        return itemgetter(0)
    if t is ir.Unary:
        f, a = UNARY[e.op], _plain(e.operand, slot_types)
        return lambda env: f(a(env))
    if t in (ir.Binary, ir.Compare):
        f = (BINARY if t is ir.Binary else COMPARE)[e.op]
        a, b = _plain(e.left, slot_types), _plain(e.right, slot_types)
        ca, va = const_value(e.left)
        cb, vb = const_value(e.right)
        if cb:
            return lambda env: f(a(env), vb)
        if ca:
            return lambda env: f(va, b(env))
        return lambda env: f(a(env), b(env))
    if t is ir.BoolOp:
        return _boolop(e.op == "and", [_plain(v, slot_types) for v in e.values])
    if t is ir.IfExp:
        c, a, b = (_plain(x, slot_types) for x in (e.cond, e.then, e.orelse))

        def ifexp(env):
            v = c(env)
            if type(v) is not bool:  # a plain TypeError: the statement running it adds its line
                raise TypeError(f"a conditional expression needs a bool condition, got {type(v).__name__} {v!r}")
            return a(env) if v else b(env)

        return ifexp
    raise LaunchTypeError(f"not a scalar expression: {type(e).__name__}")


def _boolop(is_and: bool, fs):
    first, rest = fs[0], fs[1:]

    def run(env):
        v = first(env)
        for f in rest:
            if (not v) if is_and else v:
                return v
            v = f(env)
        return v

    return run
