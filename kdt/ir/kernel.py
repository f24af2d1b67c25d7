"""``CompiledKernel``: what ``KernelFunction.compile`` returns and ``kdt.launch_kernel`` runs."""
import sys

from . import nodes as ir
from .printer import kernel_str
from .serialize import dumps, kernel_to_dict, loads


class CompiledKernel:
    """A kernel's IR with its job count and io tensor metadata; plain data, no submission code.

    It round-trips through JSON (``to_json``/``from_json``) to an object that simulates identically;
    ``from_json`` validates untrusted input strictly (``kdt.ir.serialize.IRFormatError``).
    """

    def __init__(self, kernel: ir.Kernel):
        self.ir = kernel

    @property
    def num_jobs(self) -> int:
        return self.ir.num_jobs

    @property
    def io(self) -> tuple:
        """The io tensors' ``TensorMeta`` (name, shape, dtype) in compile order."""
        return self.ir.io

    def print_ir(self, file=None) -> None:
        """Print a readable form of the IR (to stdout by default)."""
        print(self.ir_text(), file=file or sys.stdout)

    def ir_text(self) -> str:
        """The readable IR as a string."""
        return kernel_str(self.ir)

    def to_json(self) -> str:
        """The kernel as JSON text (see ``kdt.ir.serialize``)."""
        return dumps(self.ir)

    def to_dict(self) -> dict:
        return kernel_to_dict(self.ir)

    @classmethod
    def from_json(cls, text) -> "CompiledKernel":
        """Load untrusted JSON text; raises ``IRFormatError`` (a ``ValueError``) when malformed."""
        return cls(loads(text))

    def __eq__(self, other):
        return isinstance(other, CompiledKernel) and self.ir == other.ir

    def __repr__(self):
        return f"CompiledKernel({self.ir.name!r}, num_jobs={self.num_jobs}, io={[m.name for m in self.io]})"
