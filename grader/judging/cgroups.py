"""One control group per sandboxed run: limits for the run as a whole, its usage, and its end.

Two kinds of host are supported, detected from ``/proc/self/mountinfo`` and ``/proc/self/cgroup``:

- **cgroup v1** (this project's CI machines): one hierarchy per controller (``memory``, ``pids``,
  ``freezer``, ``cpu``, ``cpuacct``, possibly co-mounted as ``cpu,cpuacct``). A run's group is
  ``<our own group in that hierarchy>/kdt-grade-sandbox/run-<judge pid>-<id>`` in each of them;
- **cgroup v2** (a pure unified hierarchy, as Docker hosts give): the same path once, with the ``memory``,
  ``pids`` and ``cpu`` controllers enabled for ``kdt-grade-sandbox``'s children (when our own group holds
  processes, which forbids enabling controllers below it, they are first moved to a leaf
  ``kdt-grade-judge``: the usual step of a container's entry point).

v1 is used when its hierarchies have both ``memory`` and ``pids`` (a hybrid host's v2 hierarchy without
controllers is ignored), else v2 when its root offers both, else there is no cgroup containment.

Interface: ``layout()`` says what this host offers (cached); ``RunGroup.create(layout, limits...)`` makes a
run's group with its limits set, ``join_files`` are the files the child writes ``0`` to (from its
preexec, before it execs) to enter it; ``cpu_seconds()``, ``memory_peak()``, ``oom_kills()`` and
``pids_refused()`` read what the run did; ``kill()`` kills every process in it and waits until none is
left; ``remove()`` kills and deletes the group. Every error of the cgroup file system is a
``CgroupError`` (a fault of the judge's host, never of a submission).
"""
from __future__ import annotations

import errno
import logging
import os
import signal
import time
import uuid
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

PARENT = "kdt-grade-sandbox"
JUDGE_LEAF = "kdt-grade-judge"
REQUIRED = ("memory", "pids")
WANTED_V1 = ("memory", "pids", "freezer", "cpu", "cpuacct")
WANTED_V2 = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


class CgroupError(RuntimeError):
    """The cgroup file system refused something the sandbox needs (the judge's host, not the submission)."""


@dataclass(frozen=True)
class Layout:
    """What this host offers. ``version``: ``"v1"``, ``"v2"`` or None (no usable cgroups); ``bases``:
    controller (``"unified"`` for v2) -> the directory of *our own* group, below which runs are made;
    ``controllers``: the usable controllers; ``problem``: why there is no containment, when ``version`` is None."""

    version: str | None
    bases: dict = field(default_factory=dict)
    controllers: tuple = ()
    problem: str = ""

    @property
    def usable(self) -> bool:
        return self.version is not None


def _unescape(path: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    out, i = [], 0
    while i < len(path):
        if path[i] == "\\" and len(path[i + 1:i + 4]) == 3 and path[i + 1:i + 4].isdigit():
            out.append(chr(int(path[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(path[i])
            i += 1
    return "".join(out)


def _mounts():
    """``(mount point, root within the hierarchy, fstype, super options)`` of every cgroup mount."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if rfields and rfields[0] in ("cgroup", "cgroup2"):
                yield _unescape(fields[4]), _unescape(fields[3]), rfields[0], rfields[2] if len(rfields) > 2 else ""


def _own_paths() -> dict:
    """``/proc/self/cgroup``: controller (``""`` for v2) -> our path in that hierarchy."""
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in (names.split(",") if names else [""]):
                out[name.removeprefix("name=")] = path
    return out


def _below(mountpoint: str, root: str, path: str) -> str | None:
    """The directory of ``path`` (a group's path in its hierarchy) under a mount of that hierarchy's ``root``."""
    if root != "/" and not (path == root or path.startswith(root.rstrip("/") + "/")):
        return None
    rel = path[len(root):] if root != "/" else path
    return os.path.join(mountpoint, rel.lstrip("/"))


def detect() -> Layout:
    """Find the cgroup hierarchies and our place in them (see the module docstring). Never raises."""
    try:
        own = _own_paths()
        mounts = list(_mounts())
    except OSError as exc:
        return Layout(None, problem=f"cannot read /proc/self/cgroup or mountinfo: {exc}")
    v1 = {}
    for mountpoint, root, fstype, options in mounts:
        if fstype != "cgroup":
            continue
        for name in options.split(","):
            if name in WANTED_V1 and name not in v1 and name in own:
                base = _below(mountpoint, root, own[name])
                if base and os.path.isdir(base) and os.access(base, os.W_OK):
                    v1[name] = base
    if all(name in v1 for name in REQUIRED):
        return Layout("v1", v1, tuple(n for n in WANTED_V1 if n in v1))
    for mountpoint, root, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in own:
            base = _below(mountpoint, root, own[""])
            if not base or not os.path.isdir(base):
                continue
            offered = _read(os.path.join(base, "cgroup.controllers")).split()
            if all(n in offered for n in REQUIRED) and os.access(base, os.W_OK):
                return Layout("v2", {"unified": base}, tuple(n for n in WANTED_V2 if n in offered))
    missing = [n for n in REQUIRED if n not in v1]
    return Layout(None, problem=f"no writable cgroup hierarchy with the {' and '.join(REQUIRED)} controllers "
                                f"(v1 lacks {', '.join(missing)}; no cgroup2 group offering them)")


_LAYOUT: dict = {}


def layout() -> Layout:
    """``detect()``, once per process (and once more after the process forks: pids differ)."""
    key = os.getpid()
    if key not in _LAYOUT:
        _LAYOUT.clear()
        _LAYOUT[key] = detect()
    return _LAYOUT[key]


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _write(path: str, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as exc:
        raise CgroupError(f"cannot write {value!r} to {path}: {exc.strerror}") from None


def _keyed(text: str, key: str) -> int:
    """The number after ``key`` in a ``key value`` file (memory.events, pids.events, oom_control)."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


def _prepare_v2_parent(base: str) -> str:
    """``base/PARENT`` with ``memory``, ``pids`` (and ``cpu``) enabled for its children; returns it."""
    parent = os.path.join(base, PARENT)
    want = [n for n in WANTED_V2 if n in _read(os.path.join(base, "cgroup.controllers")).split()]
    enabled = _read(os.path.join(base, "cgroup.subtree_control")).split()
    if not all(n in enabled for n in want):
        try:
            _write(os.path.join(base, "cgroup.subtree_control"), " ".join(f"+{n}" for n in want))
        except CgroupError:  # processes in our own group: move them to a leaf, then enable
            leaf = os.path.join(base, JUDGE_LEAF)
            os.makedirs(leaf, exist_ok=True)
            for pid in _read(os.path.join(base, "cgroup.procs")).split():
                try:
                    _write(os.path.join(leaf, "cgroup.procs"), pid)
                except CgroupError:
                    pass  # gone meanwhile
            log.warning("cgroup v2: moved the processes of %s into %s to delegate controllers to sandbox runs",
                        base, leaf)
            _write(os.path.join(base, "cgroup.subtree_control"), " ".join(f"+{n}" for n in want))
    os.makedirs(parent, exist_ok=True)
    enabled = _read(os.path.join(parent, "cgroup.subtree_control")).split()
    if not all(n in enabled for n in want):
        _write(os.path.join(parent, "cgroup.subtree_control"), " ".join(f"+{n}" for n in want))
    return parent


def _parents(lay: Layout) -> dict:
    """controller -> the ``PARENT`` directory runs are made in (created when missing)."""
    if lay.version == "v2":
        return {"unified": _prepare_v2_parent(lay.bases["unified"])}
    out = {}
    for name, base in lay.bases.items():
        path = os.path.join(base, PARENT)
        os.makedirs(path, exist_ok=True)
        out[name] = path
    return out


_REPORTED: set = set()
STALE_AFTER_SECONDS = 60


def sweep_stale(lay: Layout) -> int:
    """Delete empty run groups older than a minute whose judge process is gone (a judge SIGKILLed mid-run:
    its run's processes died with it, by the parent-death signal and the PID namespace). A group that
    still holds processes is left alone and logged once (it may belong to a judge in another PID
    namespace); a young one too (its judge may not be visible from here). Returns how many went."""
    removed, now = 0, time.time()
    for parent in _parents(lay).values():
        for name in os.listdir(parent):
            parts = name.split("-")
            if len(parts) != 3 or parts[0] != "run" or not parts[1].isdigit() or _alive(int(parts[1])):
                continue
            path = os.path.join(parent, name)
            try:
                if os.stat(path).st_mtime > now - STALE_AFTER_SECONDS:
                    continue
                os.rmdir(path)
                removed += 1
            except OSError as exc:
                if exc.errno != errno.ENOENT and path not in _REPORTED:
                    _REPORTED.add(path)
                    log.warning("a sandbox cgroup of a judge that is gone is not empty: %s (%s)", path, exc.strerror)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunGroup:
    """The control group(s) of one sandboxed run: ``dirs`` maps a controller (``"unified"`` for v2) to
    the run's directory in that hierarchy."""

    def __init__(self, lay: Layout, dirs: dict):
        self.layout, self.dirs = lay, dirs

    @classmethod
    def create(cls, lay: Layout, memory_bytes: int, pids: int, cpus: float | None) -> "RunGroup":
        """Make a run's group with these limits for the whole run: ``memory_bytes`` (resident memory,
        page cache and tmpfs pages included; no swap), ``pids`` (processes and threads), ``cpus`` (CPU
        bandwidth, in CPUs; None: none). Raises ``CgroupError``."""
        if not lay.usable:
            raise CgroupError(lay.problem)
        name = f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            dirs = {k: os.path.join(p, name) for k, p in _parents(lay).items()}
            for path in dirs.values():
                os.mkdir(path, 0o755)
        except OSError as exc:
            raise CgroupError(f"cannot create a sandbox cgroup: {exc}") from None
        group = cls(lay, dirs)
        try:
            group._limit(memory_bytes, pids, cpus)
        except BaseException:
            group.remove(patience=1.0)
            raise
        return group

    def _file(self, controller: str, name: str) -> str:
        return os.path.join(self.dirs["unified" if self.layout.version == "v2" else controller], name)

    def _has(self, controller: str) -> bool:
        return controller in self.layout.controllers

    def _limit(self, memory_bytes: int, pids: int, cpus: float | None) -> None:
        if self.layout.version == "v2":
            _write(self._file("memory", "memory.max"), str(memory_bytes))
            if os.path.exists(self._file("memory", "memory.swap.max")):
                _write(self._file("memory", "memory.swap.max"), "0")
            _write(self._file("memory", "memory.oom.group"), "1")
            _write(self._file("pids", "pids.max"), str(pids))
            if cpus and self._has("cpu"):
                _write(self._file("cpu", "cpu.max"), f"{int(cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
            return
        _write(self._file("memory", "memory.limit_in_bytes"), str(memory_bytes))
        if os.path.exists(self._file("memory", "memory.memsw.limit_in_bytes")):
            _write(self._file("memory", "memory.memsw.limit_in_bytes"), str(memory_bytes))
        _write(self._file("pids", "pids.max"), str(pids))
        if cpus and self._has("cpu"):
            _write(self._file("cpu", "cpu.cfs_period_us"), str(CPU_PERIOD_US))
            _write(self._file("cpu", "cpu.cfs_quota_us"), str(int(cpus * CPU_PERIOD_US)))

    @property
    def join_files(self) -> list:
        """The ``cgroup.procs`` files a process writes ``"0"`` to, to enter this group (all hierarchies)."""
        return [os.path.join(d, "cgroup.procs") for d in self.dirs.values()]

    def join_self(self) -> None:
        """Move the calling process into the group (from a child's preexec function, before exec)."""
        for path in self.join_files:
            with open(path, "w") as f:
                f.write("0")

    def pids(self) -> list:
        """Process ids (in our PID namespace) of every process in the group."""
        key = "unified" if self.layout.version == "v2" else "pids"
        return [int(p) for p in _read(os.path.join(self.dirs[key], "cgroup.procs")).split()]

    def cpu_seconds(self) -> float | None:
        """CPU time used by all processes of the run so far, in seconds; None where not measurable."""
        if self.layout.version == "v2":
            usec = _keyed(_read(self._file("cpu", "cpu.stat")), "usage_usec")
            return usec / 1e6
        if not self._has("cpuacct"):
            return None
        text = _read(self._file("cpuacct", "cpuacct.usage")).strip()
        return int(text) / 1e9 if text else None

    def memory_peak(self) -> int:
        """The highest memory use of the run, in bytes (0 where the kernel does not record it)."""
        if self.layout.version == "v2":
            text = _read(self._file("memory", "memory.peak")).strip()
        else:
            text = _read(self._file("memory", "memory.max_usage_in_bytes")).strip()
        return int(text) if text.isdigit() else 0

    def oom_kills(self) -> int:
        """How many processes of the run the kernel killed for exceeding the memory limit."""
        if self.layout.version == "v2":
            return _keyed(_read(self._file("memory", "memory.events")), "oom_kill")
        return _keyed(_read(self._file("memory", "memory.oom_control")), "oom_kill")

    def pids_refused(self) -> int:
        """How many forks (or new threads) the process limit refused."""
        return _keyed(_read(self._file("pids", "pids.events")), "max")

    def kill(self, patience: float = 5.0) -> None:
        """SIGKILL every process in the group and wait (up to ``patience`` seconds) until none is left.
        Raises ``CgroupError`` when some remain."""
        deadline = time.monotonic() + patience
        if self.layout.version == "v2" and os.path.exists(self._file("", "cgroup.kill")):
            _write(self._file("", "cgroup.kill"), "1")
        while True:
            left = self.pids()
            if not left:
                return
            if time.monotonic() > deadline:
                raise CgroupError(f"{len(left)} process(es) of a sandbox run survive SIGKILL: {left[:10]}")
            self._freeze(True)
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self._freeze(False)
            time.sleep(0.01)

    def _freeze(self, frozen: bool) -> None:
        """Freeze (no process of the run can fork meanwhile) or thaw the group, where a freezer exists."""
        if self.layout.version == "v2":
            path = self._file("", "cgroup.freeze")
            if os.path.exists(path):
                _write(path, "1" if frozen else "0")
        elif self._has("freezer"):
            _write(self._file("freezer", "freezer.state"), "FROZEN" if frozen else "THAWED")

    def remove(self, patience: float = 5.0) -> None:
        """``kill()``, then delete the group's directories. Raises ``CgroupError`` when it cannot."""
        try:
            self.kill(patience)
        finally:
            self._rmdirs(patience)

    def _rmdirs(self, patience: float) -> None:
        deadline = time.monotonic() + patience
        for path in self.dirs.values():
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        raise CgroupError(f"cannot remove the sandbox cgroup {path}: {exc.strerror}") from None
                    time.sleep(0.01)
