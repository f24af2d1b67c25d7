"""The content-addressed store of accepted submission files.

Each file lives at ``<data dir>/submissions/<sha[:2]>/<sha>.py``, named by the SHA-256 of its bytes.
Writes are atomic (a temporary file in the same directory, fsync, ``os.replace``, fsync of the directory),
so a reader never sees a partial file, and idempotent: storing the same bytes twice keeps one file.
The database keeps the text as well (``Submission.source``), so workers on other machines need no shared
filesystem; this store is the organisers' archive of exactly what was accepted.

Public API: ``store(data_dir, data) -> (sha256, path)``, ``stage(data_dir, data) -> Staged`` (the same in
two steps: write, then ``place()``), ``load(data_dir, sha256) -> bytes``, ``path_for(data_dir, sha256)``,
``sha256_of(data)``, ``CorruptFile``.
"""
import hashlib
import os
import re
import tempfile
from pathlib import Path

_SHA256 = re.compile(r"[0-9a-f]{64}")


class CorruptFile(OSError):
    """A stored file whose bytes no longer hash to its name."""


def sha256_of(data: bytes) -> str:
    """The lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def path_for(data_dir: str | os.PathLike, sha256: str) -> Path:
    """Where the file with this hash is stored. Raises ``ValueError`` unless ``sha256`` is 64 hex digits."""
    if not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a lowercase hex SHA-256: {sha256!r}")
    return Path(data_dir) / "submissions" / sha256[:2] / f"{sha256}.py"


def private_dir(path: Path) -> None:
    """Create the data directory readable by its owner only: sandboxed children run as other users and
    must never read stored submissions or the SQLite database."""
    path.mkdir(parents=True, exist_ok=True)
    if path.stat().st_uid == os.geteuid():
        os.chmod(path, 0o700)


def store(data_dir: str | os.PathLike, data: bytes) -> tuple[str, Path]:
    """Store ``data`` under its hash; return ``(sha256, path)``. Idempotent for the same content."""
    staged = stage(data_dir, data)
    try:
        staged.place()
    finally:
        staged.discard()
    return staged.sha256, staged.path


class Staged:
    """``data`` written and fsynced under a temporary name in the directory of its place (``stage``), so
    that publishing it (``place``) is a rename and a directory fsync: the intake writes before its
    transaction and places after the commit. ``sha256``, ``path``: where it goes."""

    def __init__(self, sha256: str, path: Path, tmp: Path | None):
        self.sha256, self.path, self.tmp = sha256, path, tmp

    def place(self) -> None:
        """Publish the file at ``path`` (atomically), unless an intact copy is there already (the staged
        one is then dropped). Raises ``OSError``."""
        if self.tmp is None or (self.path.is_file() and _intact(self.path, self.sha256)):
            self.discard()
            return
        os.replace(self.tmp, self.path)
        self.tmp = None
        _fsync_dir(self.path.parent)

    def discard(self) -> None:
        """Remove the temporary file if it was not placed (always safe to call)."""
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
            self.tmp = None


def stage(data_dir: str | os.PathLike, data: bytes) -> Staged:
    """Write ``data`` (fsynced) beside its place, unless an intact copy is stored already; see ``Staged``.
    Raises ``OSError`` (disk full, permissions)."""
    sha = sha256_of(data)
    path = path_for(data_dir, sha)
    if path.is_file() and _intact(path, sha):
        return Staged(sha, path, None)
    private_dir(Path(data_dir))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{sha[:12]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Staged(sha, path, Path(tmp))


def load(data_dir: str | os.PathLike, sha256: str) -> bytes:
    """The stored bytes of ``sha256``. Raises ``FileNotFoundError``, or ``CorruptFile`` if the bytes on
    disk do not hash to ``sha256``."""
    path = path_for(data_dir, sha256)
    data = path.read_bytes()
    if sha256_of(data) != sha256:
        raise CorruptFile(f"{path} does not hash to its name (the file was changed on disk)")
    return data


def _intact(path: Path, sha: str) -> bool:
    try:
        return sha256_of(path.read_bytes()) == sha
    except OSError:
        return False


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
