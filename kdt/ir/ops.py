"""The instruction vocabulary of KDT-DSL: one table shared by the front end, the IR loader and the
simulator (spec kdt-semantics.md §2 "Instruction keywords" and §4 "Instruction classes").

Each instruction has an ordered parameter list (the positional order of the DSL call) whose kinds are
``in`` (a tile read), ``out`` (a tile written), ``scalar`` (a run-time scalar expression), ``const``
(a compile-time constant) and ``any`` (a tile read or a scalar expression: ``print``'s ``x``).
"""
from dataclasses import dataclass, field

# Timing classes (§4): which unit the instruction occupies and whether it holds the issue unit.
MEMORY, VECTOR, MATRIX, FREE = "memory", "vector", "matrix", "free"
UNIT_OF_CLASS = {MEMORY: "MEM", VECTOR: "VXM", MATRIX: "MXM", FREE: "FREE"}


@dataclass(frozen=True)
class Param:
    """One parameter of an instruction: its keyword, kind and default (``REQUIRED`` when none)."""

    name: str
    kind: str  # "in" | "out" | "scalar" | "const" | "any"
    default: object = None
    required: bool = True


@dataclass(frozen=True)
class OpSpec:
    """An instruction: its timing class and parameters in positional order.

    ``aliases`` maps an accepted alternative keyword to the canonical one (``fill(x=...)``).
    """

    name: str
    klass: str
    params: tuple[Param, ...]
    aliases: dict = field(default_factory=dict)

    @property
    def tile_inputs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind == "in")

    @property
    def tile_outputs(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind == "out")


def _p(name, kind, default=None, required=True):
    return Param(name, kind, default, required)


_BINARY = ("add", "sub", "mul", "div", "max", "min", "logical_and", "logical_or", "le", "leq", "eq", "neq")
_UNARY = ("exp", "log", "pow")

OPS: dict[str, OpSpec] = {}
for _name in _BINARY:
    OPS[_name] = OpSpec(_name, VECTOR, (_p("a", "in"), _p("b", "in"), _p("out", "out")))
for _name in _UNARY:
    OPS[_name] = OpSpec(_name, VECTOR, (_p("x", "in"), _p("out", "out"), _p("y", "scalar")))
OPS["fma"] = OpSpec("fma", VECTOR, (_p("a", "in"), _p("b", "in"), _p("c", "in"), _p("out", "out")))
OPS["reduce"] = OpSpec("reduce", VECTOR, (_p("x", "in"), _p("dim", "const"), _p("op", "const"), _p("out", "out")))
OPS["matmul"] = OpSpec("matmul", MATRIX, (_p("a", "in"), _p("b", "in"), _p("out", "out"),
                                          _p("accumulate", "scalar", False, required=False)))
OPS["where"] = OpSpec("where", FREE, (_p("cond", "in"), _p("a", "in"), _p("b", "in"), _p("out", "out")))
OPS["copy"] = OpSpec("copy", FREE, (_p("src", "in"), _p("dst", "out")))
OPS["fill"] = OpSpec("fill", FREE, (_p("out", "out"), _p("value", "const")), aliases={"x": "out"})
OPS["load"] = OpSpec("load", MEMORY, (_p("src", "in"), _p("dst", "out")))
OPS["store"] = OpSpec("store", MEMORY, (_p("src", "in"), _p("dst", "out")))
OPS["print"] = OpSpec("print", FREE, (_p("x", "any"), _p("msg", "const", "", required=False),
                                      _p("print_only_if_job0", "const", False, required=False)))

REDUCE_OPS = ("sum", "max", "min")

# Scalar operators of the language (§2 "Scalars"), by their Python AST spelling.
BINARY_OPERATORS = ("+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>")
COMPARE_OPERATORS = ("<", "<=", ">", ">=", "==", "!=")
UNARY_OPERATORS = ("-", "+", "not")
BOOL_OPERATORS = ("and", "or")

DTYPES = ("float32", "bool")


def torch_dtypes() -> dict:
    """torch dtype -> KDT dtype name, for io tensors (checked at compile and again at launch)."""
    import torch  # the IR itself needs no torch; only the io boundary does

    return {torch.float32: "float32", torch.bool: "bool"}
