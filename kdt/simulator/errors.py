"""Launch-time errors of the KDT-TPU simulator (spec kdt-semantics.md §1, §3).

They share the handout's class names and also derive from the matching Python builtin, so both
``except kdt.simulator.errors.ShapeError`` and a match on ``IndexError`` in the MRO work.
"""
import builtins


class LaunchError(Exception):
    """Base of every error raised while checking or simulating a launch."""


class ShapeError(LaunchError, builtins.ValueError):
    """Operand shapes disagree (element-wise ops, load/store/copy/where, matmul, reduce)."""


class TypeError(LaunchError, builtins.TypeError):
    """A run-time scalar of the wrong type (a non-bool ``if`` condition, a non-int ``range`` bound)."""


class UFuncTypeError(TypeError):
    """A tile operand of a dtype its instruction cannot take (``kdt.ir.ops``: ``log`` of a bool tile, a
    float product accumulated into a bool tile). The handout fails there inside numpy, whose class of that
    name this mirrors (numpy's also derives from ``TypeError``)."""


class ValueError(LaunchError, builtins.ValueError):
    """The launch arguments do not match the compiled kernel, or a scalar computation failed."""


class OutOfBoundsError(LaunchError, builtins.IndexError):
    """A view reaches outside its storage (§3: ``offset < 0`` or last element ``>= elements``)."""


class SPMOverflowError(LaunchError, builtins.RuntimeError):
    """The kernel's ``alloc_spm`` storages need more bytes than ``TPUSpec.spm_size``."""


class SimulationTimeout(LaunchError, builtins.TimeoutError):
    """The simulation ran past its time limit (20 s of wall-clock time per launch by default; ``kdt.simulator.clock``)."""


class InternalError(LaunchError, builtins.RuntimeError):
    """The handout's ``InternalError`` at launch: a statement it cannot execute was reached (a ``reduce``
    op other than sum, max and min)."""


class MemorySpaceError(LaunchError, builtins.KeyError):
    """A tile in the wrong memory space (spec §3), found before job 0 in an IR built without the front end
    or the IR loader (both refuse it earlier). ``str()`` is the plain message."""

    __str__ = builtins.Exception.__str__
