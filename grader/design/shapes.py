"""Shapes of design contracts: checked (rule5) and evaluated (verify) without `eval`.

Implements rule5 of PyPTO-Gym's `validate_module_yaml.py` as we read it
(docs/design-contracts.md, "PyPTO-Gym compatibility"). A shape comes in one of two spellings:

- PyPTO-Gym's own, a string: `shape: "[M, N // 64]"`. Its readings, where the documentation
  leaves a choice: the string must start with `[` and end with `]` (surrounding blanks ignored;
  `"M, N"` without brackets is rule5); the text between is split on every comma and each piece,
  stripped, is one dimension, so an empty piece (`"[M, ]"`, `"[M,,N]"`, a trailing comma) is
  rule5; `"[]"` (nothing between the brackets) is the shape of a scalar, valid.
- a YAML list: `shape: [M, N // 64]`, each element an integer or a dimension string.

A dimension is an integer literal or an expression of names (Python identifiers), integer
literals, the binary operators `+ - * //` and unary minus, grouped by parentheses (`(K + 1) // 2`;
`ast` makes parentheses invisible, the reading an `ast`-based validator gives). Readings: unary
plus, `/`, `%`, `**`, calls, attributes, subscripts, comparisons, floats, strings and booleans are
rule5; a negative integer (`-1`, either spelling) is syntactically fine, so it passes rule5 (our
`dims` check warns when a dimension evaluates below 0). In the list spelling a YAML bool or float
element is rule5 (it is no integer). Our one deviation: a dimension longer than `MAX_EXPR_LEN`
characters is rule5 (a guard against hostile files; no real shape comes near it).

Expressions are parsed with `ast.parse(..., mode="eval")` and walked iteratively with an
allowlist of node types; nothing is ever evaluated by Python itself.
"""
from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping

from grader.judging.pyparse import parse

__all__ = ["MAX_EXPR_LEN", "ShapeExprError", "parse_shape", "format_shape", "parse_dim", "dim_names",
           "eval_dim", "eval_shape"]

# Long enough for any real shape; short enough that parsing cannot exhaust memory.
MAX_EXPR_LEN = 1000

_BINARY: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
}


class ShapeExprError(ValueError):
    """A shape or dimension is malformed, or cannot be evaluated with the given names."""


def _is_int(value: object) -> bool:
    # bool is an int subclass, but `True` is no dimension.
    return isinstance(value, int) and not isinstance(value, bool)


def parse_shape(shape: object) -> list[int | str]:
    """Split a shape in either spelling into its dimensions (rule5's first half).

    Input: the `shape` value as read from YAML: a string `"[d1, d2, ...]"` or a list.
    Output: the list of dimensions (ints and stripped strings), not yet checked one by one.
    Raises ShapeExprError for any other value, a string without the brackets, or an empty piece.
    """
    if isinstance(shape, list):
        return list(shape)
    if not isinstance(shape, str):
        kind = "missing" if shape is None else f"a {type(shape).__name__}"
        raise ShapeExprError(f"shape is {kind}, not a string \"[M, N]\" or a list of dimensions")
    text = shape.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise ShapeExprError(f"shape {shape!r} is not written \"[d1, d2, ...]\"")
    inner = text[1:-1].strip()
    if not inner:
        return []
    dims = [piece.strip() for piece in inner.split(",")]
    if "" in dims:
        raise ShapeExprError(f"shape {shape!r} has an empty dimension (a stray comma)")
    return dims


def format_shape(dims: list[int | str]) -> str:
    """The PyPTO-Gym spelling of a list of dimensions: `["M", 4]` -> `"[M, 4]"`."""
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _check_tree(root: ast.expr) -> None:
    """Raise ShapeExprError unless every node under `root` is on the allowlist (iterative walk)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            continue
        if isinstance(node, ast.Constant):
            if not _is_int(node.value):
                raise ShapeExprError(f"constant {node.value!r} is not an integer")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINARY:
                raise ShapeExprError(f"operator {type(node.op).__name__} is not one of + - * //")
            stack += [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub):
                raise ShapeExprError(f"unary operator {type(node.op).__name__} is not unary minus")
            stack.append(node.operand)
        else:
            raise ShapeExprError(f"{type(node).__name__} is not allowed in a shape expression")


def parse_dim(dim: object) -> int | ast.expr:
    """Check one dimension (rule5's second half; see the module doc for what is allowed).

    Input: a dimension as read from YAML or split from a string shape. Output: the int itself, or
    the parsed expression node. Raises ShapeExprError if it is neither an int nor an allowed
    expression string.
    """
    if _is_int(dim):
        return dim
    if not isinstance(dim, str):
        raise ShapeExprError(f"dimension {dim!r} is a {type(dim).__name__}, not an integer or expression")
    text = dim.strip()
    if not text:
        raise ShapeExprError("dimension is an empty string")
    if len(text) > MAX_EXPR_LEN:
        raise ShapeExprError(f"dimension expression is longer than {MAX_EXPR_LEN} characters")
    try:
        tree = parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ShapeExprError(f"dimension {dim!r} does not parse: {exc.__class__.__name__}") from None
    _check_tree(tree.body)
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
    return -_eval_node(node.operand, env)  # type: ignore[attr-defined]  # the only unary op


def eval_dim(dim: object, env: Mapping[str, int]) -> int:
    """Evaluate one dimension with integer values for its names (used by `design verify`).

    Output: a non-negative int. Raises ShapeExprError for a malformed dimension, an unknown name,
    division by zero, a negative result or an expression too deep to evaluate.
    """
    node = parse_dim(dim)
    try:
        value = node if isinstance(node, int) else _eval_node(node, env)
    except RecursionError:
        raise ShapeExprError(f"dimension {dim!r} is nested too deeply to evaluate") from None
    if value < 0:
        raise ShapeExprError(f"dimension {dim!r} evaluates to {value} < 0")
    return value


def eval_shape(shape: object, env: Mapping[str, int]) -> tuple[int, ...]:
    """Evaluate a whole shape in either spelling. Raises ShapeExprError like `parse_shape`/`eval_dim`."""
    return tuple(eval_dim(d, env) for d in parse_shape(shape))
