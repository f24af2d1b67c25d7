"""Replaying a launch's numpy work on other data (spec kdt-semantics.md §3, §4).

Control flow, views and scalars of a kernel depend only on the job id, the loop variables and the
compile-time constants, never on tile data (no instruction turns tile data into a scalar). So the
instructions a launch executes, their operand views and their scalar values are the same for every
input, and so are its errors (every launch-time check reads shapes, dtypes, bounds or scalars only) and
its cycles. A timed launch can therefore record what it executed (``launch_kernel(..., record=rec)``), and
``replay_kernel(rec, io_tensors)`` then does the same numpy calls, in the same order, on another launch's
tensors: the outputs and prints of ``launch_kernel(..., timing=False)`` bit for bit, without the
interpreter around them (no scalar expressions, view resolution, checks or timing per instruction).

A recording holds one entry per executed instruction and one view description per distinct operand view;
it keeps no array of the recorded launch. It is bounded: past ``max_steps`` executed instructions it is
abandoned (``complete`` stays False) and the launch goes on unaffected.
"""
import sys

import numpy as np

from .clock import TimeLimit
from .errors import SimulationTimeout
from .errors import ValueError as LaunchValueError
from .host import io_arrays, no_cyclic_gc, single_threaded_blas
from .memory import view_of, write_target
from .semantics import WriteTarget

# About 100 bytes per recorded instruction: 10**6 of them is ~100 MB. Contest kernels execute at most a
# few ten thousand instructions per launch.
DEFAULT_MAX_STEPS = 1 << 20
_CHECK_EVERY = 64  # instructions between two looks at the wall clock


class Recording:
    """What one launch executed, for ``replay_kernel``; pass it as ``launch_kernel(..., record=...)``.

    ``complete`` is True once a launch recorded all of its instructions (at most ``max_steps``) and ended
    without an error. Until then (and for ever after an abandoned or failed launch) it cannot be replayed.
    """

    def __init__(self, max_steps: int = DEFAULT_MAX_STEPS):
        if max_steps < 0:
            raise ValueError(f"max_steps must be >= 0, got {max_steps}")
        self.max_steps = max_steps
        self.complete = False
        self.kernel = None
        self.views: list = []  # (storage id, offset, sizes, strides) per distinct operand view
        self.steps: list = []  # (bind, input view indices, output view index or None, val, line)
        self._raw: list | None = None

    def start(self, kernel) -> list:
        """Called by ``launch_kernel`` before job 0: the list its instructions are appended to."""
        if self._raw is not None or self.complete:
            raise ValueError("a Recording records one launch")
        self.kernel = kernel
        self._raw = []
        return self._raw

    def abandon(self) -> None:
        """Called by ``launch_kernel`` when the launch failed: nothing to replay, nothing kept."""
        self._raw = None

    def finish(self) -> None:
        """Called by ``launch_kernel`` after the last job ended without an error: index the views and drop
        every reference to the recorded launch's arrays."""
        raw, self._raw = self._raw, None
        if raw is None or (raw and raw[0] is None):  # abandoned: too many instructions
            return
        index: dict = {}
        views, steps = self.views, self.steps

        def key(rv):
            k = index.get(id(rv))
            if k is None:
                k = index[id(rv)] = len(views)
                views.append((rv.st.id, rv.off, rv.shape, rv.strides, rv))  # rv kept until the loop ends
            return k
        for bind, ins, out, val, line in raw:
            steps.append((bind, tuple(key(rv) for rv in ins), None if out is None else key(out), val, line))
        self.views = [v[:4] for v in views]
        self.complete = True


def replay_kernel(recording: Recording, io_tensors: dict, *, timeout: float = 20.0, print_file=None,
                  clock=None) -> None:
    """Do the numpy work of the launch ``recording`` holds on ``io_tensors``, as
    ``launch_kernel(compiled, io_tensors, spec, timing=False)`` of that launch's kernel and spec would.

    ``io_tensors`` must have the compile-time names, shapes and dtypes (``ValueError`` otherwise, as
    ``launch_kernel``); outputs are written into them in place, ``kdt.print`` output goes to
    ``print_file`` (stdout by default). SPM tiles start zeroed, as in any launch. Returns None (the
    cycles are the recorded launch's). ``ValueError`` when the recording is not ``complete``;
    ``TimeoutError`` (``SimulationTimeout``) after ``timeout`` seconds of wall-clock time, or of ``clock``
    when given (as ``launch_kernel``'s).
    """
    with no_cyclic_gc():
        _replay(recording, io_tensors, timeout, print_file, clock)


def _replay(recording, io_tensors, timeout, print_file, clock):
    import torch

    if not isinstance(recording, Recording) or not recording.complete:
        raise LaunchValueError("replay_kernel needs a complete Recording (a launch that recorded every "
                               "instruction and ended without an error)")
    limit = TimeLimit(timeout, clock)
    kernel = recording.kernel
    arrays, write_back = io_arrays(kernel, io_tensors)
    buffers = [arrays[st.id] if st.id in arrays else np.zeros(st.numel, dtype=_NP_DTYPE[st.dtype])
               for st in kernel.storages]
    datas, targets = [], []
    for sid, off, sizes, strides in recording.views:
        data = view_of(buffers[sid], off, sizes, strides)
        datas.append(data)
        targets.append(WriteTarget(data, *write_target(data, sizes, strides)))
    out = print_file if print_file is not None else None
    stream = lambda: out or sys.stdout  # noqa: E731 - looked up per print, as launch_kernel does
    runs = [bind([datas[i] for i in ins], None if o is None else targets[o], val, stream)
            for bind, ins, o, val, _ in recording.steps]
    steps = recording.steps
    passed = limit.passed
    try:
        with np.errstate(all="ignore"), single_threaded_blas():
            if kernel.num_jobs and passed():
                raise SimulationTimeout(f"simulation passed its {limit.name} before job 0")
            for lo in range(0, len(runs), _CHECK_EVERY):
                if passed():
                    raise SimulationTimeout(f"simulation passed its {limit.name} (at line {steps[lo][4]})")
                for run in runs[lo:lo + _CHECK_EVERY]:
                    run()
        if passed():
            raise SimulationTimeout(f"simulation passed its {limit.name} in the last job")
    finally:
        for tensor, array in write_back:
            tensor.copy_(torch.from_numpy(array.reshape(tuple(tensor.shape))))


_NP_DTYPE = {"float32": np.float32, "bool": np.bool_}
