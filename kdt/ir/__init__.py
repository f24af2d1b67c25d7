"""KDT IR: nodes, the instruction table, printing and JSON serialisation."""
from .kernel import CompiledKernel
from .nodes import (Assign, Binary, BoolOp, Compare, Const, For, If, IfExp, Inst, JobId, Kernel, Raise, Storage,
                    TensorMeta, Unary, Var, View)
from .serialize import IRFormatError

__all__ = ["CompiledKernel", "IRFormatError", "Assign", "Binary", "BoolOp", "Compare", "Const", "For", "If",
           "IfExp", "Inst", "JobId", "Kernel", "Raise", "Storage", "TensorMeta", "Unary", "Var", "View"]
