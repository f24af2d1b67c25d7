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


def affine(expr, slot_types):
    """``(coeffs, const)`` with ``expr == const + sum(k * atom for atom, k in coeffs.items())`` for an
    integer-valued ``expr`` (atoms are ``Var``/``JobId`` nodes or opaque integer sub-expressions);
    None when ``expr`` is not known to be an integer."""
    if expr_type(expr, slot_types) not in ("int", "bool"):
        return None
    return _affine(expr, slot_types)


def _affine(expr, slot_types):
    t = type(expr)
    if t is Const:
        return {}, int(expr.value)
    if t is Unary and expr.op in ("-", "+"):
        inner = affine(expr.operand, slot_types)
        if inner is None:
            return {expr: 1}, 0
        return (_scale(inner, -1) if expr.op == "-" else inner)
    if t is Binary and expr.op in ("+", "-", "*"):
        left, right = affine(expr.left, slot_types), affine(expr.right, slot_types)
        if left is not None and right is not None:
            if expr.op == "+":
                return _add(left, right, 1)
            if expr.op == "-":
                return _add(left, right, -1)
            if not left[0]:
                return _scale(right, left[1])
            if not right[0]:
                return _scale(left, right[1])
    return {expr: 1}, 0


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
