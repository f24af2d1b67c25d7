"""This worker process's settings and its ``grader.service.Service``.

The settings are read once (``KDT_GRADE_*``). Each pool process makes its own ``Service`` on first use,
after the fork: one inherited from the parent would hold the parent's connections (``reset_service``
forgets it at the fork).
"""
from __future__ import annotations

from grader.config import load_settings
from grader.service import Service

settings = load_settings()
_service: Service | None = None


def service() -> Service:
    """This process's ``Service`` (created on first use, after the pool process was forked)."""
    global _service
    if _service is None:
        _service = Service(settings)
    return _service


def reset_service() -> None:
    """Forget a ``Service`` inherited from the parent process (its connections are the parent's)."""
    global _service
    if _service is not None:
        _service.forget_connections()
    _service = None
