"""The KDT-DSL front end: ``kdt.kernel`` and the AST -> IR translation (spec kdt-semantics.md §1-§2)."""
from . import errors
from .kernel import KernelFunction, Tile, kernel

__all__ = ["KernelFunction", "Tile", "errors", "kernel"]
