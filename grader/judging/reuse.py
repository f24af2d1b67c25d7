"""What makes a test point's result reusable: its key (issue "grade only what changed").

A point's result depends only on its compiled kernel (the IR), the point's fixed inputs (its task and
index: seeds and sizes are the judger's) and the judge's version, so ``result_key`` hashes exactly those:
the SHA-256 of the judge version, the task, the point and the *canonical* serialisation of the IR, the
whole of it (every statement, constant, name and line: names and lines appear in messages and traces).
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


@functools.cache
def judge_version() -> str:
    """The hex SHA-256 naming this judge (see the module docstring); computed once per process."""
    parts = {"format": FORMAT, "code": code_sha256(), "torch": _version("torch"), "numpy": _version("numpy"),
             "python": platform.python_version()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def canonical_ir(kernel) -> str:
    """The canonical text of a ``kdt.CompiledKernel``'s IR: its ``to_dict()`` as JSON with sorted keys
    and no whitespace (floats in their shortest round-trip form; ``NaN``/``Infinity`` as JSON5 names)."""
    return json.dumps(kernel.to_dict(), sort_keys=True, separators=(",", ":"), allow_nan=True)


def result_key(task: int, point: int, kernel) -> str:
    """The reuse key (64 hex digits) of test point ``task.point`` judged on ``kernel`` (a
    ``kdt.CompiledKernel`` loaded by the strict loader) by this judge."""
    digest = hashlib.sha256(f"{judge_version()}\0{task}\0{point}\0".encode())
    digest.update(canonical_ir(kernel).encode())
    return digest.hexdigest()


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "none"
