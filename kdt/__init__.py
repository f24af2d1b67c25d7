"""KDT: the KDT-DSL kernel language and the cycle-exact KDT-TPU simulator.

Public API (spec kdt-semantics.md §1): ``kernel``, ``KernelFunction``, ``CompiledKernel``,
``launch_kernel``, ``TPUSpec``, ``Profile``, ``utils.check_is_allclose``, ``Tile`` and one stub per
instruction (``kdt.add``, ``kdt.load``, ...) that raises ``SemanticError`` outside a kernel.
"""
from . import ir, language, simulator, utils
from .ir import CompiledKernel, IRFormatError
from .language import KernelFunction, Tile, kernel
from .language.kernel import STUBS as _STUBS
from .simulator import Profile, TPUSpec, TraceEntry, launch_kernel

globals().update(_STUBS)

__all__ = ["CompiledKernel", "IRFormatError", "KernelFunction", "Profile", "TPUSpec", "Tile", "TraceEntry",
           "ir", "kernel", "language", "launch_kernel", "simulator", "utils", *_STUBS]
