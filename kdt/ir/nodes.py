"""IR nodes of a compiled KDT kernel (spec kdt-semantics.md §2).

A kernel is a tree of statements over two kinds of values:

* scalar expressions (``Const``, ``Var``, ``JobId``, ``Unary``, ``Binary``, ``Compare``, ``BoolOp``,
  ``IfExp``), evaluated per job at run time with Python semantics;
* tile views (``View``): a storage plus a start offset (a scalar expression, in elements), a size per
  dimension (scalar expressions, in elements) and a stride per dimension (a constant int, in elements).

Storages are either the io tensors (``kind == "io"``, in the order of the ``io_tensors`` dict given to
``compile``) or scratchpad allocations (``kind == "spm"``). Run-time variables live in numbered slots;
slot 0 holds the job id. Every node is an immutable dataclass, so a kernel can be shared freely.
"""
from dataclasses import dataclass
from typing import Union

# ---- scalar expressions -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Const:
    """A compile-time constant: ``int``, ``float`` or ``bool``."""

    value: Union[int, float, bool]


@dataclass(frozen=True, slots=True)
class Var:
    """A run-time variable held in ``slot`` (``name`` is for printing and messages only)."""

    slot: int
    name: str


@dataclass(frozen=True, slots=True)
class JobId:
    """``kdt.get_job_id()``: the id of the job being simulated (an int, 0-based)."""


@dataclass(frozen=True, slots=True)
class Unary:
    """``-x``, ``+x`` or ``not x``."""

    op: str
    operand: "Expr"


@dataclass(frozen=True, slots=True)
class Binary:
    """``a <op> b`` for one of ``+ - * / // % & | ^ << >>`` (Python semantics)."""

    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True, slots=True)
class Compare:
    """A single comparison ``a <op> b`` (``< <= > >= == !=``)."""

    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True, slots=True)
class BoolOp:
    """``a and b and ...`` / ``a or b or ...`` with Python's short-circuit semantics."""

    op: str
    values: tuple


@dataclass(frozen=True, slots=True)
class IfExp:
    """The conditional expression ``then if cond else orelse`` (``cond`` must be a bool at run time)."""

    cond: "Expr"
    then: "Expr"
    orelse: "Expr"


Expr = Union[Const, Var, JobId, Unary, Binary, Compare, BoolOp, IfExp]

# ---- tiles and storages -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class View:
    """A strided view of storage ``storage``: element ``idx`` lives at
    ``offset + sum(idx[d] * strides[d])``; ``sizes`` and ``offset`` are scalar expressions (elements)."""

    storage: int
    offset: Expr
    sizes: tuple
    strides: tuple


@dataclass(frozen=True, slots=True)
class Storage:
    """A row-major buffer: an io tensor (``kind == "io"``, ``name`` is its key) or an SPM allocation."""

    id: int
    kind: str
    name: str
    shape: tuple
    dtype: str

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def spm_bytes(self) -> int:
        """Bytes this storage takes in SPM (§3): 4 per float32 element, 1/8 per bool, rounded up."""
        return self.numel * 4 if self.dtype == "float32" else -(-self.numel // 8)


# ---- statements ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Assign:
    """``name = value`` for a run-time scalar; stores into ``slot``."""

    slot: int
    name: str
    value: Expr
    line: int


@dataclass(frozen=True, slots=True)
class For:
    """``for name in range(start, end): body``; the loop variable lives in ``slot``."""

    slot: int
    name: str
    start: Expr
    end: Expr
    body: tuple
    line: int


@dataclass(frozen=True, slots=True)
class If:
    """``if cond: then else: orelse`` (``cond`` must be a bool at run time)."""

    cond: Expr
    then: tuple
    orelse: tuple
    line: int


@dataclass(frozen=True, slots=True)
class Inst:
    """One instruction (``kdt.ir.ops.OPS[op]``); ``args`` maps every parameter name to a ``View``
    (tiles), an ``Expr`` (scalars) or a plain Python value (constants). ``alloc`` marks the fill
    emitted by ``alloc_spm``."""

    op: str
    args: dict
    line: int
    col: int = 0
    alloc: bool = False


@dataclass(frozen=True, slots=True)
class Raise:
    """A launch error that the handout raises only when this statement executes (``if <tile>:``, a reduce
    op or dim it cannot run): ``error`` is one of ``kdt.ir.ops.RAISE_KINDS``, ``message`` its text."""

    error: str
    message: str
    line: int


Stmt = Union[Assign, For, If, Inst, Raise]


@dataclass(frozen=True, slots=True)
class TensorMeta:
    """Compile-time metadata of one io tensor: its key, shape and dtype (``float32`` or ``bool``)."""

    name: str
    shape: tuple
    dtype: str


@dataclass(frozen=True, slots=True)
class Kernel:
    """A whole compiled kernel: ``num_jobs`` jobs run ``body``; ``storages`` lists the io tensors
    first (in ``io`` order) and then the SPM allocations; ``num_slots`` counts run-time slots
    (slot 0 is the job id)."""

    name: str
    num_jobs: int
    io: tuple
    storages: tuple
    num_slots: int
    body: tuple
