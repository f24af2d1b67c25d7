"""The one decision on attribute reads (:func:`read_finding`) and the facts about imported dotted paths
it rests on: the canonical path after re-exports, denied routes below a path, whether a path names a
module.

Every syntax that reads or names an attribute (``x.attr``, import segments, class-pattern keywords,
strings that spell attribute names) comes here, so a refused name is refused the same way everywhere.
"""
from __future__ import annotations

import functools
import importlib
import types
from collections.abc import Iterable

from ..audit_policy import (ALLOWED_MODULES, DENIED_ATTRIBUTES, DENIED_ROUTES, INTROSPECTION_ATTRIBUTES,
                            REEXPORTED_PACKAGES, STDLIB_MODULES, STDLIB_SUBMODULES)


def canonical_path(path: str) -> str:
    """Follow re-exports: restart the path at its last segment naming an allowed package
    (``a.b.np.load`` is ``numpy.load``), so that the policy's dotted paths match however they are reached."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in REEXPORTED_PACKAGES:
            return ".".join([REEXPORTED_PACKAGES[parts[i]], *parts[i + 1:]])
    return path


def is_dunder(name: str) -> bool:
    """``__name__``-shaped (more than the four underscores): the interpreter's own names, refused to read."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


@functools.cache
def _public_names(module_name: str) -> frozenset[str]:
    """A trusted standard-library module's public API: ``__all__`` or its public non-module names."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module)
                 if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)]
    return frozenset(names) | STDLIB_SUBMODULES.get(module_name, frozenset())


def read_finding(name: str, receivers: Iterable[str] = (), *, super_init: bool = False
                 ) -> tuple[str, str] | None:
    """The one decision whether reading the attribute ``name`` is allowed, for every syntax that reads or
    names one (see ``grader.judging.audit``'s docstring): ``(rule, detail)`` when it is refused, else None. The detail
    completes a sentence whose subject is the code that reads it.

    ``receivers`` are the dotted paths of the imported values the object read from may be (empty when
    the audit does not know it). Refused on any object: dunder attributes (interpreter internals:
    ``__dict__``, ``__globals__``, ``__subclasses__``; only ``super().__init__``, ``super_init``, is
    allowed), :data:`INTROSPECTION_ATTRIBUTES` (frames and code reach the builtins) and
    :data:`DENIED_ATTRIBUTES`. Refused on an imported value: private names and what
    :func:`_member_finding` refuses.
    """
    if is_dunder(name) and not (super_init and name == "__init__"):
        return "dunder", (f"reads the dunder attribute `{name}`, which reaches interpreter internals "
                          "(only `super().__init__` is allowed)")
    if name in INTROSPECTION_ATTRIBUTES:
        return "introspection", (f"reads `{name}`, interpreter introspection (frames, generators, "
                                 "tracebacks, code objects), which kernels never need")
    if name in DENIED_ATTRIBUTES:
        return "denied-route", f"uses `.{name}`, which {DENIED_ATTRIBUTES[name]}"
    return next(filter(None, (_member_finding(path, name) for path in sorted(receivers))), None)


@functools.lru_cache(maxsize=4096)  # deep chains and nested patterns ask for the same paths again
def _member_finding(path: str, name: str) -> tuple[str, str] | None:
    """``name`` read from the imported value at ``path``: a private name (``torch._C``), a denied route
    (``torch.load``, also through re-exports) or a name outside a standard-library module's public API."""
    if name.startswith("_") and not is_dunder(name):
        return "private-attribute", f"uses `{name}`, a private attribute of an imported module"
    canonical = canonical_path(f"{path}.{name}")
    for route, why in DENIED_ROUTES.items():
        if canonical == route or canonical.startswith(route + "."):
            return "denied-route", f"reaches `{route}`, which {why}"
    return _stdlib_finding(canonical)


@functools.lru_cache(maxsize=4096)
def path_finding(path: str) -> tuple[str, str] | None:
    """The first refused read along an imported dotted path (``torch.utils.cpp_extension`` reads
    ``utils`` from ``torch``, then ``cpp_extension`` from ``torch.utils``), else None."""
    parts = path.split(".")
    return next(filter(None, (read_finding(parts[i], [".".join(parts[:i])]) for i in range(1, len(parts)))),
                None)


def _stdlib_finding(canonical: str) -> tuple[str, str] | None:
    """A name outside the public API of an allowed standard-library module (``enum.bltns``)."""
    for module in STDLIB_MODULES:
        if canonical.startswith(module + "."):
            name = canonical[len(module) + 1:].split(".")[0]
            if name not in _public_names(module):
                return "denied-route", f"uses `{name}`, which is not in the public API of `{module}`"
            return None
    return None


@functools.lru_cache(maxsize=4096)
def names_module(path: str) -> bool:
    """Whether the imported dotted ``path`` (re-exports followed: ``canonical_path``) is a module object: looked
    up attribute by attribute from its top-level package, one of :data:`ALLOWED_MODULES` (the judge's
    own packages, imported here if need be; nothing of the submission runs). A name that is missing,
    private or whose lookup raises is not taken for a module (its read is judged by the other rules)."""
    parts = canonical_path(path).split(".")
    if parts[0] not in ALLOWED_MODULES or any(part.startswith("_") for part in parts[1:]):
        return False
    try:
        value = importlib.import_module(parts[0])
        for part in parts[1:]:
            value = getattr(value, part)
    except Exception:  # a name the package does not have (or whose lookup fails) is no module
        return False
    return isinstance(value, types.ModuleType)


def guards_route(path: str) -> bool:
    """True when a denied route lies below ``path`` (``torch``, ``torch.utils``, ``typing``)."""
    prefix = canonical_path(path) + "."
    return any(route.startswith(prefix) for route in DENIED_ROUTES)
