"""``launch_kernel``: check, simulate every job, place jobs on SMs (spec kdt-semantics.md §1, §3, §4)."""
import sys

import numpy as np

from ..ir.kernel import CompiledKernel
from .clock import TimeLimit
from .errors import SPMOverflowError, SimulationTimeout
from .errors import TypeError as LaunchTypeError
from .errors import ValueError as LaunchValueError
from .host import io_arrays, no_cyclic_gc, prepare_blas_control, single_threaded_blas
from .memory import new_storage
from .program import JobState, ProgramBuilder, spm_to_zero, zero_spm
from .replay import Recording
from .schedule import assign_jobs
from .spec import TPUSpec

DEFAULT_TIMEOUT = 20.0
__all__ = ["DEFAULT_TIMEOUT", "launch_kernel", "prepare_blas_control"]


def launch_kernel(compiled: CompiledKernel, io_tensors: dict, tpu_spec: TPUSpec, *,
                  timeout: float = DEFAULT_TIMEOUT, profile=None, print_file=None, timing: bool = True,
                  record=None, clock=None) -> int | None:
    """Simulate ``compiled`` on ``tpu_spec`` and return the kernel's cycles.

    ``io_tensors`` must have exactly the compile-time names, shapes and dtypes (CPU tensors); outputs are
    written into them in place. ``profile`` (a ``kdt.Profile``) collects per-instruction traces and the
    job -> SM placement; ``print_file`` receives ``kdt.print`` output (stdout by default).

    ``timing=False`` runs the functional model only and returns None: the same outputs, prints, errors
    and time limit, without the §4 timing stamps (cycles never depend on the data, so a judge times one
    trial and runs the others this way). It cannot take a ``profile`` (``ValueError``).

    ``record`` (a fresh ``kdt.simulator.Recording``, timing model only, else ``ValueError``) receives the
    instructions this launch executes; when the launch succeeds (and executed at most the recording's
    ``max_steps`` instructions) it is ``complete`` and ``kdt.simulator.replay_kernel`` repeats the
    functional model on other tensors from it.

    Raises ``ValueError`` (bad arguments), ``RuntimeError`` (SPM overflow, before job 0),
    ``IndexError`` (a view outside its storage), ``ShapeError``/``TypeError`` (launch-time checks) and
    ``TimeoutError`` after ``timeout`` seconds of wall-clock time, or of ``clock`` when given (seconds, e.g.
    ``time.process_time``: see ``kdt.simulator.clock.TimeLimit``; what ``clock`` raises propagates).
    """
    with no_cyclic_gc():
        return _launch(compiled, io_tensors, tpu_spec, timeout, profile, print_file, timing, record, clock)


def _launch(compiled, io_tensors, tpu_spec, timeout, profile, print_file, timing, record, clock):
    import torch

    if not isinstance(compiled, CompiledKernel):
        raise LaunchTypeError(f"launch_kernel needs a CompiledKernel, got {type(compiled).__name__}")
    if not isinstance(tpu_spec, TPUSpec):
        raise LaunchTypeError(f"launch_kernel needs a kdt.TPUSpec, got {type(tpu_spec).__name__}")
    if not timing and profile is not None:
        raise LaunchValueError("a profile needs the timing model: launch_kernel(..., timing=True)")
    if record is not None and (not timing or not isinstance(record, Recording)):
        raise LaunchValueError("record needs a kdt.simulator.Recording and the timing model")
    kernel = compiled.ir
    arrays, write_back = io_arrays(kernel, io_tensors)
    _check_spm(kernel, tpu_spec)
    storages = [new_storage(st, arrays.get(st.id)) for st in kernel.storages]
    limit = TimeLimit(timeout, clock)
    if profile is not None:
        profile.start()
    state = JobState(limit)
    out = print_file if print_file is not None else None
    body = ProgramBuilder(kernel, storages, tpu_spec, state, lambda: out or sys.stdout, timing=timing).build()
    if record is not None:
        state.record, state.record_cap = record.start(kernel), record.max_steps
    try:
        with np.errstate(all="ignore"), single_threaded_blas():
            job_cycles = _run_jobs(kernel, body, state, profile, storages)
        if record is not None:
            record.finish()
    except BaseException:
        if record is not None:
            record.abandon()
        raise
    finally:
        for tensor, array in write_back:
            tensor.copy_(torch.from_numpy(array.reshape(tuple(tensor.shape))))
    if not timing:
        return None
    cycles, placement = assign_jobs(job_cycles, tpu_spec.num_sms)
    if profile is not None:
        profile.finish(kernel, tpu_spec, job_cycles, placement, cycles)
    return cycles


def _run_jobs(kernel, body, state: JobState, profile, storages) -> list:
    """Simulate the jobs in id order (spec §4); each job after the first starts with SPM zeroed where its
    own allocation fills do not already overwrite it (``spm_to_zero``). Returns each job's cycles."""
    to_zero = spm_to_zero(kernel)
    job_cycles = []
    base = 0
    passed = state.limit.passed
    for job in range(kernel.num_jobs):
        if passed():
            raise SimulationTimeout(f"simulation passed its {state.limit.name} before job {job}")
        env = [None] * kernel.num_slots
        env[0] = job
        state.start_job(job, base, profile.trace_for(job) if profile is not None else None)
        if job and to_zero:
            zero_spm(state, storages, to_zero)
        body(env)
        job_cycles.append(state.job_end - base)
        base = state.job_end
    if passed():  # a long last instruction: finishing late is still a timeout
        raise SimulationTimeout(f"simulation passed its {state.limit.name} in the last job")
    return job_cycles


def _check_spm(kernel, spec: TPUSpec):
    """Spec §2/§3, before job 0: no negative ``alloc_spm`` dimension (``ValueError``, as the handout's
    allocation), then the SPM capacity (``RuntimeError``)."""
    for st in kernel.storages:
        if st.kind == "spm" and any(d < 0 for d in st.shape):
            raise LaunchValueError(f"alloc_spm of {st.name or 'an SPM tile'} with shape {st.shape}: negative "
                                   "dimensions are not allowed")
    need = sum(st.spm_bytes for st in kernel.storages if st.kind == "spm")
    if need > spec.spm_size:
        raise SPMOverflowError(f"the kernel allocates {need} bytes of SPM, more than the SM's {spec.spm_size} "
                               "bytes (float32: 4 bytes per element, bool: 1/8 byte, rounded up per storage)")
