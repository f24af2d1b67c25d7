"""Shape dimensions of design contracts: checked (rule5) and evaluated (verify) without `eval`.

Implements the "rule5" part of issue 6 ("Design contracts for kernels"): a shape is a list of
dimensions, and a dimension is either a non-negative integer or a string expression made of
names, integers, `+ - * //`, unary sign and parentheses, e.g. `M`, `N // 64`, `(K + 1) * 2`.

Expressions are parsed with `ast.parse(..., mode="eval")` and walked with an allowlist of node
types; nothing is ever evaluated by Python itself.
"""
from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

__all__ = ["MAX_EXPR_LEN", "ShapeExprError", "parse_dim", "dim_names", "eval_dim", "eval_shape"]

# Long enough for any real shape; short enough that parsing cannot blow the stack or memory.
MAX_EXPR_LEN = 256

_BINARY: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}
_UNARY: dict[type[ast.unaryop], Callable[[int], int]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


class ShapeExprError(ValueError):
    """A shape or dimension is malformed, or cannot be evaluated with the given names."""


def _is_int(value: object) -> bool:
    # bool is an int subclass, but `True` is no dimension.
    return isinstance(value, int) and not isinstance(value, bool)


def _check_node(node: ast.expr) -> None:
    """Raise ShapeExprError unless every node under `node` is on the allowlist."""
    if isinstance(node, ast.Name):
        return
    if isinstance(node, ast.Constant):
        if not _is_int(node.value):
            raise ShapeExprError(f"constant {node.value!r} is not an integer")
        return
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise ShapeExprError(f"operator {type(node.op).__name__} is not one of + - * //")
        _check_node(node.left)
        _check_node(node.right)
        return
    if isinstance(node, ast.UnaryOp):
        if type(node.op) not in _UNARY:
            raise ShapeExprError(f"unary operator {type(node.op).__name__} is not + or -")
        _check_node(node.operand)
        return
    raise ShapeExprError(f"{type(node).__name__} is not allowed in a shape expression")


def parse_dim(dim: object) -> int | ast.expr:
    """Check one dimension (issue 6, rule5).

    Input: a dimension as read from YAML. Output: the int itself, or the parsed expression node.
    Raises ShapeExprError if it is neither a non-negative int nor an allowed expression string.
    """
    if _is_int(dim):
        if dim < 0:
            raise ShapeExprError(f"dimension {dim} is negative")
        return dim
    if not isinstance(dim, str):
        raise ShapeExprError(f"dimension {dim!r} is a {type(dim).__name__}, not an integer or expression")
    text = dim.strip()
    if not text:
        raise ShapeExprError("dimension is an empty string")
    if len(text) > MAX_EXPR_LEN:
        raise ShapeExprError(f"dimension expression is longer than {MAX_EXPR_LEN} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ShapeExprError(f"dimension {dim!r} does not parse: {exc.__class__.__name__}") from None
    _check_node(tree.body)
    return tree.body


def dim_names(dim: object) -> set[str]:
    """Return the names used by a dimension. Raises ShapeExprError like `parse_dim`."""
    node = parse_dim(dim)
    if isinstance(node, int):
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _eval_node(node: ast.expr, env: Mapping[str, int]) -> int:
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ShapeExprError(f"dimension name {node.id!r} is not defined")
        return env[node.id]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp):
        left, right = _eval_node(node.left, env), _eval_node(node.right, env)
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            raise ShapeExprError("division by zero in a shape expression")
        return _BINARY[type(node.op)](left, right)
    return _UNARY[type(node.op)](_eval_node(node.operand, env))  # type: ignore[attr-defined]


def eval_dim(dim: object, env: Mapping[str, int]) -> int:
    """Evaluate one dimension with integer values for its names (used by `design verify`).

    Output: a non-negative int. Raises ShapeExprError for a malformed dimension, an unknown name,
    division by zero or a negative result.
    """
    node = parse_dim(dim)
    value = node if isinstance(node, int) else _eval_node(node, env)
    if value < 0:
        raise ShapeExprError(f"dimension {dim!r} evaluates to {value} < 0")
    return value


def eval_shape(shape: object, env: Mapping[str, int]) -> tuple[int, ...]:
    """Evaluate a whole shape (a list of dimensions). Raises ShapeExprError if it is not a list."""
    if not isinstance(shape, list):
        raise ShapeExprError(f"shape {shape!r} is not a list")
    return tuple(eval_dim(d, env) for d in shape)
