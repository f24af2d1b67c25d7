"""Scalar semantics of KDT-DSL (spec kdt-semantics.md §2 "Scalars"): Python's operators, shared by the
front end's constant folding and the simulator, plus the static type rules both rely on.

Python ints are unbounded, so a hostile kernel could build a number with billions of digits out of a
few multiplications or shifts; ``*`` and ``<<`` therefore refuse results beyond ``INT_LIMIT``
(no real kernel index comes near 2**62).
"""
import operator

INT_LIMIT = 1 << 62


def checked(value):
    """``value``, refusing an int beyond ``INT_LIMIT`` (``OverflowError``)."""
    if type(value) is int and not -INT_LIMIT <= value <= INT_LIMIT:
        raise OverflowError("integer result exceeds 2**62")
    return value


def _mul(a, b):
    return checked(a * b)


def _lshift(a, b):
    if type(b) is int and b > 64:
        raise OverflowError(f"shift count {b} too large")
    return checked(a << b)


BINARY = {
    "+": operator.add, "-": operator.sub, "*": _mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "&": operator.and_, "|": operator.or_,
    "^": operator.xor, "<<": _lshift, ">>": operator.rshift,
}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "!=": operator.ne}
UNARY = {"-": operator.neg, "+": operator.pos, "not": operator.not_}

# ---- static types: "int", "float", "bool" or None (unknown) --------------------------------------


def binary_type(op: str, a: str | None, b: str | None) -> str | None:
    """Result type of ``a <op> b`` under Python's rules, or None when it cannot be known statically."""
    if a is None or b is None:
        return None
    if op == "/":
        return "float"
    if op in ("<<", ">>"):
        return "int" if "float" not in (a, b) else None
    if op in ("&", "|", "^"):
        if "float" in (a, b):
            return None
        return "bool" if a == b == "bool" else "int"
    return "float" if "float" in (a, b) else "int"


def unary_type(op: str, a: str | None) -> str | None:
    """Result type of ``<op> a``."""
    if op == "not":
        return "bool"
    if a is None:
        return None
    return "int" if a == "bool" else a


def type_of_value(value) -> str | None:
    """The static type name of a Python constant."""
    return {bool: "bool", int: "int", float: "float"}.get(type(value))


def same_type(types) -> str | None:
    """The common type of several alternatives (``and``/``or``/``if-else``), or None if they differ."""
    types = set(types)
    return types.pop() if len(types) == 1 else None
