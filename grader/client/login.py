"""Where the contestant's client keeps its server and token.

``kdt-grade login`` saves ``{"server", "token"}`` in ``client.json`` in the user's config directory
(platformdirs: ``~/.config/kdt-grade/`` on Linux), file mode 0600 in a 0700 directory;
``KDT_GRADE_SERVER`` and ``KDT_GRADE_TOKEN`` override the file. With no server configured the CLI works
locally. ``kdt-grade logout`` deletes the file (``forget_config``).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

ENV_SERVER, ENV_TOKEN = "KDT_GRADE_SERVER", "KDT_GRADE_TOKEN"


def config_path() -> Path:
    """The client's configuration file (``client.json`` in the user's config directory)."""
    return platformdirs.user_config_path("kdt-grade") / "client.json"


@dataclass(frozen=True)
class ClientConfig:
    """Where the server is (``server``: ``http(s)://host:port``) and the caller's token (or None)."""

    server: str
    token: str | None


def normalise_server(url: str) -> str:
    """``url`` without a trailing slash; ``ValueError`` unless it starts with http:// or https://."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"the server must be an http:// or https:// URL, got {url!r}")
    return url


def load_config() -> ClientConfig | None:
    """The configured server and token (environment over the saved file), or None: no server, work locally.
    Raises ``ValueError`` for an unreadable file or a malformed server URL."""
    saved: dict = {}
    path = config_path()
    if path.exists():
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read {path}: {exc}; run `kdt-grade login` again") from None
    server = os.environ.get(ENV_SERVER) or saved.get("server")
    if not server:
        return None
    return ClientConfig(normalise_server(server), os.environ.get(ENV_TOKEN) or saved.get("token"))


def save_config(config: ClientConfig) -> Path:
    """Write ``config`` to ``config_path()`` readable by its owner only (0600, directory 0700); return the path."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # also if the file existed with a wider mode
        os.write(fd, json.dumps({"server": config.server, "token": config.token}, indent=2).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    return path


def forget_config() -> tuple[Path, str | None] | None:
    """Delete the saved login: ``(path, the server it named, or None if the file was unreadable)``, or None
    when there was no saved login (nothing to do)."""
    path = config_path()
    try:
        saved = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        saved = None
    server = saved.get("server") if isinstance(saved, dict) else None
    path.unlink(missing_ok=True)
    return path, server if isinstance(server, str) else None
