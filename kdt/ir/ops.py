"""The instruction table of KDT-DSL: one place for every per-instruction rule, read by the front end, the
IR loader and the simulator (spec kdt-semantics.md §2 "Instruction keywords", §3 "Memory spaces" and the
launch-time checks, §4 "Instruction classes").

Each instruction has an ordered parameter list (the positional order of the DSL call). A parameter's
``kind`` is ``in`` (a tile read), ``out`` (a tile written), ``scalar`` (a run-time scalar expression),
or ``const`` (a compile-time constant).
A tile parameter also says

* ``space``: the memory space its tile must live in (``GLOBAL``: an ``io_tensors`` tile; ``SPM``: an
  ``alloc_spm`` tile). Spaces are static, so this rule is checked by all three readers (``STAGES``);
* ``dtypes``: the storage dtypes it accepts (None: any), checked when the instruction executes, as the
  handout does (``dtype_if``: the rule applies only while that scalar parameter is truthy;
  ``dtype_unless_inputs``: nor when every tile input has that dtype: numpy accumulates a bool product
  into a bool tile, a float one it cannot);
* ``rank``: the number of dimensions it needs (None: any), a launch-time ``ShapeError``;
* ``aliasing``: how an output may overlap the inputs. Every instruction reads all of its inputs before
  it writes (``READS_FIRST``), so an output may be one of its inputs (``matmul(a, b, a)``, in-place
  ``add``); the simulator buffers overlapping copies to keep that true.

``STAGES`` says when each kind of rule is checked: ``compile`` (the front end, with the line),
``load`` (``kdt.ir.serialize``, a hand-made IR), ``build`` (the simulator, before job 0, for an IR built in
Python), ``launch`` (when the instruction executes, per job).
"""
import functools
from dataclasses import dataclass, field

# Timing classes (§4): which unit the instruction occupies and whether it holds the issue unit.
MEMORY, VECTOR, MATRIX, FREE = "memory", "vector", "matrix", "free"
UNIT_OF_CLASS = {MEMORY: "MEM", VECTOR: "VXM", MATRIX: "MXM", FREE: "FREE"}

# Memory spaces (§3) and the storage kind that lives in each.
GLOBAL, SPM = "global", "spm"
SPACE_OF_KIND = {"io": GLOBAL, "spm": SPM}
SPACE_TEXT = {GLOBAL: "global memory", SPM: "SPM"}
_WANT_TEXT = {GLOBAL: "a global tensor (io_tensors[...])", SPM: "an SPM tile (kdt.alloc_spm)"}

READS_FIRST = "reads every input before writing; may alias an input"

STAGES = {
    "space": ("compile", "load", "build"),
    "tile or scalar": ("compile", "load"),
    "constant": ("compile", "load"),
    "dtype": ("launch",),
    "rank": ("launch",),
    "shape": ("launch",),
    "bounds": ("launch",),
    "reduce op and dim": ("launch",),
    "scalar base (exp, log)": ("launch",),
}


@dataclass(frozen=True)
class Param:
    """One parameter of an instruction (see the module docstring for the fields)."""

    name: str
    kind: str  # "in" | "out" | "scalar" | "const"
    default: object = None
    required: bool = True
    space: str | None = None
    dtypes: tuple | None = None
    dtype_if: str | None = None
    dtype_unless_inputs: str | None = None
    rank: int | None = None
    aliasing: str | None = None

    @property
    def is_tile(self) -> bool:
        return self.kind in ("in", "out")


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

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


def _in(name, space=SPM, **kw):
    return Param(name, "in", space=space, **kw)


def _out(name, space=SPM, **kw):
    return Param(name, "out", space=space, aliasing=READS_FIRST, **kw)


def _scalar(name, default=None, required=True):
    return Param(name, "scalar", default, required)


def _const(name, default=None, required=True):
    return Param(name, "const", default, required)


_BINARY = ("add", "sub", "mul", "div", "max", "min", "logical_and", "logical_or", "le", "leq", "eq", "neq")

OPS: dict[str, OpSpec] = {}
for _name in _BINARY:
    OPS[_name] = OpSpec(_name, VECTOR, (_in("a"), _in("b"), _out("out")))
OPS["exp"] = OpSpec("exp", VECTOR, (_in("x"), _out("out"), _scalar("y")))
OPS["log"] = OpSpec("log", VECTOR, (_in("x", dtypes=("float32",)), _out("out"), _scalar("y")))
OPS["pow"] = OpSpec("pow", VECTOR, (_in("x"), _out("out"), _scalar("y")))
OPS["fma"] = OpSpec("fma", VECTOR, (_in("a"), _in("b"), _in("c"), _out("out")))
OPS["reduce"] = OpSpec("reduce", VECTOR, (_in("x"), _const("dim"), _const("op"), _out("out")))
OPS["matmul"] = OpSpec("matmul", MATRIX, (_in("a", rank=2), _in("b", rank=2),
                                          _out("out", rank=2, dtypes=("float32",), dtype_if="accumulate",
                                               dtype_unless_inputs="bool"),
                                          _scalar("accumulate", False, required=False)))
OPS["where"] = OpSpec("where", FREE, (_in("cond"), _in("a"), _in("b"), _out("out")))
OPS["copy"] = OpSpec("copy", FREE, (_in("src"), _out("dst")))
OPS["fill"] = OpSpec("fill", FREE, (_out("out"), _const("value")), aliases={"x": "out"})
OPS["load"] = OpSpec("load", MEMORY, (_in("src", GLOBAL), _out("dst")))
OPS["store"] = OpSpec("store", MEMORY, (_in("src"), _out("dst", GLOBAL)))
OPS["print"] = OpSpec("print", FREE, (_in("x"), _const("msg", "", required=False),
                                      _const("print_only_if_job0", False, required=False)))

REDUCE_OPS = ("sum", "max", "min")

# Scalar operators of the language (§2 "Scalars"), by their Python AST spelling.
BINARY_OPERATORS = ("+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>")
COMPARE_OPERATORS = ("<", "<=", ">", ">=", "==", "!=")
UNARY_OPERATORS = ("-", "+", "not")
BOOL_OPERATORS = ("and", "or")

DTYPES = ("float32", "bool")

# Errors the handout raises only when a statement executes; the front end emits them as ``raise``
# statements of the IR (``kdt.ir.nodes.Raise``) and the simulator raises the launch error of that name.
RAISE_KINDS = ("TypeError", "ValueError", "InternalError")


def storage_label(storage) -> str:
    """How messages name an ``ir.Storage``: ``io_tensors['a']`` or the SPM tile's name."""
    if storage.kind == "io":
        return f"io_tensors[{storage.name!r}]"
    return f"SPM tile {storage.name!r}" if storage.name else f"SPM tile #{storage.id}"


def space_problem(op: str, param: str, storage) -> str | None:
    """None when a tile of ``storage`` (an ``ir.Storage``) may be operand ``param`` of ``op``; else the
    message that says what is wrong and how to fix it (§3 "Memory spaces")."""
    want = OPS[op].param(param).space
    have = SPACE_OF_KIND[storage.kind]
    label = storage_label(storage)
    if want is None or want == have:
        return None
    where = f"operand '{param}' of kdt.{op} is {label}, in {SPACE_TEXT[have]}, but kdt.{op} needs " \
            f"{_WANT_TEXT[want]} there"
    if want == GLOBAL:
        fix = "kdt.copy moves data between SPM tiles"
    elif OPS[op].param(param).kind != "out":
        fix = "load it into an SPM tile first (kdt.load)"
    elif op == "load":
        fix = "load it into an SPM tile first (an alloc_spm tile), then kdt.store that tile"
    else:
        fix = "write into an SPM tile first, then kdt.store that tile into the global tensor"
    return f"{where}: {fix}"


@functools.cache
def torch_dtypes() -> dict:
    """torch dtype -> KDT dtype name, for io tensors (checked at compile and again at launch).

    torch is imported here, at the io boundary, and only there (and in the launch, the replay and the
    output comparison, inside their functions): ``import kdt`` needs no torch, so the judge's processes
    that only read IR, traces and profiles (the contest server's HTTP processes, the CLI) start without
    paying seconds for it."""
    import torch

    return {torch.float32: "float32", torch.bool: "bool"}

