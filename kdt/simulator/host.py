"""The host side of a launch, shared by ``launch`` and ``replay``: numpy arrays over the io tensors, one
BLAS thread, the cyclic garbage collector paused (spec kdt-semantics.md §1: tensors are written in place)."""
import contextlib
import gc

from threadpoolctl import ThreadpoolController

from ..ir.ops import torch_dtypes
from .errors import ValueError as LaunchValueError

_BLAS: list = []  # one ThreadpoolController, made on first launch (it scans the loaded libraries)


def prepare_blas_control() -> None:
    """Find the process's BLAS/OpenMP libraries and their thread-count functions now (``threadpoolctl``
    opens each with ``ctypes``), once.
    The sandboxed compile child calls this before its audit hook goes in, so that a submission calling
    ``kdt.launch_kernel`` itself (autotuning) does not make the judge's own library loads look like its."""
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
        with _BLAS[0].limit(limits=1, user_api="blas"):  # looks up (and caches) the libraries' functions
            pass


@contextlib.contextmanager
def no_cyclic_gc():
    """The cyclic garbage collector paused while a launch runs: a launch allocates many small objects
    (closures, views, recorded steps) that all die with it or live as long as the caller keeps them, and
    each automatic collection would walk every object of the process (torch, numpy, the judge), which
    cost a third of a replayed launch. Reference counting still frees everything at once; nothing a
    launch allocates forms cycles that outlive it. Collection is resumed (if it was on) afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def single_threaded_blas():
    """Tiles are small: BLAS threads only spin against each other (and against other workers) on a
    loaded machine, which once made a 0.3 s launch take 20 s. Cycle counts never depend on this."""
    prepare_blas_control()
    return _BLAS[0].limit(limits=1, user_api="blas")


def io_arrays(kernel, io_tensors):
    """Numpy arrays sharing memory with the io tensors (copies, written back, where that is impossible)."""
    import torch

    if not isinstance(io_tensors, dict):
        raise LaunchValueError(f"io_tensors must be a dict, got {type(io_tensors).__name__}")
    want = {m.name for m in kernel.io}
    missing, extra = sorted(want - set(io_tensors)), sorted(set(io_tensors) - want)
    if missing or extra:
        raise LaunchValueError(f"io_tensors do not match the compiled kernel (missing: {missing}, "
                               f"unexpected: {extra})")
    arrays, write_back = {}, []
    for st in kernel.storages:
        if st.kind != "io":
            continue
        t = io_tensors[st.name]
        if not isinstance(t, torch.Tensor):
            raise LaunchValueError(f"io_tensors['{st.name}'] is not a tensor")
        if t.device.type != "cpu":
            raise LaunchValueError(f"io_tensors['{st.name}'] must be on the CPU, it is on {t.device}")
        if torch_dtypes().get(t.dtype) != st.dtype or tuple(t.shape) != st.shape:
            raise LaunchValueError(f"io_tensors['{st.name}'] is {t.dtype} {tuple(t.shape)}, the kernel was "
                                   f"compiled for {st.dtype} {st.shape}")
        t = t.detach()
        if any(st_ == 0 and sz > 1 for st_, sz in zip(t.stride(), t.shape)):
            raise LaunchValueError(f"io_tensors['{st.name}'] repeats memory (an expanded tensor, stride 0); "
                                   "pass a contiguous tensor, e.g. .contiguous()")
        if t.is_contiguous():
            arrays[st.id] = t.view(-1).numpy()
        else:
            arrays[st.id] = t.contiguous().view(-1).numpy()
            write_back.append((io_tensors[st.name], arrays[st.id]))
    return arrays, write_back
