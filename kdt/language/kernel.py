"""``kdt.kernel``, ``KernelFunction`` and the module-level instruction stubs (spec kdt-semantics.md §1).

``KernelFunction.compile`` reads the decorated function's source with ``inspect``, translates it with
``KernelBuilder`` and asks the ``num_jobs_calculator`` for the job count; the result is a
``CompiledKernel`` holding plain IR (no reference back to the submission's code).
"""
import ast
import dataclasses
import inspect
import numbers
import textwrap


from ..ir import nodes as ir
from ..ir.kernel import CompiledKernel
from ..ir.ops import OPS, torch_dtypes
from ..ir.serialize import MAX_NODES, IRFormatError, dumps, expanded_size, loads
from . import errors as E
from .frontend import KernelBuilder




class KernelFunction:
    """A kernel defined with ``@kdt.kernel(num_jobs_calculator=f)``.

    Calling it directly raises ``SemanticError``; ``compile(task_args, io_tensors)`` builds the IR.
    """

    def __init__(self, fn, num_jobs_calculator):
        self.fn = fn
        self.num_jobs_calculator = num_jobs_calculator
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        raise E.SemanticError(f"kernel '{self.__name__}' cannot be called directly; use "
                              ".compile(task_args, io_tensors) and kdt.launch_kernel")

    def compile(self, task_args: dict, io_tensors: dict) -> CompiledKernel:
        """Compile for these ``task_args`` (str -> int) and io tensor metadata (str -> CPU float32/bool
        tensor; only names, shapes and dtypes are used).

        Raises a ``kdt.language.errors.CompilationError`` subclass: ``ConstantRequiredError`` for a
        non-int task argument, ``TypeError`` for a bad io tensor, the front end's errors, and
        ``CompilationError`` for a bad or failing ``num_jobs_calculator``.
        """
        task_args = _check_task_args(task_args)
        io_meta = _io_meta(io_tensors)
        fn_node, line_offset, col_offset, lines = _parse(self.fn)
        builder = KernelBuilder(task_args, io_meta, line_offset, col_offset, lines)
        kernel_ir = builder.build(fn_node, self.__name__, 1)
        # The body's errors come first, then the job count's, as in the handout.
        kernel_ir = dataclasses.replace(kernel_ir, num_jobs=self._num_jobs(task_args))
        return CompiledKernel(_within_ir_limits(kernel_ir))

    def _num_jobs(self, task_args) -> int:
        try:
            n = self.num_jobs_calculator(dict(task_args))
        except Exception as exc:
            raise E.CompilationError(f"num_jobs_calculator raised {type(exc).__name__}: {exc}") from exc
        # An int (True counts as 1, as in the handout); a numpy integer is refused like in the handout.
        if type(n) not in (int, bool) or n <= 0:
            raise E.CompilationError(f"num_jobs_calculator must return a positive int, got "
                                     f"{type(n).__name__} {n!r}" + (" (convert it with int(...))"
                                                                    if isinstance(n, numbers.Integral) else ""))
        return int(n)


def kernel(num_jobs_calculator):
    """Decorator: ``@kdt.kernel(num_jobs_calculator=f)`` turns ``def k(task_args, io_tensors)`` into a
    ``KernelFunction``; ``f(task_args)`` gives the number of jobs."""
    if not callable(num_jobs_calculator):
        raise E.CompilationError("kdt.kernel needs num_jobs_calculator=<a function of task_args>")

    def wrap(fn):
        return KernelFunction(fn, num_jobs_calculator)

    return wrap


def _within_ir_limits(kernel: ir.Kernel) -> ir.Kernel:
    """The kernel, after checking it passes the strict IR loader (depth, size and count limits): the
    grading service moves it as JSON, and a kernel too big for that must fail here, as a compile error."""
    if expanded_size(kernel) > MAX_NODES:  # scalar names share their expressions: count them expanded
        raise E.CompilationError(f"the kernel exceeds the limits of the KDT IR: more than {MAX_NODES} IR nodes "
                                 "once every scalar name is replaced by its expression")
    try:
        loads(dumps(kernel))  # the very check (byte size included) the trusted worker applies
    except IRFormatError as exc:
        raise E.CompilationError(f"the kernel exceeds the limits of the KDT IR: {exc}") from None
    return kernel


def _check_task_args(task_args) -> dict:
    if not isinstance(task_args, dict):
        raise E.ConstantRequiredError(f"task_args must be a dict, got {type(task_args).__name__}")
    for k, v in task_args.items():
        if not isinstance(k, str):
            raise E.ConstantRequiredError(f"task_args keys must be strings, got {k!r}")
        if type(v) not in (int, bool):
            raise E.ConstantRequiredError(f"task_args['{k}'] must be an int, got {type(v).__name__}")
    return dict(task_args)


def _io_meta(io_tensors) -> list:
    if not isinstance(io_tensors, dict):
        raise E.TypeError(f"io_tensors must be a dict, got {type(io_tensors).__name__}")
    import torch

    dtypes, meta = torch_dtypes(), []
    for name, t in io_tensors.items():
        if not isinstance(name, str):
            raise E.TypeError(f"io_tensors keys must be strings, got {name!r}")
        if not isinstance(t, torch.Tensor) or t.dtype not in dtypes or t.device.type != "cpu":
            got = f"{t.dtype} on {t.device}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise E.TypeError(f"io_tensors['{name}'] must be a CPU torch.float32 or torch.bool tensor, "
                              f"got {got}")
        meta.append(ir.TensorMeta(name, tuple(int(s) for s in t.shape), dtypes[t.dtype]))
    return meta


def _parse(fn):
    """The kernel's ``FunctionDef`` and the line/column offsets back to the submitted file."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise E.CompilationError(f"cannot read the source of kernel '{getattr(fn, '__name__', fn)}': "
                                 f"{exc}") from exc
    source = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    if indent:  # the handout parses the source as it stands: Python's IndentationError
        raise E.IndentationError(f"kernel '{getattr(fn, '__name__', fn)}' is indented (defined inside a "
                                 "function, class or block): define it at the top level of the file",
                                 first, indent + 1)
    dedented = textwrap.dedent(source)
    try:
        module = ast.parse(dedented)
    except SyntaxError as exc:
        raise E.SyntaxError(f"cannot parse the kernel: {exc.msg}", (exc.lineno or 1) + first - 1,
                            exc.offset) from exc
    fn_node = next((n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if not isinstance(fn_node, ast.FunctionDef):
        raise E.CompilationError("a kernel must be a plain 'def' function")
    return fn_node, first - 1, indent, dedented.splitlines()


class Tile:
    """The type of tile values inside a kernel (for annotations and documentation only)."""


def _stub(name):
    def stub(*args, **kwargs):
        raise E.SemanticError(f"kdt.{name} can only be used inside a @kdt.kernel function")

    stub.__name__ = name
    stub.__qualname__ = name
    stub.__doc__ = f"KDT-DSL ``{name}``: only meaningful inside a kernel (spec kdt-semantics.md §2)."
    return stub


STUB_NAMES = tuple(OPS) + ("alloc_spm", "get_job_id", "slice", "squeeze", "unsqueeze", "broadcast_to",
                           "transpose")
STUBS = {name: _stub(name) for name in STUB_NAMES}
