"""Utilities shared by the judge and contestants: ``check_is_allclose`` (spec kdt-semantics.md §5)."""
from .allclose import check_is_allclose

__all__ = ["check_is_allclose"]
