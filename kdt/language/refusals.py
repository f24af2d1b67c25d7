"""What the front end says about Python that a kernel may not use: what is wrong, in the words a
contestant would use, and what to write instead (spec kdt-semantics.md §2 lists what is refused).

Only the wording lives here: the front end decides what is refused and with which error class, and
prefixes the line and column.
"""
import ast

_OUTSIDE = "remove it, or check the condition outside the kernel in plain Python"
_LOOP = "use a for i in range(n) loop"
_NAME_EACH = "give each value its own name"
_FOR_TILES = ("give each tile its own name, or allocate one tile with an extra dimension and index it "
              "(buf[i % 2])")

# One sentence per refused AST node: "<what is wrong>: <what to write instead>".
_CONSTRUCTS: dict[type, str] = {
    ast.While: f"a while loop is not supported in a kernel: {_LOOP}",
    ast.AsyncFor: f"an async for loop is not supported in a kernel: {_LOOP}",
    ast.Break: "break is not supported in a kernel: a loop always runs its whole range; narrow the range "
               "or put the rest of the body under an if",
    ast.Continue: "continue is not supported in a kernel: put the rest of the loop body under an if",
    ast.Try: "try/except is not supported in a kernel: remove it and write its body directly",
    ast.TryStar: "try/except* is not supported in a kernel: remove it and write its body directly",
    ast.With: "a with block is not supported in a kernel: remove it and write its body directly",
    ast.AsyncWith: "an async with block is not supported in a kernel: remove it and write its body directly",
    ast.FunctionDef: "a def inside a kernel is not supported: write its statements inline (a kernel calls "
                     "only kdt.<name>(...))",
    ast.AsyncFunctionDef: "an async def inside a kernel is not supported: write its statements inline",
    ast.ClassDef: "a class inside a kernel is not supported: define it outside the kernel",
    ast.Lambda: "a lambda is not supported in a kernel: write its expression where it is used",
    ast.Import: "import is not supported in a kernel: import at the top of the file",
    ast.ImportFrom: "import is not supported in a kernel: import at the top of the file",
    ast.Global: "global is not supported in a kernel: a kernel sees task_args, io_tensors and its own "
                "variables only",
    ast.Nonlocal: "nonlocal is not supported in a kernel: a kernel sees task_args, io_tensors and its own "
                  "variables only",
    ast.Delete: "del is not supported in a kernel: remove it (a variable lives until the end of its block)",
    ast.Assert: f"assert is not supported in a kernel: {_OUTSIDE}",
    ast.Raise: f"raise is not supported in a kernel: {_OUTSIDE}",
    ast.Match: "match is not supported in a kernel: use if/elif/else",
    ast.List: f"a list is not supported in a kernel: {_FOR_TILES}",
    ast.ListComp: f"a list comprehension is not supported in a kernel: {_LOOP}",
    ast.Dict: f"a dict is not supported in a kernel: {_NAME_EACH}",
    ast.DictComp: f"a dict comprehension is not supported in a kernel: {_LOOP}",
    ast.Set: f"a set is not supported in a kernel: {_NAME_EACH}",
    ast.SetComp: f"a set comprehension is not supported in a kernel: {_LOOP}",
    ast.GeneratorExp: f"a generator expression is not supported in a kernel: {_LOOP}",
    ast.Tuple: "a tuple is not supported here: tuples are only alloc_spm shapes (kdt.alloc_spm((4, 8))) "
               f"and tile subscripts (t[i, 0:8]); {_NAME_EACH}",
    ast.NamedExpr: "the walrus operator := is not supported in a kernel: assign with name = expression on "
                   "a line of its own",
    ast.JoinedStr: "an f-string is not supported in a kernel: pass a plain string as kdt.print's msg",
    ast.Starred: "*unpacking is not supported in a kernel: pass each argument by itself",
    ast.Await: "await is not supported in a kernel: call the instruction directly",
    ast.Yield: "yield is not supported in a kernel: write the results into io_tensors with kdt.store",
    ast.YieldFrom: "yield is not supported in a kernel: write the results into io_tensors with kdt.store",
}

_OPERATORS: dict[type, str] = {
    ast.Pow: "the operator ** is not supported on scalars: multiply (x * x), or use kdt.pow on a tile",
    ast.MatMult: "the operator @ is not supported: use kdt.matmul(a, b, out)",
    ast.Invert: "the operator ~ is not supported: use not for a bool, or -x - 1 for an int",
    ast.Is: "'is' is not supported in a kernel: compare with == or !=",
    ast.IsNot: "'is not' is not supported in a kernel: compare with == or !=",
    ast.In: "'in' is not supported in a kernel: compare with == (or several joined with or)",
    ast.NotIn: "'not in' is not supported in a kernel: compare with != (or several joined with and)",
}


def construct(node: ast.AST) -> str:
    """What to tell a contestant about a statement or expression the front end does not translate."""
    if isinstance(node, ast.Return):
        if node.value is None:
            return "return is not supported in a kernel: put the rest of the body under an if"
        return "a kernel returns no value: write the results into io_tensors with kdt.store"
    known = _CONSTRUCTS.get(type(node))
    return known or f"unsupported Python construct '{type(node).__name__}' in a kernel"


def operator(op: ast.AST) -> str:
    """What to tell a contestant about an arithmetic, unary or comparison operator a kernel lacks."""
    known = _OPERATORS.get(type(op))
    return known or f"the operator '{type(op).__name__}' is not supported in a kernel"


def assignment(node: ast.Assign) -> str:
    """What to tell a contestant about an assignment that is not ``name = expression``."""
    if len(node.targets) != 1:
        return "chained assignment (a = b = ...) is not supported: write one name = expression per name"
    target = node.targets[0]
    if isinstance(target, (ast.Tuple, ast.List)):
        return "unpacking (a, b = ...) is not supported: write one name = expression per name"
    if isinstance(target, ast.Subscript):
        return ("assigning into a tile is not supported: write it with an instruction, e.g. "
                "kdt.copy(src, t[0:4]) or kdt.fill(t[0:4], 1.0)")
    return "only name = expression assignments are supported: assign to a plain name"


# The instruction that does on tiles what an arithmetic operator does on scalars.
_TILE_INSTRUCTIONS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}


def tile_operand(op: str) -> str:
    """What to write instead of arithmetic on a tile (``x + y`` with tiles): the instruction that does it,
    or, for an operator with none, that tiles have no operators ('' when there is nothing to add)."""
    name = _TILE_INSTRUCTIONS.get(op)
    if name is not None:
        return f"; arithmetic on tiles is an instruction: kdt.{name}(a, b, out)"
    return "; tiles have no operators: compute on them with kdt instructions"


def call(what: str, known: tuple[str, ...]) -> str:
    """The refusal of a call of ``what`` (not ``kdt.<name>``), with what to write instead: ``kdt.print`` for
    ``print``, else the closest of ``known`` (the kdt functions) when there is one."""
    text = f"only kdt.<name>(...) calls are allowed in a kernel, not '{what}(...)'"
    if what == "print":
        return text + ": use kdt.print(tile, 'message') (it prints a tile's values when the kernel runs)"
    close = _closest(what.rsplit(".", 1)[-1], known)
    return text + (f": did you mean kdt.{close[0]}(...)?" if close else "")


def unknown_function(name: str, known: tuple[str, ...]) -> str:
    """The refusal of ``kdt.<name>`` that is no kdt function, with the closest known name if there is one."""
    close = _closest(name, known)
    return f"unknown KDT function 'kdt.{name}'" + (f": did you mean kdt.{close[0]}?" if close else "")


def _closest(name: str, known: tuple[str, ...]) -> list[str]:
    """The one name of ``known`` closest to ``name`` (``difflib``), or none. Imported here, not at the top:
    a module the front end imports is reachable from a submission as its attribute, and the audit allows
    only the modules it lists."""
    import difflib

    return difflib.get_close_matches(name, known, n=1)
