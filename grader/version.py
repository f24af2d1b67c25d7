"""The grader's version: the package version and a hash of the judging code (``kdt/`` and ``judger/``).

``GET /api/v1/contest`` reports it and ``kdt-grade version`` prints it, so a contestant can tell that the
judge runs the same simulator and scoring as their own ``kdt-grade local``. The hash is the SHA-256 over
every file of the two packages (except byte code), each as its path relative to the repository, a NUL,
its length, a NUL and its bytes, in path order. Computed once per process; reads files only (no torch).
"""
from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HASHED = ("kdt", "judger")


@functools.cache
def code_sha256(packages: tuple[str, ...] = HASHED) -> str:
    """The hex SHA-256 of the judging code (see the module docstring); of other folders of the repository
    with ``packages`` (paths relative to it, e.g. ``("grader/judging",)``)."""
    digest = hashlib.sha256()
    files = sorted(p for package in packages for p in (ROOT / package).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.relative_to(ROOT).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def grader_version() -> dict[str, str]:
    """``{"version": package version, "code_sha256": code_sha256()}``."""
    try:
        version = metadata.version("kdt-grade")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"version": version, "code_sha256": code_sha256()}
