"""A test point's data, computed once (spec judging.md "One test point").

The three trials of a test point draw their inputs from the global torch RNG seeded at the start of the
point, so the inputs and the references computed from them are the same for every submission. They are
computed once per process and kept, and stored on disk so that a fresh worker process starts warm:

- ``point_data(task, point)`` returns a ``PointData``: per trial the master ``io_tensors`` (inputs and the
  initial output buffer), the reference output and the torch RNG state right after the trial's draw.
  Masters are never handed out: ``Trial.fresh_io()`` gives copies (a kernel writes its outputs, and may
  write its inputs, in place).
- **Memory.** A per-process LRU of ``PointData`` bounded by ``KDT_GRADE_CACHE_MEMORY_MB`` (default 512 MiB;
  0 keeps nothing). It holds tensors only: for every cached point, three trials' io tensors and references
  (the whole contest is about 450 MiB; the largest point, task 2/3 point 1, about 120 MiB). The least
  recently used points are dropped first; a point larger than the bound is served but not kept.
- **Disk.** One entry per point in ``KDT_GRADE_CACHE_DIR`` (default the user's cache directory,
  ``platformdirs.user_cache_dir("kdt-grade")/testpoints``; ``off`` disables it), created private (0700):
  a directory of ``.npy`` files (numpy's format, no pickle), one per array, and their checksums. A
  process maps them copy-on-write instead of reading them (``numpy.load(mmap_mode="c")``): loading a
  point costs no copy, its pages come from the page cache and are shared by every worker process of the
  machine; one pass at memory speed checks each array against its checksum (``_checksum``). The
  entry's name carries ``data_key(task, point)``: a hash of the task definition (the source of
  ``judger/tasks.py``), the point, the trial count, the torch version and the CPU capability torch
  dispatches to (the references are float32 matmuls whose rounding may depend on it), and the format;
  writing an entry removes the point's entries of other versions. Entries are written atomically (a
  temporary directory, then rename); a missing, unreadable or malformed entry is recomputed and
  rewritten, a write that fails (read-only or full disk) only costs the next process the generation. Trust: the directory must be writable only by the judge
  (the sandboxed compile child never reads it). The judge never rewrites an entry in place (a rewrite
  renames a new directory over it); nobody else may either while workers run: a mapped page shows a
  write to its file, and a file truncated under a mapping ends the process (SIGBUS).

Generation is exactly the contest's: ``seed_rngs()``, then per trial the task's generator on the global
torch RNG and the reference of those inputs, with torch limited to one thread (``limit_threads``), so the
numbers are bit-identical to computing them inside the trial loop (tested, as are the RNG states).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import shutil
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy
import numpy.random  # here, with the judge: not on the first seed_rngs() of every forked worker process
import torch

from . import tasks as _tasks_module
from .cache_dir import DIR_ENV, cache_dir  # noqa: F401 - DIR_ENV: part of this module's API
from .tasks import TRIALS, Task, TestPoint

log = logging.getLogger(__name__)

FORMAT = 3  # bump when the file layout changes (3: a directory of .npy files, mapped, and their checksums)
DEFAULT_MEMORY_MB = 512
MEMORY_ENV = "KDT_GRADE_CACHE_MEMORY_MB"


# ---- the RNG and the threads -----------------------------------------------------------------------

def seed_rngs() -> None:
    """The start of every test point: ``random.seed(0); numpy.random.seed(0); torch.manual_seed(0)``.

    torch's CPU generator is seeded directly: ``torch.manual_seed`` also queues the seed for the CUDA,
    XPU and MTIA generators, formatting the whole Python stack each time (and reading the source of every
    file on it the first time), which the judge, on the CPU only, never uses. The CPU state is the same
    (tested)."""
    random.seed(0)
    numpy.random.seed(0)
    torch.default_generator.manual_seed(0)


def limit_threads() -> None:
    """Run torch's CPU kernels (the references, the comparison) on one thread, process-wide.

    One thread makes the reference bit-for-bit the same on every machine (a parallel reduction's order
    depends on the thread count) and avoids threads spinning against other workers on a busy machine.
    The simulator limits numpy's BLAS itself during a launch.
    """
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


# ---- one point's data --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Trial:
    """One trial's data. ``io`` and ``reference`` are the cached masters: read them, never write them;
    ``rng_state`` is ``torch.get_rng_state()`` right after this trial's inputs were drawn."""

    io: dict
    reference: torch.Tensor
    rng_state: torch.Tensor

    def fresh_io(self) -> dict:
        """Copies of the io tensors (same names, order, shapes, dtypes and bits) for one launch."""
        return {name: t.clone() for name, t in self.io.items()}

    @property
    def nbytes(self) -> int:
        return sum(_nbytes(t) for t in (*self.io.values(), self.reference, self.rng_state))


@dataclass(frozen=True)
class PointData:
    """The ``TRIALS`` trials of one test point, in order, and the cache key they were made under."""

    key: str
    trials: tuple

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.trials)


def generate(task: Task, point: TestPoint, trials: int = TRIALS) -> PointData:
    """Compute a point's data from scratch: ``seed_rngs()``, then per trial the inputs and the reference.
    Leaves the global RNGs as drawing the trials left them."""
    limit_threads()
    seed_rngs()
    out = []
    for _ in range(trials):
        io = task.make_inputs(point)
        state = torch.get_rng_state()
        out.append(Trial(io, task.expected(io), state))
    return PointData(data_key(task, point, trials), tuple(out))


def cacheable(task: Task, point: TestPoint) -> bool:
    """Only the contest's own task objects (``judger.tasks.TASKS``) and their points are cached: their
    definition is the source of ``judger/tasks.py``, which the key hashes. Any other ``Task`` (a variant
    made with ``dataclasses.replace``, a test's) is generated afresh every time."""
    return _tasks_module.TASKS.get(task.id) is task and 0 <= point.index < len(task.points) \
        and task.points[point.index] == point


def first_trial_io(task: Task, point: TestPoint) -> dict:
    """Trial 1's ``io_tensors`` with the RNGs as drawing them leaves them (what ``compile_point`` hands a
    kernel's ``compile``): fresh copies from this process's memory cache, else drawn now. Never reads
    the disk (the sandboxed compile child calls this)."""
    data = _memory.get(data_key(task, point)) if cacheable(task, point) else None
    if data is None:
        seed_rngs()
        return task.make_inputs(point)
    seed_rngs()
    first = data.trials[0]
    torch.set_rng_state(first.rng_state)
    return first.fresh_io()


def point_data(task: Task, point: TestPoint) -> PointData:
    """The point's data from this process's memory, else from the disk cache, else generated (then kept
    in both; only for ``cacheable`` tasks, others are generated every time). Raises what generation
    raises (``MemoryError`` under the grading memory limit)."""
    if not cacheable(task, point):
        return generate(task, point)
    key = data_key(task, point)
    data = _memory.get(key)
    if data is not None:
        return data
    with _generation_lock:
        data = _memory.get(key)
        if data is None:
            directory = cache_dir()
            data = _load(directory, task, point, key) if directory is not None else None
            if data is None:
                data = generate(task, point)
                if directory is not None:
                    _store(directory, task, point, data)
            _memory.put(key, data)
    return data


# ---- keys ----------------------------------------------------------------------------------------------

_TASKS_SOURCE_HASH: list = []


def data_key(task: Task, point: TestPoint, trials: int = TRIALS) -> str:
    """Hex sha256 naming a point's data: the task definition (``judger/tasks.py``'s source), task id,
    point index and arguments, trial count, torch version and CPU capability, and the file format."""
    if not _TASKS_SOURCE_HASH:
        _TASKS_SOURCE_HASH.append(hashlib.sha256(Path(_tasks_module.__file__).read_bytes()).hexdigest())
    parts = (f"format={FORMAT}", f"tasks={_TASKS_SOURCE_HASH[0]}", f"task={task.id}", f"point={point.index}",
             f"args={sorted(point.task_args.items())}", f"trials={trials}", f"torch={torch.__version__}",
             f"cpu={_cpu_capability()}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _cpu_capability() -> str:
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # an older torch without it: the version alone
        return "unknown"


# ---- memory --------------------------------------------------------------------------------------------

class _MemoryCache:
    """LRU of ``PointData`` by key, bounded by the bytes of the tensors it holds (thread-safe)."""

    def __init__(self):
        self._items: OrderedDict = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @staticmethod
    def limit() -> int:
        raw = os.environ.get(MEMORY_ENV, "")
        try:
            mb = float(raw) if raw.strip() else DEFAULT_MEMORY_MB
        except ValueError:
            log.warning("%s=%r is not a number of MiB; using %s", MEMORY_ENV, raw, DEFAULT_MEMORY_MB)
            mb = DEFAULT_MEMORY_MB
        return max(0, int(mb * 2**20))

    def get(self, key: str):
        with self._lock:
            data = self._items.get(key)
            if data is not None:
                self._items.move_to_end(key)
            return data

    def put(self, key: str, data: PointData) -> None:
        limit = self.limit()
        size = data.nbytes
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key).nbytes
            if size > limit:
                return
            while self._items and self._bytes + size > limit:
                self._bytes -= self._items.popitem(last=False)[1].nbytes
            self._items[key] = data
            self._bytes += size

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def stats(self) -> dict:
        with self._lock:
            return {"points": len(self._items), "bytes": self._bytes, "limit": self.limit()}


_memory = _MemoryCache()
_generation_lock = threading.Lock()


def clear_memory() -> None:
    """Forget every point kept in this process (tests, benchmarks)."""
    _memory.clear()


def memory_stats() -> dict:
    """``{"points", "bytes", "limit"}`` of this process's memory cache."""
    return _memory.stats()


# ---- disk ----------------------------------------------------------------------------------------------

def cache_file(directory: Path, task: Task, point: TestPoint, key: str) -> Path:
    """The point's entry in the disk cache: a directory of ``.npy`` files (``key.npy`` and per trial ``k``
    ``t{k}_io_{name}.npy``, ``t{k}_ref.npy``, ``t{k}_rng.npy``)."""
    return directory / f"task{task.id}_point{point.index}_{key[:32]}"


def _load(directory: Path, task: Task, point: TestPoint, key: str) -> PointData | None:
    """The point's data mapped from its cache entry (copy-on-write: nothing is read until it is used, and
    a write, which the judge never makes to a master, stays in this process), or None when there is no
    entry. A malformed entry is logged and None is returned (it is recomputed and rewritten)."""
    path = cache_file(directory, task, point, key)
    try:
        if not path.exists():  # (may raise: a directory the judge cannot enter is recomputed, with a warning)
            return None
        return _from_arrays(_MappedArrays(path), task, key)
    except Exception as exc:  # noqa: BLE001 - any unreadable entry is recomputed, never trusted
        log.warning("test point data cache %s is unreadable (%s: %s); recomputing it", path,
                    type(exc).__name__, exc)
        return None


class _MappedArrays:
    """``arrays[name]``: ``name.npy`` of an entry, memory-mapped copy-on-write (numpy's own format; never
    a pickle), checked against the entry's ``checksums.json`` (``_checksum``). A missing file raises
    ``FileNotFoundError``; a truncated one, or one whose contents differ from what was written (damage
    that keeps the size), ``ValueError``."""

    def __init__(self, path: Path):
        self._path = path
        with open(path / CHECKSUMS, encoding="utf-8") as f:
            self._sums = json.load(f)
        if not isinstance(self._sums, dict):
            raise ValueError(f"{CHECKSUMS} is not a JSON object")

    def __getitem__(self, name: str) -> numpy.ndarray:
        array = numpy.load(self._path / f"{name}.npy", mmap_mode="c", allow_pickle=False)
        if name not in self._sums:
            raise ValueError(f"{name}.npy has no checksum")
        if _checksum(array) != self._sums[name]:
            raise ValueError(f"{name}.npy differs from what was written (its checksum)")
        return array if array.shape else numpy.asarray(array)  # a 0-d map (the key) as a plain array

    def get(self, name: str, default):
        try:
            return self[name]
        except FileNotFoundError:
            return default


CHECKSUMS = "checksums.json"


def _checksum(array: numpy.ndarray) -> int:
    """The sum of the array's bytes as 64-bit words (the last partial word byte by byte) plus their
    count, modulo 2**64: one pass at memory speed (12 GB/s here; a CRC would be 2 GB/s, as long as judging
    the point). It catches damage to a file of the cache (a disk, a stray write), which the directory's
    permissions already keep everyone but the judge from making on purpose."""
    raw = numpy.ascontiguousarray(array).reshape(-1).view(numpy.uint8)
    whole = raw.size // 8 * 8
    total = int(raw[:whole].view(numpy.uint64).sum(dtype=numpy.uint64)) + int(raw[whole:].sum(dtype=numpy.uint64))
    return (total + raw.size) % 2**64


def _from_arrays(arrays, task: Task, key: str) -> PointData:
    if str(arrays.get("key", numpy.array("")).item()) != key:
        raise ValueError("the entry's key differs from its name")
    trials = []
    for k in range(TRIALS):
        io = {}
        for name in task.inputs:
            a = arrays[f"t{k}_io_{name}"]
            if a.dtype != numpy.float32:
                raise ValueError(f"{name} is {a.dtype}, not float32")
            io[name] = torch.from_numpy(a)
        ref = torch.from_numpy(arrays[f"t{k}_ref"])
        if ref.dtype != io[task.output].dtype or ref.shape != io[task.output].shape:
            raise ValueError("the reference does not match the output's shape and dtype")
        state = arrays[f"t{k}_rng"]
        if state.dtype != numpy.uint8:
            raise ValueError("malformed RNG state")
        trials.append(Trial(io, ref, torch.from_numpy(state)))
    return PointData(key, tuple(trials))


def _store(directory: Path, task: Task, point: TestPoint, data: PointData) -> None:
    """Write the point's entry atomically: the files go into a private temporary directory, which is then
    renamed to the entry's name (another process that wrote the same entry first wins; both are equal)."""
    arrays = {"key": numpy.array(data.key)}
    for k, trial in enumerate(data.trials):
        for name, t in trial.io.items():
            arrays[f"t{k}_io_{name}"] = t.contiguous().numpy()
        arrays[f"t{k}_ref"] = trial.reference.contiguous().numpy()
        arrays[f"t{k}_rng"] = trial.rng_state.numpy()
    path = cache_file(directory, task, point, data.key)
    tmp = None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=path.name + ".", suffix=".tmp", dir=directory))
        for name, array in arrays.items():
            numpy.save(tmp / f"{name}.npy", array, allow_pickle=False)
        (tmp / CHECKSUMS).write_text(json.dumps({name: _checksum(a) for name, a in arrays.items()}),
                                     encoding="utf-8")
        try:
            os.rename(tmp, path)
        except OSError:  # an entry is there: a damaged one being replaced, or one another process just wrote
            stale = Path(tempfile.mkdtemp(prefix=path.name + ".", suffix=".old", dir=directory))
            try:
                os.rename(path, stale / "entry")  # out of the way in one step: a reader sees the old or the new
                os.rename(tmp, path)  # (fails when another process renamed its entry in meanwhile: it stays)
            finally:
                shutil.rmtree(stale, ignore_errors=True)  # its files stay readable where they are still mapped
        tmp = None
        _remove_other_entries(directory, task, point, path.name)
    except OSError as exc:
        log.warning("cannot write the test point data cache %s (%s); it is recomputed next time", path, exc)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _remove_other_entries(directory: Path, task: Task, point: TestPoint, keep: str) -> None:
    """Remove the point's entries under other keys (another ``judger/tasks.py``, torch or format: about
    450 MiB for the whole contest each time) and its format-1 ``.npz`` files, so the cache holds one
    version. A process still mapping a removed entry keeps reading it (its files live on until unmapped);
    a judge of the other version that starts later only computes its own again."""
    prefix = f"task{task.id}_point{point.index}_"
    for other in directory.glob(prefix + "*"):
        rest = other.name[len(prefix):]
        if other.name == keep:
            continue
        if other.is_dir() and len(rest) == 32 and all(c in "0123456789abcdef" for c in rest):
            shutil.rmtree(other, ignore_errors=True)
        elif other.suffix == ".npz":
            other.unlink(missing_ok=True)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()
