"""What makes a test point's result reusable: its key (issue "grade only what changed").

A point's result depends only on its compiled kernel (the IR), the point's fixed inputs (its task and
index: seeds and sizes are the judger's) and the judge's version, so ``result_key`` hashes exactly those:
the SHA-256 of the judge version, the task, the point, the judging limits (time, memory) and the
*canonical* serialisation of the IR, the whole of it (every statement, constant, name and line: names and lines appear in messages and traces).
Canonical: the IR as the strict loader rebuilt it (``kdt.CompiledKernel``), written with sorted keys and
no whitespace, so the same kernel gives the same key whatever the JSON it came in, the order its dicts
were filled in or the memory addresses of its objects; different IR gives different text, and a SHA-256
over all of it does not collide.

``judge_version`` names the judge: the hash of the judging code (``kdt/``, ``judger/``:
``grader.version.code_sha256``), the torch, numpy and Python versions and this module's ``FORMAT``. A
change of any of them changes every key, so no result of another judge is ever reused.
"""
from __future__ import annotations

import functools
import hashlib
import json
import platform
from importlib import metadata

from grader.version import code_sha256

FORMAT = 1  # of the key; bump to invalidate every stored result


COMPILE_CODE = ("grader/judging",)  # the audit, the sandbox, the compile child: what a compile also depends on


@functools.cache
def judge_version() -> str:
    """The hex SHA-256 naming this judge (see the module docstring); computed once per process."""
    parts = {"format": FORMAT, "code": code_sha256(), "torch": _version("torch"), "numpy": _version("numpy"),
             "python": platform.python_version()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def judging_limits(settings) -> tuple:
    """What of the settings (``grader.config.Settings``) a simulation's result depends on, part of its
    reuse key: the time limit per launch (CPU seconds) and the grading process's memory (MiB)."""
    return (settings.sim_timeout_seconds, settings.grade_memory_mb)


def compile_version(settings) -> str:
    """The hex SHA-256 naming what a compile depends on besides the file: this judge (``judge_version``),
    the untrusted-code path's code (``grader/judging``: the audit and its policy, the sandbox, the compile
    child), the sandbox's limits and the judging limits its compiled points' keys carry (of ``settings``).
    A compiled point is copied to an identical file only under the same compile version: an audit fix or
    another limit compiles again."""
    parts = f"{judge_version()}\0{code_sha256(COMPILE_CODE)}\0{settings.sandbox_limits!r}\0{judging_limits(settings)!r}"
    return hashlib.sha256(parts.encode()).hexdigest()


def canonical_ir(kernel) -> str:
    """The canonical text of a ``kdt.CompiledKernel``'s IR: its ``to_dict()`` as JSON with sorted keys
    and no whitespace (floats in their shortest round-trip form; ``NaN``/``Infinity`` as JSON5 names)."""
    return json.dumps(kernel.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=True)


def result_key(task: int, point: int, kernel, limits: tuple = ()) -> str:
    """The reuse key (64 hex digits) of test point ``task.point`` judged on ``kernel`` (a
    ``kdt.CompiledKernel`` loaded by the strict loader) by this judge under the judging ``limits`` (the
    simulation's time limit and the grading memory: an AC under a laxer limit is not one under a stricter)."""
    digest = hashlib.sha256(f"{judge_version()}\0{task}\0{point}\0{limits!r}\0".encode())
    digest.update(canonical_ir(kernel).encode())
    return digest.hexdigest()


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "none"
