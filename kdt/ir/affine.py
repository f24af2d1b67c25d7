"""Static analysis of integer scalar expressions: types and affine normal forms.

The front end uses ``affine`` to see that ``(j + 1) * H - j * H`` is the constant ``H`` (so slice sizes
become static shapes), and the simulator uses it to evaluate view offsets as ``c + sum(k * atom)``.
Both rewrites are exact because they only touch expressions whose atoms are Python ints
(loop variables, the job id, integer-typed variables and integer sub-expressions).
"""
from .nodes import Binary, BoolOp, Compare, Const, IfExp, JobId, Unary, Var
from .scalar import binary_type, same_type, type_of_value, unary_type


def expr_type(expr, slot_types) -> str | None:
    """Static type (``"int"``, ``"float"``, ``"bool"`` or None) of ``expr``; ``slot_types[slot]``
    gives each variable's type."""
    t = type(expr)
    if t is Const:
        return type_of_value(expr.value)
    if t is Var:
        return slot_types.get(expr.slot)
    if t is JobId:
        return "int"
    if t is Unary:
        return unary_type(expr.op, expr_type(expr.operand, slot_types))
    if t is Binary:
        return binary_type(expr.op, expr_type(expr.left, slot_types), expr_type(expr.right, slot_types))
    if t is Compare:
        return "bool"
    if t is BoolOp:
        return same_type(expr_type(v, slot_types) for v in expr.values)
    if t is IfExp:
        return same_type((expr_type(expr.then, slot_types), expr_type(expr.orelse, slot_types)))
    return None


MAX_ATOM_DEPTH = 8  # deeper opaque sub-expressions are not used as atoms (hashing them is O(size))


def affine(expr, slot_types):
    """``(coeffs, const)`` with ``expr == const + sum(k * atom for atom, k in coeffs.items())`` for an
    integer-valued ``expr`` (atoms are ``Var``/``JobId`` nodes or small opaque integer sub-expressions);
    None when ``expr`` is not known to be an integer. One pass over the tree: O(size)."""
    type_, form, _ = _walk(expr, slot_types)
    return form if type_ in ("int", "bool") else None


def _walk(expr, slot_types):
    """``(type, affine form or None, depth)`` of ``expr``."""
    t = type(expr)
    if t is Const:
        ty = type_of_value(expr.value)
        return ty, ({}, int(expr.value)) if ty in ("int", "bool") else None, 1
    if t is Var or t is JobId:
        ty = "int" if t is JobId else slot_types.get(expr.slot)
        return ty, ({expr: 1}, 0) if ty in ("int", "bool") else None, 1
    if t is Unary:
        ty_in, inner, depth = _walk(expr.operand, slot_types)
        ty = unary_type(expr.op, ty_in)
        if expr.op in ("-", "+") and inner is not None:
            return ty, (_scale(inner, -1) if expr.op == "-" else inner), depth + 1
        return ty, _atom(expr, ty, depth + 1), depth + 1
    if t is Binary:
        tl, left, dl = _walk(expr.left, slot_types)
        tr, right, dr = _walk(expr.right, slot_types)
        ty, depth = binary_type(expr.op, tl, tr), max(dl, dr) + 1
        if left is not None and right is not None and ty in ("int", "bool"):
            if expr.op == "+":
                return ty, _add(left, right, 1), depth
            if expr.op == "-":
                return ty, _add(left, right, -1), depth
            if expr.op == "*" and not left[0]:
                return ty, _scale(right, left[1]), depth
            if expr.op == "*" and not right[0]:
                return ty, _scale(left, right[1]), depth
        return ty, _atom(expr, ty, depth), depth
    children = {Compare: lambda e: (e.left, e.right), BoolOp: lambda e: e.values,
                IfExp: lambda e: (e.cond, e.then, e.orelse)}[t](expr)
    walked = [_walk(c, slot_types) for c in children]
    depth = max(w[2] for w in walked) + 1
    if t is Compare:
        ty = "bool"
    elif t is BoolOp:
        ty = same_type(w[0] for w in walked)
    else:
        ty = same_type((walked[1][0], walked[2][0]))
    return ty, _atom(expr, ty, depth), depth


def _atom(expr, ty, depth):
    return ({expr: 1}, 0) if ty in ("int", "bool") and depth <= MAX_ATOM_DEPTH else None


def _scale(form, k):
    coeffs, const = form
    return {a: c * k for a, c in coeffs.items() if c * k}, const * k


def _add(f, g, sign):
    coeffs = dict(f[0])
    for atom, c in g[0].items():
        v = coeffs.get(atom, 0) + sign * c
        if v:
            coeffs[atom] = v
        else:
            coeffs.pop(atom, None)
    return coeffs, f[1] + sign * g[1]


def to_expr(form):
    """Rebuild a small expression from an affine form (constants first folded away)."""
    coeffs, const = form
    out = None
    for atom, k in coeffs.items():
        term = atom if k == 1 else Binary("*", Const(k), atom)
        out = term if out is None else Binary("+", out, term)
    if out is None:
        return Const(const)
    return out if const == 0 else Binary("+", out, Const(const))
